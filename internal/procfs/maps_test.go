package procfs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// find is the mapping that holds addr.
func find(ms []Mapping, addr uint64) (Mapping, bool) {
	for _, m := range ms {
		if addr >= m.Start && addr < m.End {
			return m, true
		}
	}
	return Mapping{}, false
}

// TestParseMaps: the fields of /proc/<pid>/maps, a path with spaces, and
// anonymous lines without a path.
func TestParseMaps(t *testing.T) {
	text := "55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 1311                       /usr/bin/python3.11\n" +
		"7f0000000000-7f0000001000 r--s 00000000 00:1a 42                         /dev/shm/sem.my sem (deleted)\n" +
		"7f0000001000-7f0000002000 rw-s 00000000 00:01 7                          /dev/zero (deleted)\n" +
		"7f0000002000-7f0000004000 rw-p 00000000 00:00 0 \n" +
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	ms, err := ParseMaps([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 5 {
		t.Fatalf("%d mappings, want 5: %+v", len(ms), ms)
	}
	m, ok := find(ms, 0x7f0000000ffc)
	if !ok || m.Path != "/dev/shm/sem.my sem (deleted)" || m.Write || !m.Shared || m.Inode != 42 {
		t.Errorf("sem mapping %+v %v", m, ok)
	}
	if m, ok := find(ms, 0x7f0000003000); !ok || m.Path != "" || !m.Write || m.Shared || m.Inode != 0 {
		t.Errorf("anonymous mapping %+v %v", m, ok)
	}
	if _, ok := find(ms, 0x7f0000004000); ok {
		t.Error("found a mapping at the end of the last one")
	}
	for _, bad := range []string{"garbage\n", "1000-2000 rw 0 00:00 0\n", "x-2000 rw-p 0 00:00 0\n", "1000-2000 rw-p 0 00:00 inode\n"} {
		if _, err := ParseMaps([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestReadMaps reads this process's map: a shared anonymous mapping is
// shared and has an inode (shmem), a private one neither.
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
	ms, err := ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := find(ms, uint64(addrOf(sh))); !ok || !m.Shared || m.Inode == 0 {
		t.Errorf("shared anonymous mapping not seen as shared (shmem inode): %+v %v", m, ok)
	}
	if m, ok := find(ms, uint64(addrOf(pr))); !ok || m.Shared || m.Inode != 0 {
		t.Errorf("private anonymous mapping seen as shared or file-backed: %+v %v", m, ok)
	}
}
