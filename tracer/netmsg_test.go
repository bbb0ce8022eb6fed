package tracer

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
	if !l.any(at(sh), func(v mapping) bool { return v.Shared && v.Inode != 0 }) {
		t.Errorf("shared anonymous mapping not seen as shared (shmem inode)")
	}
	if l.any(at(pr), func(v mapping) bool { return v.Shared || v.Inode != 0 }) {
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
