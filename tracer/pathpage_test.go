package tracer

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/syscalls"
)

// pageReadOnly accepts only one private, anonymous, read-only mapping of
// exactly the page's range: memory nobody but the tracer can write. Checked
// on this test process's own maps (mapping memory here is harmless).
func TestPageReadOnly(t *testing.T) {
	addr, size := uintptr(syscalls.PathPageAddr), uintptr(syscalls.PathPageSize)
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	anon := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	cases := []struct {
		name        string
		length      uintptr
		prot, flags int
		fd          int
		want        bool
	}{
		{"private anonymous read-only", size, unix.PROT_READ, anon, -1, true},
		{"writable", size, unix.PROT_READ | unix.PROT_WRITE, anon, -1, false},
		{"shared: another mapping may write it", size, unix.PROT_READ, unix.MAP_SHARED | unix.MAP_ANONYMOUS, -1, false},
		{"a file: its writes show through", size, unix.PROT_READ, unix.MAP_PRIVATE, int(f.Fd()), false},
		{"only part of the range", size / 2, unix.PROT_READ, anon, -1, false},
		{"more than the range", size + 4096, unix.PROT_READ, anon, -1, false},
		{"nothing mapped", 0, 0, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.length > 0 {
				r, _, e := unix.Syscall6(unix.SYS_MMAP, addr, c.length, uintptr(c.prot),
					uintptr(c.flags|unix.MAP_FIXED_NOREPLACE), uintptr(c.fd), 0)
				if e != 0 || r != addr {
					t.Skipf("cannot map at %#x: %v (the range is taken in this process)", addr, e)
				}
				defer unix.Syscall(unix.SYS_MUNMAP, addr, c.length, 0)
			}
			if got := pageReadOnly(os.Getpid()); got != c.want {
				t.Errorf("pageReadOnly = %v, want %v", got, c.want)
			}
		})
	}
}

// prctl(PR_SET_MM) is forbidden: its PR_SET_MM_MAP needs no capability and
// lets brk unmap the path page (a hint then maps writable memory where the
// tracer writes checked paths). Other prctls are not trapped.
func TestPrSetMMForbidden(t *testing.T) {
	needPython(t)
	script := `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(104)  # struct prctl_mm_map, garbage
r = libc.prctl(35, 14, buf, 104, 0)     # PR_SET_MM, PR_SET_MM_MAP
e = ctypes.get_errno()
n = libc.prctl(15, b"renamed", 0, 0, 0)  # PR_SET_NAME
print(r, os.strerror(e) if r else "", n)
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil || o.stdout != "-1 Operation not permitted 0\n" {
		t.Fatalf("err %v stdout %q stderr %q", o.err, o.stdout, o.stderr)
	}
	var found bool
	for _, e := range o.events {
		if e.Syscall == "prctl" && e.Flags == "PR_SET_MM" && e.Kind == syscalls.KindForbidden && e.Errno == "EPERM" {
			found = true
		}
	}
	if !found {
		t.Errorf("no forbidden prctl(PR_SET_MM) event: %+v", o.events)
	}
}
