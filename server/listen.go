package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// listen opens the listener. A Unix socket is created 0600 (a stale socket
// file nobody listens on is removed first); TCP must be loopback unless
// AllowRemote, which also needs a token.
func listen(o Options) (ln net.Listener, addr string, cleanup func(), err error) {
	if err := checkListen(o); err != nil {
		return nil, "", nil, err
	}
	network, address := splitListen(o.Listen)
	if network == "unix" {
		return listenUnix(address)
	}
	ln, err = net.Listen("tcp", address)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	return ln, ln.Addr().String(), func() {}, nil
}

// checkListen validates the address without opening anything.
func checkListen(o Options) error {
	network, address := splitListen(o.Listen)
	if network == "unix" {
		if address == "" {
			return errors.New("--listen unix: needs a path, e.g. unix:/run/user/1000/tracecell.sock")
		}
		if len(address) > 107 {
			return fmt.Errorf("--listen unix:%s: path longer than 107 bytes (a Unix socket limit); choose a shorter one", address)
		}
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("--listen %s: want unix:PATH or 127.0.0.1:PORT: %v", o.Listen, err)
	}
	if !isLoopback(host) {
		if !o.AllowRemote {
			return fmt.Errorf("--listen %s: not a loopback address; pass --allow-remote and --token-file to serve other hosts", o.Listen)
		}
		if o.Token == "" {
			return fmt.Errorf("--listen %s: a non-loopback address needs a bearer token (--token-file)", o.Listen)
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listenUnix(path string) (net.Listener, string, func(), error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, "", nil, fmt.Errorf("--listen unix:%s: the file exists and is not a socket; remove it or choose another path", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, "", nil, fmt.Errorf("--listen unix:%s: another server listens there; stop it or choose another path", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, "", nil, fmt.Errorf("--listen unix:%s: remove the stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--listen unix:%s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, "", nil, fmt.Errorf("--listen unix:%s: chmod 0600: %w", path, err)
	}
	var st os.FileInfo
	st, _ = os.Lstat(path)
	cleanup := func() {
		// Remove the socket only if it is still ours (not replaced by another server).
		if now, err := os.Lstat(path); err == nil && st != nil && os.SameFile(now, st) {
			os.Remove(path)
		}
	}
	return ln, "unix:" + path, cleanup, nil
}
