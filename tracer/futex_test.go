package tracer

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestParseMaps: the fields of /proc/<pid>/maps, a path with spaces, and
// anonymous lines without a path.
func TestParseMaps(t *testing.T) {
	text := "55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 1311                       /usr/bin/python3.11\n" +
		"7f0000000000-7f0000001000 r--s 00000000 00:1a 42                         /dev/shm/sem.my sem (deleted)\n" +
		"7f0000001000-7f0000002000 rw-s 00000000 00:01 7                          /dev/zero (deleted)\n" +
		"7f0000002000-7f0000004000 rw-p 00000000 00:00 0 \n" +
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	ms, err := parseMaps([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 5 {
		t.Fatalf("%d mappings, want 5: %+v", len(ms), ms)
	}
	m, ok := ms.find(0x7f0000000ffc)
	if !ok || m.path != "/dev/shm/sem.my sem (deleted)" || m.write || !m.shared || m.inode != 42 {
		t.Errorf("sem mapping %+v %v", m, ok)
	}
	if m, ok := ms.find(0x7f0000003000); !ok || m.path != "" || !m.write || m.shared || m.inode != 0 {
		t.Errorf("anonymous mapping %+v %v", m, ok)
	}
	if _, ok := ms.find(0x7f0000004000); ok {
		t.Error("found a mapping at the end of the last one")
	}
	if _, err := parseMaps([]byte("garbage\n")); err == nil {
		t.Error("garbage parsed")
	}
}

// TestFutexMemWhy classifies real mappings of this process: anonymous and
// writable shared memory may hold shared futex words, a read-only shared
// mapping and an uncopied page of a private file mapping may not; a copied
// one may.
func TestFutexMemWhy(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "futex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	mp := func(prot, flags int, fd int) []byte {
		b, err := unix.Mmap(fd, 0, 4096, prot, flags)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Munmap(b) })
		return b
	}
	fd := int(f.Fd())
	anon := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, -1)
	anon[0] = 1
	shanon := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS, -1)
	shw := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED, fd)
	shr := mp(unix.PROT_READ, unix.MAP_SHARED, fd)
	priv := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE, fd)
	_ = priv[0] // faulted in: the file's page, not a copy
	cow := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE, fd)
	cow[0] = 1 // copied on write: anonymous now
	tid := unix.Gettid()
	tr := &tracer{}
	for _, c := range []struct {
		name string
		b    []byte
		bad  string // "" when allowed; else a word of the reason
	}{
		{"private anonymous", anon, ""},
		{"shared anonymous", shanon, ""},
		{"shared writable file", shw, ""},
		{"shared read-only file", shr, "read-only shared mapping"},
		{"private file, not copied", priv, "not copied"},
		{"private file, copied", cow, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, err := readMaps(tid)
			if err != nil {
				t.Fatal(err)
			}
			addr := uint64(uintptr(unsafe.Pointer(&c.b[0])))
			m, ok := ms.find(addr)
			if !ok {
				t.Fatalf("%#x not in the maps", addr)
			}
			why := tr.futexMemWhy(tid, addr, m)
			if (why == "") != (c.bad == "") || !strings.Contains(why, c.bad) {
				t.Errorf("futexMemWhy = %q, want %q", why, c.bad)
			}
		})
	}
}
