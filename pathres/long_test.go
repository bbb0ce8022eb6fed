package pathres

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// deepDir makes root/d…/d… (depth components of 200 bytes) with mkdirat,
// the only way to make it, and returns its absolute path and an fd of it.
func deepDir(t *testing.T, root string, depth int) (string, int) {
	t.Helper()
	comp := strings.Repeat("d", 200)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	mustOK(t, err)
	p := root
	for i := 0; i < depth; i++ {
		mustOK(t, unix.Mkdirat(fd, comp, 0o755))
		nfd, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		mustOK(t, err)
		unix.Close(fd)
		fd = nfd
		p += "/" + comp
	}
	t.Cleanup(func() { unix.Close(fd) })
	return p, fd
}

// TestLongPaths: a walk whose absolute paths are PATH_MAX bytes or more
// (a relative path from a deep cwd) resolves as a short one does, symlinks
// included; DirPath names the deep directory /proc cannot.
func TestLongPaths(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	mustOK(t, err)
	deep, fd := deepDir(t, root, 22)
	if len(deep) < PathMax {
		t.Fatalf("deep path is only %d bytes", len(deep))
	}
	mustOK(t, unix.Mkdirat(fd, "sub", 0o755))
	mustOK(t, unix.Symlinkat("sub", fd, "rel"))
	mustOK(t, unix.Symlinkat(root, fd, "abs"))
	file, err := unix.Openat(fd, "sub/f", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	mustOK(t, err)
	unix.Close(file)

	link := "/proc/self/fd/" + strconv.Itoa(fd)
	if _, err := os.Readlink(link); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("readlink %s: %v, want ENAMETOOLONG (the case this covers)", link, err)
	}
	got, err := DirPath(link)
	if err != nil || got != deep {
		t.Fatalf("DirPath = %q… (%d bytes), %v; want the %d-byte path", trunc(got), len(got), err, len(deep))
	}

	cases := []struct {
		given  string
		follow bool
		want   string
		exists bool
		isDir  bool
	}{
		{"new", false, deep + "/new", false, false},
		{"sub/f", false, deep + "/sub/f", true, false},
		{"rel/f", false, deep + "/sub/f", true, false},
		{"rel", false, deep + "/rel", true, false},
		{"rel", true, deep + "/sub", true, true},
		{"abs/x", false, root + "/x", false, false},
		{"../" + strings.Repeat("d", 200) + "/sub", true, deep + "/sub", true, true},
		{"sub/missing/x", false, deep + "/sub/missing/x", false, false},
	}
	for _, c := range cases {
		t.Run(c.given, func(t *testing.T) {
			r, err := Resolve(Task{Tgid: os.Getpid()}, deep, []byte(c.given), c.follow)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if r.Path != c.want || r.Exists != c.exists || r.IsDir != c.isDir {
				t.Errorf("Resolve = …%q exists=%v dir=%v, want …%q exists=%v dir=%v",
					tail(r.Path), r.Exists, r.IsDir, tail(c.want), c.exists, c.isDir)
			}
		})
	}
	// StatID of a long path (CheckLink of a long base uses it).
	id, err := StatID(deep+"/sub", false)
	obj, err2 := StatID(link, true)
	if err != nil || err2 != nil || !id.IsDir() {
		t.Fatalf("StatID: %v, %v", err, err2)
	}
	if _, err := CheckLink(link, deep, obj); err != nil {
		t.Errorf("CheckLink of the deep directory: %v", err)
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60]
	}
	return s
}

func tail(s string) string {
	if len(s) > 60 {
		return s[len(s)-60:]
	}
	return s
}
