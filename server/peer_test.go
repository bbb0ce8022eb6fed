package server

import (
	"net"
	"os"
	"testing"
)

// TestSocketUID finds the owner of the client end of a loopback TCP
// connection in /proc/net/tcp and tcp6, over IPv4 and IPv6.
func TestSocketUID(t *testing.T) {
	for _, tc := range []struct{ name, addr string }{{"ipv4", "127.0.0.1:0"}, {"ipv6", "[::1]:0"}} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", tc.addr)
			if err != nil {
				t.Skipf("no %s loopback: %v", tc.name, err)
			}
			defer ln.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			got := socketUID(sc.RemoteAddr().(*net.TCPAddr), sc.LocalAddr().(*net.TCPAddr))
			if got != os.Geteuid() {
				t.Fatalf("uid %d, want %d", got, os.Geteuid())
			}
			// Not the listener's or the server end's entry.
			if u := socketUID(sc.LocalAddr().(*net.TCPAddr), &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 1}); u != -1 {
				t.Fatalf("found a socket that does not exist: uid %d", u)
			}
		})
	}
}
