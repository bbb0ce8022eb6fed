package pathres

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
