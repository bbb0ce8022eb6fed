package pathres

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLstatMatchesOs: lstat's mode reads the same as os.Lstat's for every
// file type and special bit, and its identity is the file's dev and inode.
func TestLstatMatchesOs(t *testing.T) {
	d := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(d, "file"), nil, 0o640))
	must(os.WriteFile(filepath.Join(d, "suid"), nil, 0o755))
	must(os.Chmod(filepath.Join(d, "suid"), 0o755|os.ModeSetuid|os.ModeSetgid))
	must(os.Mkdir(filepath.Join(d, "sticky"), 0o777))
	must(os.Chmod(filepath.Join(d, "sticky"), 0o777|os.ModeSticky))
	must(os.Symlink("file", filepath.Join(d, "link")))
	must(syscall.Mkfifo(filepath.Join(d, "fifo"), 0o600))
	ln, err := net.Listen("unix", filepath.Join(d, "sock"))
	must(err)
	defer ln.Close()
	for _, p := range []string{
		filepath.Join(d, "file"), filepath.Join(d, "suid"), filepath.Join(d, "sticky"),
		filepath.Join(d, "link"), filepath.Join(d, "fifo"), filepath.Join(d, "sock"),
		d, "/dev/null", "/",
	} {
		for _, follow := range []bool{false, true} {
			want, werr := os.Lstat(p)
			if follow {
				want, werr = os.Stat(p)
			}
			got, err := lstat(p, follow)
			if werr != nil || err != nil {
				t.Fatalf("%s: os %v, lstat %v", p, werr, err)
			}
			st := want.Sys().(*syscall.Stat_t)
			if got.mode != want.Mode() || got.dev != uint64(st.Dev) || got.ino != st.Ino {
				t.Errorf("%s follow=%v: lstat %v %d:%d, os %v %d:%d", p, follow,
					got.mode, got.dev, got.ino, want.Mode(), st.Dev, st.Ino)
			}
		}
	}
	if _, err := lstat(filepath.Join(d, "missing"), false); err != syscall.ENOENT {
		t.Errorf("missing: %v, want the bare ENOENT", err)
	}
}

// TestFstatatNames: fstatat answers as unix.Fstatat for names on either
// side of its stack buffer's length (511 bytes with the NUL fits, 512 does
// not), relative to a dirfd and absolute, present and missing, and fails a
// name with a NUL in it with EINVAL as x/sys does.
func TestFstatatNames(t *testing.T) {
	d := t.TempDir()
	dir, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// Directories of 200-byte names make absolute paths of any length.
	prefixes := []string{d}
	for long := d; len(long) < 700; {
		long = filepath.Join(long, strings.Repeat("d", 200))
		if err := os.Mkdir(long, 0o755); err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, long)
	}
	var names []string
	for _, n := range []int{1, stackName - 2, stackName - 1, stackName, stackName + 1, 700} {
		// An absolute path of exactly n bytes: a prefix of long, ended
		// by a file name that makes up the length.
		for _, prefix := range prefixes {
			if rest := n - len(prefix) - 1; rest >= 1 && rest <= 255 {
				p := prefix + "/" + strings.Repeat("f", rest)
				names = append(names, p)
				if len(names)%2 == 0 {
					if err := os.WriteFile(p, nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				break
			}
		}
	}
	names = append(names, "x", strings.Repeat("d", 200), "missing", "with\x00nul", d+"/with\x00nul")
	for _, name := range names {
		for _, dirfd := range []int{unix.AT_FDCWD, int(dir.Fd())} {
			var got, want unix.Stat_t
			gerr := fstatat(dirfd, name, &got, unix.AT_SYMLINK_NOFOLLOW)
			werr := unix.Fstatat(dirfd, name, &want, unix.AT_SYMLINK_NOFOLLOW)
			if gerr != werr || got != want {
				t.Errorf("fstatat(%d, %d-byte name) = %v, ino %d; unix.Fstatat: %v, ino %d", dirfd, len(name), gerr, got.Ino, werr, want.Ino)
			}
		}
	}
	lens := map[int]bool{}
	for _, n := range names {
		lens[len(n)] = true
	}
	for _, n := range []int{stackName - 1, stackName, 700} {
		if !lens[n] {
			t.Errorf("no %d-byte name made (temp dir %s)", n, d)
		}
	}
}
