package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestCreateOutput: the opener of tracecell's own output files (--trace,
// the CPU profile) against what a traced program can leave at the path.
// Ground truth is the other file's content, read here. A run refuses a
// path inside its roots outright (TestOutputInsideRoot); the opener's own
// rules still hold for a directory that is not a root here (as for the
// profile, checked against no roots), in case a program of an earlier run
// left the links.
func TestCreateOutput(t *testing.T) {
	root := t.TempDir() // a writable root of an earlier run
	other := t.TempDir()
	host := filepath.Join(other, "host")
	const content = "host data\n"
	for _, tc := range []struct {
		name   string
		setup  func(p string) // makes what lies at p
		path   func(p string) string
		errHas string
	}{
		{"new", func(string) {}, nil, ""},
		{"existing", func(p string) { os.WriteFile(p, []byte("old trace\n"), 0o644) }, nil, ""},
		{"symlink", func(p string) { os.Symlink(host, p) }, nil, "is a symbolic link"},
		{"dangling-symlink", func(p string) { os.Symlink(filepath.Join(other, "new"), p) }, nil, "is a symbolic link"},
		{"hard-link", func(p string) { os.Link(host, p) }, nil, "hard links"},
		{"fifo", func(p string) { syscall.Mkfifo(p, 0o644) }, nil, "no such device"},
		{"directory", func(p string) { os.Mkdir(p, 0o755) }, nil, "is a directory"},
		{"dir-link-in-root", func(p string) { os.Symlink(other, p) },
			func(p string) string { return filepath.Join(p, "t.jsonl") }, "is a symbolic link inside the writable root " + root},
		{"empty", func(string) {}, func(string) string { return "" }, "empty path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, tc.name)
			tc.setup(p)
			if tc.path != nil {
				p = tc.path(p)
			}
			var roots []string
			if tc.name == "dir-link-in-root" {
				roots = []string{root}
			}
			f, err := createOutput("--trace", p, roots)
			if b, _ := os.ReadFile(host); string(b) != content {
				t.Errorf("host file is now %q", b)
			}
			if ents, _ := os.ReadDir(other); len(ents) != 1 {
				t.Errorf("%s holds %d entries, want only host", other, len(ents))
			}
			if tc.errHas != "" {
				if f != nil {
					f.Close()
				}
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.HasPrefix(err.Error(), "--trace") {
					t.Fatalf("err %v, want one starting --trace containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("x\n"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if b, _ := os.ReadFile(p); string(b) != "x\n" {
				t.Errorf("%s holds %q, want the new content only", p, b)
			}
		})
	}
}

// TestOutputPathOutsideRoots: a symlink that is not in a writable root (the
// operator's, e.g. /var/run -> /run) is followed as usual.
func TestOutputPathOutsideRoots(t *testing.T) {
	root, other, dest := t.TempDir(), t.TempDir(), t.TempDir()
	link := filepath.Join(other, "link")
	if err := os.Symlink(dest, link); err != nil {
		t.Fatal(err)
	}
	f, err := createOutput("--trace", filepath.Join(link, "t.jsonl"), []string{root})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Stat(filepath.Join(dest, "t.jsonl")); err != nil {
		t.Fatal(err)
	}
}

// TestOutputInsideRoot: an output inside a writable or scratch root is
// refused, however it is reached (red team, round 50): the program could
// rename its directory and leave a forgery at the path. Nothing is
// created.
func TestOutputInsideRoot(t *testing.T) {
	root, scratch, other := t.TempDir(), t.TempDir(), t.TempDir()
	link := filepath.Join(other, "link") // the operator's link into the root
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, root string }{
		{"in-root", filepath.Join(root, "t.jsonl"), root},
		{"in-subdir", filepath.Join(root, "a", "..", "t.jsonl"), root},
		{"the-root", root, root},
		{"via-operator-link", filepath.Join(link, "t.jsonl"), root},
		{"in-scratch", filepath.Join(scratch, "t.jsonl"), scratch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := createOutput("--trace", tc.path, []string{root, scratch})
			if err == nil {
				f.Close()
				t.Fatalf("created %s", tc.path)
			}
			if want := "is inside the writable root " + tc.root; !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v, want it to say %q", err, want)
			}
		})
	}
	for _, d := range []string{root, scratch} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("%s holds %v", d, ents)
		}
	}
}

// TestCreateOutputOwnStream: --trace /dev/stderr (and /dev/fd/N) writes to
// tracecell's own fd, a link the operator gave, appending.
func TestCreateOutputOwnStream(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := "/dev/fd/" + strconv.Itoa(int(w.Fd()))
	f, err := createOutput("--trace", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	f.WriteString("line\n")
	f.Close()
	b, _ := io.ReadAll(r)
	if string(b) != "line\n" {
		t.Fatalf("read %q from the pipe", b)
	}
	for _, p := range []string{"/dev/fd/", "/dev/fd/x", "/dev/stdin2", "/proc/self/fdx/1"} {
		if isOwnStream(p) {
			t.Errorf("isOwnStream(%q)", p)
		}
	}
}

// TestCPUProfileNewFileOnly: TRACECELL_CPUPROFILE may reach tracecell from
// an environment the operator did not write (an agent framework's), so it
// creates a new file and never overwrites one: an existing file, a symlink
// to one and a hard link to one all keep their content.
func TestCPUProfileNewFileOnly(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	const content = "host data\n"
	if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// The hard link is made after the plain file's case: a file with two
	// links is refused by the overwrite rules as well.
	link, hard := filepath.Join(dir, "link"), filepath.Join(dir, "hard")
	if err := os.Symlink(host, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{host, link, hard} {
		if p == hard {
			if err := os.Link(host, hard); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Setenv("TRACECELL_CPUPROFILE", p)
			var stderr strings.Builder
			startProfile(&stderr)()
			if b, err := os.ReadFile(host); err != nil || string(b) != content {
				t.Fatalf("the host file holds %.40q (%v) after a profile to %s", b, err, p)
			}
			if !strings.Contains(stderr.String(), "TRACECELL_CPUPROFILE "+p+": ") {
				t.Errorf("no error naming the variable and the path: %q", stderr.String())
			}
		})
	}
	t.Run("new", func(t *testing.T) {
		p := filepath.Join(dir, "cpu.prof")
		t.Setenv("TRACECELL_CPUPROFILE", p)
		var stderr strings.Builder
		startProfile(&stderr)()
		if st, err := os.Stat(p); err != nil || st.Size() == 0 || stderr.Len() != 0 {
			t.Errorf("a new profile: %v, %v, stderr %q", st, err, stderr.String())
		}
	})
}
