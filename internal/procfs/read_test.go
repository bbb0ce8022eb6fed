package procfs

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRead checks the raw /proc reader against os.ReadFile, and that a
// short buffer cuts the file.
func TestRead(t *testing.T) {
	want, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int
		// whole: the file fits (its counters change between reads, so
		// only the fields that cannot are compared)
		whole bool
	}{{"whole", ReadMax, true}, {"cut", 16, false}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read("/proc/self/status", make([]byte, tc.size))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > tc.size || len(got) < 16 || !bytes.Equal(got[:16], want[:16]) {
				t.Errorf("Read = %q, want %d bytes at most, starting %q", got, tc.size, want[:16])
			}
			if tc.whole && StatusInt(got, "Tgid:", -1) != os.Getpid() {
				t.Errorf("Read: no Tgid %d in %q", os.Getpid(), got)
			}
		})
	}
	if _, err := Read("/proc/0/status", make([]byte, 64)); err == nil {
		t.Error("Read of a pid that cannot exist succeeded")
	}
}

// TestReadFD: a pipe read to the end of what was written (the writer
// closed: a short result), and to a full buffer with more left.
func TestReadFD(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	unix.Write(p[1], []byte("ab"))
	unix.Write(p[1], []byte("cdef"))
	var full [3]byte
	if b, err := ReadFD(p[0], full[:]); err != nil || string(b) != "abc" {
		t.Fatalf("ReadFD into 3 bytes = %q, %v; want \"abc\"", b, err)
	}
	unix.Close(p[1])
	var rest [8]byte
	if b, err := ReadFD(p[0], rest[:]); err != nil || string(b) != "def" {
		t.Fatalf("ReadFD after close = %q, %v; want \"def\"", b, err)
	}
	if b, err := ReadFD(-1, rest[:]); err == nil || b != nil {
		t.Fatalf("ReadFD(-1) = %q, %v; want an error", b, err)
	}
}
