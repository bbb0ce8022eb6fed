package procfs

import (
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestProcNetIP(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0100007F", "127.0.0.1"},
		{"00000000", "0.0.0.0"},
		{"0100000A", "10.0.0.1"},
		{"00000000000000000000000001000000", "::1"},
		{"00000000000000000000000000000000", "::"},
		{"0000000000000000FFFF00000100007F", "127.0.0.1"}, // ::ffff:127.0.0.1
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			ip, err := NetIP(c.in)
			if err != nil || ip.String() != c.want {
				t.Errorf("NetIP(%q) = %v, %v; want %s", c.in, ip, err, c.want)
			}
		})
	}
	for _, bad := range []string{"", "0100007", "0100007G", "0100007F00"} {
		if _, err := NetIP(bad); err == nil {
			t.Errorf("NetIP(%q): no error", bad)
		}
	}
}

// TestNetRows looks sockets of the test process up by inode in its
// /proc/<pid>/net tables: an AF_UNIX socket (bound or not) in net/unix, a
// bound UDP socket in net/udp with its address; an inode no socket has is
// in neither.
func TestNetRows(t *testing.T) {
	inode := func(fd int) uint64 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	us, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(us)
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	raw, err := udp.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var udpIno uint64
	if err := raw.Control(func(fd uintptr) { udpIno = inode(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	if !UnixSocket(pid, pid, inode(us)) {
		t.Errorf("UnixSocket: the unbound AF_UNIX socket (inode %d) not found", inode(us))
	}
	if UnixSocket(pid, pid, udpIno) {
		t.Errorf("UnixSocket: the UDP socket (inode %d) taken for an AF_UNIX one", udpIno)
	}
	addr, ok, err := BoundAddr(pid, pid, "udp", udpIno)
	if err != nil || !ok || addr != "127.0.0.1" {
		t.Errorf("BoundAddr(udp, %d) = %q, %v, %v; want 127.0.0.1, true, nil", udpIno, addr, ok, err)
	}
	if _, ok, err := BoundAddr(pid, pid, "udp", inode(us)); ok || err != nil {
		t.Errorf("BoundAddr(udp) found the AF_UNIX socket's inode (%v, %v)", ok, err)
	}
}
