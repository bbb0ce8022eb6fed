package server

import (
	"bufio"
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Loopback is not private: every user of the host can connect to
// 127.0.0.1:PORT, and a server without a token would run their code as the
// user who runs it. On a loopback TCP connection the server therefore
// looks up who owns the client's socket (the uid column of /proc/net/tcp
// and tcp6, the TCP counterpart of SO_PEERCRED) and serves only its own
// uid, unless a token is configured (the token is then the credential) or
// the operator allows other users (Options.AllowOtherUsers).

type peerKey struct{}

// peerCheck is the verdict on one connection, decided on its first request.
type peerCheck struct {
	once sync.Once
	uid  int // -1: not found
	conn net.Conn
}

// ConnContext is for http.Server.ConnContext: it attaches the connection
// so that the peer is looked up once per connection, not per request.
func (s *Server) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &peerCheck{uid: -1, conn: c})
}

// peerUID returns the uid owning the client end of the request's loopback
// TCP connection; ok is false when it cannot be found.
func peerUID(r *http.Request) (uid int, ok bool) {
	pc, _ := r.Context().Value(peerKey{}).(*peerCheck)
	if pc == nil {
		// Served without ConnContext (a test server): look it up now.
		pc = &peerCheck{uid: -1}
		la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		remote, err := net.ResolveTCPAddr("tcp", r.RemoteAddr)
		if la == nil || err != nil {
			return -1, false
		}
		local, _ := la.(*net.TCPAddr)
		if local == nil {
			return -1, false
		}
		pc.uid = socketUID(remote, local)
		return pc.uid, pc.uid >= 0
	}
	pc.once.Do(func() {
		remote, _ := pc.conn.RemoteAddr().(*net.TCPAddr)
		local, _ := pc.conn.LocalAddr().(*net.TCPAddr)
		if remote != nil && local != nil {
			pc.uid = socketUID(remote, local)
		}
	})
	return pc.uid, pc.uid >= 0
}

// socketUID finds the TCP socket whose local end is addr and remote end
// peer in /proc/net/tcp and tcp6, and returns its owner's uid (-1: none).
func socketUID(addr, peer *net.TCPAddr) int {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if uid := scanTCP(f, addr, peer); uid >= 0 {
			return uid
		}
	}
	return -1
}

func scanTCP(file string, addr, peer *net.TCPAddr) int {
	f, err := os.Open(file)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		if !procAddrIs(fields[1], addr) || !procAddrIs(fields[2], peer) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return -1
		}
		return uid
	}
	return -1
}

// procAddrIs compares a /proc/net/tcp address ("0100007F:1F90": the IP as
// 32-bit words in host order, the port in hex) with a.
func procAddrIs(s string, a *net.TCPAddr) bool {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return false
	}
	for i := 0; i+4 <= len(b); i += 4 { // little-endian words (amd64, arm64)
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b).Equal(a.IP)
}
