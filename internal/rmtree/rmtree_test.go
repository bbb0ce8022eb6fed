package rmtree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// chain makes n nested directories "d" below dir, through descriptors (a
// path that long is past PATH_MAX), with a file in every 100th.
func chain(t *testing.T, dir string, n int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			f, err := unix.Openat(fd, "f", unix.O_WRONLY|unix.O_CREAT, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(f)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
}

// withFDLimit runs f with the soft RLIMIT_NOFILE at n.
func withFDLimit(t *testing.T, n uint64, f func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = n
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	f()
}

func gone(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("%s still there (lstat: %v)", p, err)
	}
}

// TestDeepChainFewFDs: a chain far deeper than the descriptors the process
// may open is removed whole; os.RemoveAll fails on the same tree.
func TestDeepChainFewFDs(t *testing.T) {
	const depth, limit = 3000, 100
	base := t.TempDir()
	control := filepath.Join(base, "control")
	os.Mkdir(control, 0o755)
	chain(t, control, depth)
	var osErr error
	withFDLimit(t, limit, func() { osErr = os.RemoveAll(control) })
	if osErr == nil || !strings.Contains(osErr.Error(), "too many open files") {
		t.Fatalf("os.RemoveAll with %d descriptors: %v; want EMFILE (the test's premise)", limit, osErr)
	}

	top := filepath.Join(base, "sbx")
	os.Mkdir(top, 0o755)
	chain(t, top, depth)
	// A name RemoveAll would pick for a moved directory is taken already.
	os.WriteFile(filepath.Join(top, movedPrefix+"1"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(top, movedPrefix+"2"), 0o755)
	var err error
	withFDLimit(t, limit, func() { err = RemoveAll(top) })
	if err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	gone(t, top)
	// And it removes the control tree os.RemoveAll left half-way.
	if err := RemoveAll(control); err != nil {
		t.Fatalf("RemoveAll of the control: %v", err)
	}
	gone(t, control)
}

// TestReadOnlyAndSymlinks: directories the code made read-only or
// unsearchable are removed; a symlink is removed as itself, and what it
// points to (outside the tree) is untouched.
func TestReadOnlyAndSymlinks(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(outside, "keep"), 0o755)
	os.WriteFile(filepath.Join(outside, "keep", "f"), []byte("host"), 0o644)

	top := filepath.Join(base, "sbx")
	for _, d := range []string{"ro/a/b", "none/x", "wide"} {
		os.MkdirAll(filepath.Join(top, d), 0o755)
	}
	os.WriteFile(filepath.Join(top, "ro/a/b/f"), []byte("x"), 0o444)
	os.WriteFile(filepath.Join(top, "none/x/f"), []byte("x"), 0o000)
	for i := 0; i < 300; i++ {
		os.WriteFile(filepath.Join(top, "wide", "f"+string(rune('a'+i%26))+strings.Repeat("z", i/26)), nil, 0o644)
	}
	os.Symlink(outside, filepath.Join(top, "link-dir"))
	os.Symlink(filepath.Join(outside, "keep"), filepath.Join(top, "ro/a/link"))
	unix.Mkfifo(filepath.Join(top, "fifo"), 0o644)
	os.Chmod(filepath.Join(top, "ro/a/b"), 0o500)
	os.Chmod(filepath.Join(top, "ro/a"), 0o500)
	os.Chmod(filepath.Join(top, "none/x"), 0o000)
	os.Chmod(filepath.Join(top, "none"), 0o000)

	if err := removeAsOwner(t, base, top); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	gone(t, top)
	if b, err := os.ReadFile(filepath.Join(outside, "keep", "f")); err != nil || string(b) != "host" {
		t.Fatalf("the symlinks' target changed: %q %v", b, err)
	}
	if st, err := os.Stat(outside); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("the symlinks' target's mode changed: %v %v", st.Mode(), err)
	}
}

// TestMain runs the helper process of removeAsOwner.
func TestMain(m *testing.M) {
	if os.Getenv("GO_WANT_HELPER_PROCESS") == "1" {
		if err := RemoveAll(os.Getenv("RMTREE_TOP")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// removeAsOwner runs RemoveAll(top) as the owner of the tree, not as root:
// root passes every permission check, so read-only directories would not
// be tested. As root, the tree is given to nobody (65534) and a re-exec of
// the test binary removes it as nobody; base must be traversable.
func removeAsOwner(t *testing.T, base, top string) error {
	t.Helper()
	if os.Geteuid() != 0 {
		return RemoveAll(top)
	}
	const nobody = 65534
	os.Chmod(base, 0o755)
	os.Lchown(base, nobody, nobody) // top's parent: nobody removes top from it
	for d := filepath.Dir(base); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o001) // t.TempDir's parents are 0700
		}
	}
	filepath.Walk(top, func(p string, _ os.FileInfo, _ error) error {
		return os.Lchown(p, nobody, nobody)
	})
	// The test binary's own directory is root's, 0700: run a copy.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(base, "rmtree.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "GO_WANT_HELPER_PROCESS=1", "RMTREE_TOP="+top)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func TestTopIsSymlinkOrFileOrMissing(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	os.Mkdir(target, 0o755)
	os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644)
	link := filepath.Join(base, "link")
	os.Symlink(target, link)
	if err := RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	gone(t, link)
	if _, err := os.Stat(filepath.Join(target, "f")); err != nil {
		t.Fatalf("removed through the symlink: %v", err)
	}
	f := filepath.Join(base, "file")
	os.WriteFile(f, nil, 0o644)
	if err := RemoveAll(f); err != nil {
		t.Fatal(err)
	}
	gone(t, f)
	if err := RemoveAll(filepath.Join(base, "missing")); err != nil {
		t.Fatalf("missing path: %v", err)
	}
	if err := RemoveAll(""); err == nil {
		t.Fatal("empty path: no error")
	}
}

// TestErrorNamesEntry: what cannot be removed is named, and the error
// unwraps to the errno. The entry that cannot go is a mount point (rmdir
// answers EBUSY); mounting one needs root.
func TestErrorNamesEntry(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs inside the tree")
	}
	top := filepath.Join(t.TempDir(), "sbx")
	mnt := filepath.Join(top, "a", "mnt")
	os.MkdirAll(mnt, 0o755)
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	err := RemoveAll(top)
	if err == nil {
		t.Fatal("removed a mount point")
	}
	if !strings.Contains(err.Error(), filepath.Join("sbx", "a", "mnt")) || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("error %v: want the mount point named and EBUSY", err)
	}
}

// TestFirstNamesAndReadSome: FirstNames gives the k names that sort first,
// in order, and says whether there are more; ReadSome reads at most n. A
// directory of 3000 entries (more than a read batch) in random order.
func TestFirstNamesAndReadSome(t *testing.T) {
	dir := t.TempDir()
	var all []string
	for i := 0; i < 3000; i++ {
		n := fmt.Sprintf("f%05d", (i*7919)%3000)
		all = append(all, n)
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(all)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, tc := range []struct {
		k    int
		more bool
	}{{0, true}, {1, true}, {1023, true}, {1024, true}, {2999, true}, {3000, false}, {5000, false}} {
		t.Run(fmt.Sprint(tc.k), func(t *testing.T) {
			names, more, err := FirstNames(fd, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			want := all[:min(tc.k, len(all))]
			if !slices.Equal(names, want) && !(len(names) == 0 && len(want) == 0) || more != tc.more {
				t.Errorf("FirstNames(%d): %d names (first %q), more %v; want %d, more %v", tc.k, len(names), names[:min(3, len(names))], more, len(want), tc.more)
			}
		})
	}
	some, err := ReadSome(fd, 100)
	if err != nil || len(some) != 100 {
		t.Fatalf("ReadSome(100): %d names, %v", len(some), err)
	}
	rest, err := ReadSome(fd, 5000)
	if err != nil || len(rest) != 3000 {
		t.Errorf("ReadSome(5000) after ReadSome(100): %d names, %v (each read starts at the directory's start)", len(rest), err)
	}
}
