package tracer

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"github.com/tracecell/tracecell/syscalls"
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

// TestCopiedCallReadsMore: a call running on a path page copy of its path
// that reads any other memory of the program (a setxattr name, bytes) is
// marked to be decided again frozen (copyUnsafe), where every read is
// copied: the kernel would read that memory again from the program. Reading
// the copied path itself is not such a read (its copy fails here, with no
// page: copyFail), and a call not running on a copy is never marked.
func TestCopiedCallReadsMore(t *testing.T) {
	mem := []byte("user.name\x00")
	addr := uintptr(unsafe.Pointer(&mem[0]))
	spec, _ := syscalls.Lookup("setxattr")
	for _, tc := range []struct {
		name    string
		copying bool
		read    func(e decEnv) error
		unsafe  bool
	}{
		{"the name of a copied call", true, func(e decEnv) error { _, err := e.ReadArgString(1, addr); return err }, true},
		{"bytes of a copied call", true, func(e decEnv) error { _, err := e.ReadBytes(addr, 4); return err }, true},
		{"argument bytes of a copied call", true, func(e decEnv) error { _, err := e.ReadArgBytes(1, addr, 4); return err }, true},
		{"the copied path", true, func(e decEnv) error { e.ReadArgString(0, addr); return nil }, false},
		{"the name of a call not copied", false, func(e decEnv) error { _, err := e.ReadArgString(1, addr); return err }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &tracer{cfg: &Config{}}
			tr.tree.init()
			tk := tr.tree.add(os.Getpid(), os.Getpid())
			c := tk.newCall(0, "setxattr")
			c.spec, c.copying, c.copyArg = spec, tc.copying, 0
			if err := tc.read(decEnv{tr, c}); err != nil {
				t.Fatal(err)
			}
			if c.copyUnsafe != tc.unsafe {
				t.Errorf("copyUnsafe = %v, want %v", c.copyUnsafe, tc.unsafe)
			}
		})
	}
}
