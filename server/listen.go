package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/fsview"
	"github.com/tracecell/tracecell/policy"
)

// listen opens the listener. A Unix socket is 0600 from the moment it
// appears at its path (a stale socket file nobody listens on is removed
// first); TCP must be loopback unless
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
		return socketOutsideRoots(o, address)
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

// socketOutsideRoots refuses a Unix socket inside a writable root shared by
// the sessions (--write), by path or through a mount: a session could hard
// link or rename it to a name of its own, which the never-reachable check
// (by the socket's path) does not know, and drive every other session
// through the API (red team, round 54).
func socketOutsideRoots(o Options, address string) error {
	abs, err := config.Abs(address)
	if err != nil {
		return nil // listening reports it
	}
	dir := filepath.Dir(abs)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	for _, w := range o.Settings.Write {
		a, err := config.Abs(w)
		if err != nil {
			continue
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			a = r
		}
		if policy.Under(dir, a) || fsview.Inside(dir, []string{a}) != "" {
			return fmt.Errorf("--listen unix:%s: inside the writable root %s, which every session may write: a session could link the socket to a name of its own and drive the others; put the socket elsewhere (the default is in the state directory)", address, w)
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
	ln, err := bindPrivate(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--listen unix:%s: %w", path, err)
	}
	var st os.FileInfo
	st, _ = os.Lstat(path)
	cleanup := func() {
		// Remove the socket only if it is still ours (not replaced by another server).
		if now, err := os.Lstat(path); err == nil && st != nil && os.SameFile(now, st) {
			os.Remove(path)
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		ln.Close()
		cleanup()
		return nil, "", nil, fmt.Errorf("--listen unix:%s: %w", path, err)
	}
	return &pathListener{ln, abs}, "unix:" + path, cleanup, nil
}

// pathListener is a Unix listener with the path clients connect to (its
// Addr names the temporary bind path, see bindPrivate).
type pathListener struct {
	net.Listener
	path string
}

// beforeLink runs between the bind and the link into place; tests use it to
// create a file at the path meanwhile.
var beforeLink = func() {}

// bindPrivate listens on a Unix socket that appears at path already 0600.
// bind(2) creates the socket file with the process umask, and a chmod after
// it leaves a window in which another local user could connect (to a socket
// in a world-writable directory such as /tmp, with umask 022). So the socket
// is bound in a fresh 0700 directory beside path, where no one else can
// reach it, made 0600 there and then hard-linked to path: a link never
// replaces a file that appeared at path meanwhile (EEXIST), which rename
// would. Clients connect by path to the same inode; only the listener's own
// Addr still names the temporary path.
func bindPrivate(path string) (net.Listener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".tracecell-bind-")
	if err != nil {
		return nil, fmt.Errorf("make a private directory beside the socket: %w", err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	if len(tmp) > 107 {
		// Longer than a socket path may be: reach the directory through
		// an fd of it instead (/proc/self/fd/N/s).
		d, err := os.Open(dir)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		tmp = fmt.Sprintf("/proc/self/fd/%d/s", d.Fd())
	}
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod 0600: %w", err)
	}
	beforeLink()
	if err := os.Link(tmp, path); err != nil {
		ln.Close()
		if errors.Is(err, os.ErrExist) {
			return nil, errors.New("a file appeared at the path while the socket was being made; remove it or choose another path")
		}
		return nil, fmt.Errorf("link the socket into place: %w", err)
	}
	return ln, nil
}

// serverSocket names the server's listeners in a denial's reason.
const serverSocket = "the session server's own socket: code in a session may never use it (it could drive every other session)"

// listenerEndpoints are the addresses at which ln is reached, for the
// workers' policy (policy.Config.Unreachable): a Unix socket by its path,
// symlinks in its directory expanded as the tracer resolves a connect's
// path; a TCP listener by its bound address and port (an unspecified one,
// every interface, matches every address).
func listenerEndpoints(ln net.Listener) ([]policy.Endpoint, error) {
	switch a := ln.Addr().(type) {
	case *net.TCPAddr:
		e := policy.Endpoint{Port: a.Port, What: serverSocket}
		if !a.IP.IsUnspecified() {
			e.Addr = a.IP.String()
		}
		return []policy.Endpoint{e}, nil
	case *net.UnixAddr:
		// The listener's own Addr is the temporary bind path
		// (bindPrivate); clients reach the socket at the path it was
		// linked to.
		pl, ok := ln.(*pathListener)
		if !ok {
			return nil, fmt.Errorf("listener %s: its socket path is unknown", a.Name)
		}
		path := pl.path
		dir, err := filepath.EvalSymlinks(filepath.Dir(path))
		if err != nil {
			return nil, fmt.Errorf("--listen unix:%s: %w", path, err)
		}
		return []policy.Endpoint{{Unix: filepath.Join(dir, filepath.Base(path)), What: serverSocket}}, nil
	}
	return nil, fmt.Errorf("listener %s: %T is neither TCP nor a Unix socket", ln.Addr(), ln.Addr())
}
