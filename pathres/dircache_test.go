package pathres

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestDirCache(t *testing.T) {
	root := realTempDir(t)
	must := func(err error) { t.Helper(); mustOK(t, err) }
	must(os.MkdirAll(root+"/a/b/c", 0o755))
	must(os.WriteFile(root+"/a/b/c/f", nil, 0o644))
	must(os.MkdirAll(root+"/other/b/c", 0o755))
	self := Task{Tgid: os.Getpid()}
	resolve := func(c *DirCache, p string) Result {
		t.Helper()
		r, err := ResolveCached(self, "/", p, true, c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	c := NewDirCache(64)
	if r := resolve(c, root+"/a/b/c/f"); r.Path != root+"/a/b/c/f" || !r.Exists {
		t.Fatalf("first walk: %+v", r)
	}
	t.Run("skips to the deepest directory", func(t *testing.T) {
		cur, rest := c.skip("/", root+"/a/b/c/f")
		if cur != root+"/a/b/c" || rest != "/f" {
			t.Fatalf("skip = %q, %q; want %q, %q", cur, rest, root+"/a/b/c", "/f")
		}
		// Relative to a cached base, and never the last component.
		if cur, rest := c.skip(root, "a/b"); cur != root+"/a" || rest != "/b" {
			t.Fatalf("skip(root, a/b) = %q, %q", cur, rest)
		}
		if cur, rest := c.skip(root, "a/./b/c/f"); cur != root+"/a" || rest != "/./b/c/f" {
			t.Fatalf("skip stops at a dot: %q, %q", cur, rest)
		}
	})
	t.Run("skip forms", func(t *testing.T) {
		for _, tc := range []struct{ cur, rest, wantCur, wantRest string }{
			{"/", root + "/a/b/c/f", root + "/a/b/c", "/f"},
			{"/", root[1:] + "/a/b/c/f", root + "/a/b/c", "/f"}, // rest without its leading slash
			{root, "a/b/c/f", root + "/a/b/c", "/f"},
			{root, "/a/b/c/f", root, "/a/b/c/f"},                      // "//" after cur: no skip
			{"/", root + "/a//b/c/f", root + "/a", "//b/c/f"},         // stops at "//"
			{"/", root + "/a/b/c/f/", root + "/a/b/c", "/f/"},         // never past the last component...
			{"/", root + "/a/b/c//", root + "/a/b", "/c//"},           // ...with slashes after it
			{"/", root + "/a/b/../b/c/f", root + "/a/b", "/../b/c/f"}, // nor past ".."
			{root + "/a", "b/c/f", root + "/a/b/c", "/f"},
			{root + "/a/b/c", "f", root + "/a/b/c", "f"}, // only the last component
			{"/", root + "/a/b/c", root + "/a/b", "/c"},
			{"/", root + "/zz/b/c/f", root, "/zz/b/c/f"}, // nothing cached there
		} {
			cur, rest := c.skip(tc.cur, tc.rest)
			if cur != tc.wantCur || rest != tc.wantRest {
				t.Errorf("skip(%q, %q) = %q, %q; want %q, %q", tc.cur, tc.rest, cur, rest, tc.wantCur, tc.wantRest)
			}
		}
	})
	t.Run("a directory replaced by a symlink is walked again", func(t *testing.T) {
		must(os.Rename(root+"/a/b", root+"/b-moved"))
		must(os.Symlink(root+"/other/b", root+"/a/b"))
		defer func() {
			must(os.Remove(root + "/a/b"))
			must(os.Rename(root+"/b-moved", root+"/a/b"))
		}()
		r := resolve(c, root+"/a/b/c/f")
		if r.Path != root+"/other/b/c/f" || r.Exists {
			t.Fatalf("got %+v, want the missing %s", r, root+"/other/b/c/f")
		}
	})
	t.Run("a directory replaced by a file fails the walk", func(t *testing.T) {
		resolve(c, root+"/a/b/c/f") // cache the directories again
		must(os.Rename(root+"/a/b/c", root+"/c-moved"))
		must(os.WriteFile(root+"/a/b/c", nil, 0o644))
		defer func() {
			must(os.Remove(root + "/a/b/c"))
			must(os.Rename(root+"/c-moved", root+"/a/b/c"))
		}()
		if r := resolve(c, root+"/a/b/c/f"); r.WalkErr != syscall.ENOTDIR {
			t.Fatalf("got %+v, want walk error ENOTDIR", r)
		}
	})
	t.Run("moved with a symlink left behind: same directory, old name until Reset", func(t *testing.T) {
		// The documented limit: the tracer resets the cache on every
		// rename the tree makes, so only an outside process can do this.
		resolve(c, root+"/a/b/c/f")
		must(os.Rename(root+"/a/b", root+"/b-moved"))
		must(os.Symlink(root+"/b-moved", root+"/a/b"))
		defer func() {
			must(os.Remove(root + "/a/b"))
			must(os.Rename(root+"/b-moved", root+"/a/b"))
		}()
		if r := resolve(c, root+"/a/b/c/f"); r.Path != root+"/a/b/c/f" {
			t.Fatalf("got %+v", r)
		}
		c.Reset()
		if r := resolve(c, root+"/a/b/c/f"); r.Path != root+"/b-moved/c/f" {
			t.Fatalf("after Reset: got %+v", r)
		}
	})
	t.Run("never /proc", func(t *testing.T) {
		c := NewDirCache(64)
		// An fd of the test's own, not fd 0: a console the kernel opened
		// before /dev was mounted over (the arm64 VM's initramfs) is no
		// longer named by its text, and resolving it fails.
		f, err := os.CreateTemp(t.TempDir(), "fd")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		resolve(c, fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
		resolve(c, "/proc/sys/kernel/ostype")
		for p := range c.m {
			if strings.HasPrefix(p, "/proc") {
				t.Errorf("cached %s", p)
			}
		}
	})
	t.Run("bounded", func(t *testing.T) {
		c := NewDirCache(2)
		resolve(c, root+"/a/b/c/f")
		if c.Len() > 2 {
			t.Fatalf("holds %d, max 2", c.Len())
		}
	})
}

// BenchmarkResolveCached prices the walk of a checked create in a sandbox
// directory already walked (the common case: a program writing many files):
// one stat of the cached directory and one lstat of the missing name.
func BenchmarkResolveCached(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(root+"/out/run", 0o755); err != nil {
		b.Fatal(err)
	}
	self := Task{Tgid: os.Getpid()}
	// A directory fd: the walk through its /proc magic link (an *at call
	// given "/proc/self/fd/N/new.csv", or a dirfd's own path).
	dir, err := os.Open(root + "/out/run")
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	for _, bc := range []struct{ name, base, p string }{
		{"absolute", "/", root + "/out/run/new.csv"},
		{"relative", root + "/out/run", "new.csv"},
		{"procfd", "/", fmt.Sprintf("/proc/self/fd/%d/new.csv", dir.Fd())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := NewDirCache(64)
			p := bc.p
			if _, err := ResolveCached(self, "/", root+"/out/run/x", false, c); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				r, err := ResolveCached(self, bc.base, p, false, c)
				if err != nil || r.Exists {
					b.Fatal(r, err)
				}
			}
		})
	}
}
