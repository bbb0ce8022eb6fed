package tracer

import (
	"os"
	"testing"
	"unsafe"

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
			ip, err := procNetIP(c.in)
			if err != nil || ip.String() != c.want {
				t.Errorf("procNetIP(%q) = %v, %v; want %s", c.in, ip, err, c.want)
			}
		})
	}
	for _, bad := range []string{"", "0100007", "0100007G", "0100007F00"} {
		if _, err := procNetIP(bad); err == nil {
			t.Errorf("procNetIP(%q): no error", bad)
		}
	}
}

func TestSpanOverlaps(t *testing.T) {
	cases := []struct {
		a, b span
		want bool
	}{
		{span{0, 4}, span{4, 8}, false},
		{span{0, 5}, span{4, 8}, true},
		{span{54, 60}, span{56, 60}, true},
		{span{60, 64}, span{56, 60}, false},
		{mkSpan(^uint64(0)-2, 16), span{^uint64(0) - 1, ^uint64(0)}, true}, // clipped, not wrapped
	}
	for _, c := range cases {
		if got := c.a.overlaps(c.b); got != c.want || c.b.overlaps(c.a) != c.want {
			t.Errorf("%v overlaps %v = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestReadMaps: a shared and a private anonymous mapping of this process
// are told apart, and a memfd mapping has an inode.
func TestReadMaps(t *testing.T) {
	sh, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(sh)
	pr, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(pr)
	l, err := readMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	at := func(b []byte) span { return mkSpan(uint64(addrOf(b)), 1) }
	if !l.any(at(sh), func(v mapping) bool { return v.shared && v.inode != 0 }) {
		t.Errorf("shared anonymous mapping not seen as shared (shmem inode)")
	}
	if l.any(at(pr), func(v mapping) bool { return v.shared || v.inode != 0 }) {
		t.Errorf("private anonymous mapping seen as shared or file-backed")
	}
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// TestMsghdrLayout: the x/sys sizes are struct user_msghdr and struct
// mmsghdr of the 64-bit ABIs the tracer supports (include/linux/socket.h:
// msg_len right after the msghdr, padded to 8).
func TestMsghdrLayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"msghdr", sizeofMsghdr, 56},
		{"mmsghdr", sizeofMmsghdr, 64},
		{"msg_len offset", offMsgLen, 56},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
			}
		})
	}
}
