package tracer

import (
	"bytes"
	"os"
	"testing"
	"unsafe"
)

// TestReadStringView reads a string of this process's own memory: the
// bytes come back without their NUL, as a view of the reader's buffer
// with the NUL after it, so withNUL adds it without a copy; withNUL
// copies any other slice, leaving it as it was.
func TestReadStringView(t *testing.T) {
	src := []byte("/tmp/some/path\x00garbage")
	var m memReader
	got, err := m.readString(os.Getpid(), uintptr(unsafe.Pointer(&src[0])))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "/tmp/some/path" {
		t.Fatalf("readString = %q", got)
	}
	if &got[0] != &m.buf[0] {
		t.Error("readString copied the string out of its buffer")
	}
	z := withNUL(got)
	if string(z) != "/tmp/some/path\x00" || &z[0] != &got[0] {
		t.Errorf("withNUL(readString's bytes) = %q, copied: %v", z, &z[0] != &got[0])
	}
	for _, s := range [][]byte{
		[]byte("abc"),                        // no spare capacity
		[]byte("abcd")[:3],                   // spare capacity, no NUL after
		append(make([]byte, 0, 8), "abc"...), // spare capacity, a zero after
	} {
		before := append([]byte(nil), s[:cap(s)]...)
		z := withNUL(s)
		if string(z) != string(s)+"\x00" {
			t.Errorf("withNUL(%q) = %q", s, z)
		}
		if !bytes.Equal(s[:cap(s)], before) {
			t.Errorf("withNUL(%q) changed its argument's array: %q, was %q", s, s[:cap(s)], before)
		}
	}
}
