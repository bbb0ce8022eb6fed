package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestListDepthCapped: a chain of directories deeper than maxListDepth is
// listed down to the cap (one descriptor per level), and the listing says
// it was truncated.
func TestListDepthCapped(t *testing.T) {
	sbx := t.TempDir()
	p := sbx
	for i := 0; i < maxListDepth+20; i++ {
		p = filepath.Join(p, "d")
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sbx, "top.txt"), []byte("x"), 0o644)
	l, err := listSandbox(sbx)
	if err != nil {
		t.Fatal(err)
	}
	deepest := 0
	for _, f := range l.Files {
		if n := strings.Count(f.Path, "/") + 1; n > deepest {
			deepest = n
		}
	}
	if !l.Truncated || deepest != maxListDepth || len(l.Files) != maxListDepth+1 {
		t.Fatalf("truncated %v, deepest entry %d levels, %d entries; want true, %d, %d", l.Truncated, deepest, len(l.Files), maxListDepth, maxListDepth+1)
	}

	shallow := t.TempDir()
	os.MkdirAll(filepath.Join(shallow, "a", "b"), 0o755)
	if l, err := listSandbox(shallow); err != nil || l.Truncated || len(l.Files) != 2 {
		t.Fatalf("shallow tree: %+v %v", l, err)
	}
}

// TestSettleNeverByName: the copy's temporary file gets its mode through the
// server's descriptor; a symlink (or another file) the session's code put
// at the temporary name is neither chmodded through nor renamed into place,
// and the copy is refused (409).
func TestSettleNeverByName(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("v"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		swap func(dir, tmp string) error
		ok   bool
	}{
		{"untouched", func(dir, tmp string) error { return nil }, true},
		{"symlink swapped in", func(dir, tmp string) error {
			if err := os.Rename(filepath.Join(dir, tmp), filepath.Join(dir, "moved")); err != nil {
				return err
			}
			return os.Symlink(victim, filepath.Join(dir, tmp))
		}, false},
		{"other file swapped in", func(dir, tmp string) error {
			os.Remove(filepath.Join(dir, tmp))
			return os.WriteFile(filepath.Join(dir, tmp), []byte("x"), 0o600)
		}, false},
		{"moved away", func(dir, tmp string) error { return os.Rename(filepath.Join(dir, tmp), filepath.Join(dir, "moved")) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dfd)
			tmp := ".tracecell-copy-x"
			f, err := os.OpenFile(filepath.Join(dir, tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := c.swap(dir, tmp); err != nil {
				t.Fatal(err)
			}
			err = settle(f, dfd, tmp, 0o755, "dst")
			var ae *apiError
			switch {
			case c.ok && err != nil:
				t.Fatalf("settle: %v", err)
			case !c.ok && (!errors.As(err, &ae) || ae.status != 409):
				t.Fatalf("settle after a swap: %v, want a 409", err)
			}
			if st, _ := f.Stat(); st.Mode().Perm() != 0o755 {
				t.Errorf("the held file has mode %v, want 0755", st.Mode().Perm())
			}
			if st, _ := os.Stat(victim); st.Mode().Perm() != 0o600 {
				t.Errorf("victim mode now %v", st.Mode().Perm())
			}
		})
	}
}

// TestCopyDestination: where a copy lands, before anything is read or
// written: the source's base name by default, a path inside the sandbox
// otherwise, never the sandbox itself nor a path out of it.
func TestCopyDestination(t *testing.T) {
	const sbx = "/srv/sessions/s1"
	for _, tc := range []struct {
		name      string
		abs, dst  string
		wantDst   string
		wantComps string    // joined with "/"
		wantCode  ErrorCode // the API error code, "" for none
	}{
		{"default-base-name", "/data/in.csv", "", "in.csv", "in.csv", ""},
		{"relative", "/data/in.csv", "sub/x.csv", "sub/x.csv", "sub/x.csv", ""},
		{"absolute-inside", "/data/in.csv", sbx + "/sub/x.csv", sbx + "/sub/x.csv", "sub/x.csv", ""},
		{"root-needs-destination", "/", "", "", "", "invalid_field"},
		{"sandbox-itself", "/data/in.csv", ".", "", "", "invalid_field"},
		{"dot-dot", "/data/in.csv", "../x", "", "", "path_outside_sandbox"},
		{"absolute-outside", "/data/in.csv", "/etc/x", "", "", "path_outside_sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst, comps, err := copyDestination(sbx, tc.dst, &copySource{abs: tc.abs, real: tc.abs})
			var ae *apiError
			if tc.wantCode != "" {
				if !errors.As(err, &ae) || ae.code != tc.wantCode {
					t.Fatalf("err = %v, want code %s", err, tc.wantCode)
				}
				return
			}
			if err != nil || dst != tc.wantDst || strings.Join(comps, "/") != tc.wantComps {
				t.Fatalf("copyDestination = %q, %q, %v; want %q, %q", dst, comps, err, tc.wantDst, tc.wantComps)
			}
		})
	}
}

// TestListHoldsFewNames: a listing holds the names it can show, not every
// name of a directory the code filled. A red team made 400000 files of
// 240-byte names and four concurrent listings took the server from 47 to
// 572 MB. Here 60000 names of 250 bytes (15 MB of names) are listed while
// the heap is sampled: reading them all, as before, peaks far above the
// 10000 names (2.5 MB) a capped listing keeps.
func TestListHoldsFewNames(t *testing.T) {
	sbx := memDir(t)
	dir := filepath.Join(sbx, "big")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("n", 244)
	for i := 0; i < 60000; i++ {
		fd, err := unix.Openat(dfd, fmt.Sprintf("%s%06d", pad, i), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			unix.Close(dfd)
			t.Fatal(err)
		}
		unix.Close(fd)
	}
	unix.Close(dfd)
	grew, l, err := heapGrowth(func() (*fileList, error) { return listSandbox(sbx) })
	if err != nil {
		t.Fatal(err)
	}
	if !l.Truncated || len(l.Files) != maxListEntries || l.Files[0].Path != "big" || l.Files[1].Path != "big/"+pad+"000000" {
		t.Fatalf("listing: truncated %v, %d entries, first %+v", l.Truncated, len(l.Files), l.Files[:min(2, len(l.Files))])
	}
	t.Logf("heap grew by at most %.1f MB while listing", float64(grew)/(1<<20))
	if grew > 14<<20 { // 21 MB before, 7.6 MB now (the listing itself is 5 MB)
		t.Errorf("the heap grew by %.1f MB while listing 60000 names of 250 bytes: every name was held", float64(grew)/(1<<20))
	}
}

// TestListBytesCapped: the entry count does not bound a listing's size, the
// code's names and link targets do: 30 levels of 250-byte names and 2000
// symlinks with 4000-byte targets at the bottom make 23 MB of paths and
// targets in 2030 entries. The listing stops at maxListBytes and says it
// was truncated. (A red team's 9950 such links 62 levels down made a 198 MB
// response, held whole by the server per request.)
func TestListBytesCapped(t *testing.T) {
	const capBytes = 8 << 20 // maxListBytes
	sbx := t.TempDir()
	long := strings.Repeat("d", 250)
	// Deeper than PATH_MAX: made a level at a time through descriptors.
	dfd, err := unix.Open(sbx, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		if err := unix.Mkdirat(dfd, long, 0o700); err != nil {
			t.Fatal(err)
		}
		sub, err := unix.Openat(dfd, long, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(dfd)
		if err != nil {
			t.Fatal(err)
		}
		dfd = sub
	}
	target := strings.Repeat("t", 4000)
	for i := 0; i < 2000; i++ {
		if err := unix.Symlinkat(target, dfd, fmt.Sprintf("l%04d", i)); err != nil {
			unix.Close(dfd)
			t.Fatal(err)
		}
	}
	unix.Close(dfd)
	l, err := listSandbox(sbx)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, e := range l.Files {
		size += len(e.Path) + len(e.Target)
	}
	if !l.Truncated || size > capBytes || len(l.Files) < 100 {
		t.Errorf("%d entries, %d bytes of paths and targets (cap %d), truncated %v", len(l.Files), size, capBytes, l.Truncated)
	}
}

// TestListEncodedBytesCapped: the byte cap counts what the JSON encoding
// writes: 2090 links whose 4000-byte targets are control characters are
// 8.4 MB of raw bytes (under the cap) but 50 MB encoded (\u0001 each).
func TestListEncodedBytesCapped(t *testing.T) {
	sbx := t.TempDir()
	target := strings.Repeat("\x01", 4000)
	for i := 0; i < 2090; i++ {
		if err := os.Symlink(target, filepath.Join(sbx, fmt.Sprintf("l%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	l, err := listSandbox(sbx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Truncated || len(b) > 9<<20 {
		t.Errorf("listing of %d entries encodes to %d bytes (cap 8 MiB of paths and targets), truncated %v", len(l.Files), len(b), l.Truncated)
	}
}

// heapGrowth runs list with the heap sampled every 200 µs (the GC made
// eager), and returns how far the heap in use grew above where it started.
func heapGrowth(list func() (*fileList, error)) (uint64, *fileList, error) {
	old := debug.SetGCPercent(5)
	defer debug.SetGCPercent(old)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base0 := ms.HeapInuse
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var max uint64
		for {
			select {
			case <-done:
				peak <- max
				return
			default:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base0 && m.HeapInuse-base0 > max {
				max = m.HeapInuse - base0
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	l, err := list()
	close(done)
	return <-peak, l, err
}

// TestListHeldNamesBounded: every level of the walk holds the names it read
// while the walk is below it. 10 levels of 9000 names of 250 bytes are
// 22 MB held at the bottom; the listing holds at most maxHeldNames (5 MB).
// (The red team's 60 levels of 9000 names took 220 MB per request.)
func TestListHeldNamesBounded(t *testing.T) {
	sbx := memDir(t)
	pad := strings.Repeat("n", 244)
	dfd, err := unix.Open(sbx, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for lvl := 0; lvl < 10; lvl++ {
		if err := unix.Mkdirat(dfd, "a", 0o700); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 9000; i++ {
			fd, err := unix.Openat(dfd, fmt.Sprintf("%s%06d", pad, i), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(fd)
		}
		sub, err := unix.Openat(dfd, "a", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(dfd)
		if err != nil {
			t.Fatal(err)
		}
		dfd = sub
	}
	unix.Close(dfd)
	grew, l, err := heapGrowth(func() (*fileList, error) { return listSandbox(sbx) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("heap grew by at most %.1f MB; %d entries, truncated %v", float64(grew)/(1<<20), len(l.Files), l.Truncated)
	if !l.Truncated || grew > 16<<20 { // 29 MB before, 9.7 MB now (the listing itself 5 MB)
		t.Errorf("the heap grew by %.1f MB while listing 10 levels of 9000 names", float64(grew)/(1<<20))
	}
}

// memDir is a fresh directory on /dev/shm where there is one (thousands of
// files are made fast there), removed at the end of the test.
func memDir(t *testing.T) string {
	t.Helper()
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	d, err := os.MkdirTemp(base, "tc-files-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(d) })
	return d
}
