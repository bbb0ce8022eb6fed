package server

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestListenUnixPrivate: the socket is 0600 before it appears at its path
// (no window in which another user could connect), clients reach it by
// path, and nothing is left beside it; also for a path so long that the
// temporary one must be reached through /proc/self/fd.
func TestListenUnixPrivate(t *testing.T) {
	short := t.TempDir()
	// A path of 100 bytes: the temporary socket beside it would be longer
	// than the 107 a socket path may have.
	long := filepath.Join(short, strings.Repeat("d", 100-len(short)-len("//t.sock")))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir string }{{"short", short}, {"long", long}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(tc.dir, "t.sock")
			if len(path) > 107 {
				t.Fatalf("test path too long: %d", len(path))
			}
			called := false
			beforeLink = func() {
				called = true
				if _, err := os.Lstat(path); !os.IsNotExist(err) {
					t.Errorf("the socket is at %s before it is private: %v", path, err)
				}
				m, _ := filepath.Glob(filepath.Join(tc.dir, ".tracecell-bind-*", "s"))
				if len(m) != 1 {
					t.Fatalf("temporary socket: %v", m)
				}
				st, err := os.Lstat(m[0])
				if err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("temporary socket not yet 0600 before the link: %v %v", st.Mode(), err)
				}
				dst, _ := os.Lstat(filepath.Dir(m[0]))
				if dst.Mode().Perm() != 0o700 {
					t.Errorf("temporary directory mode %v, want 0700", dst.Mode())
				}
			}
			defer func() { beforeLink = func() {} }()
			ln, addr, cleanup, err := listen(Options{Listen: "unix:" + path})
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			defer ln.Close()
			if !called {
				t.Fatal("the socket was not bound privately first")
			}
			if addr != "unix:"+path {
				t.Errorf("addr %q", addr)
			}
			st, err := os.Lstat(path)
			if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
				t.Fatalf("socket at %s: %v %v", path, st.Mode(), err)
			}
			if n := st.Sys().(*syscall.Stat_t).Nlink; n != 1 {
				t.Errorf("socket has %d links, want 1 (the temporary one removed)", n)
			}
			if m, _ := filepath.Glob(filepath.Join(tc.dir, ".tracecell-bind-*")); len(m) != 0 {
				t.Errorf("left behind: %v", m)
			}
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Write([]byte("ok"))
					c.Close()
				}
			}()
			c, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			b := make([]byte, 2)
			if _, err := c.Read(b); err != nil || string(b) != "ok" {
				t.Fatalf("read %q %v", b, err)
			}
		})
	}
}

// TestListenUnixNoReplace: a file that appears at the path while the socket
// is being made is neither replaced nor removed, and the error says so.
func TestListenUnixNoReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.sock")
	beforeLink = func() {
		if err := os.WriteFile(path, []byte("someone else's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { beforeLink = func() {} }()
	ln, _, _, err := listen(Options{Listen: "unix:" + path})
	if err == nil {
		ln.Close()
		t.Fatal("listen replaced a file that appeared at its path")
	}
	if !strings.Contains(err.Error(), "appeared at the path") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the path and the cause", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "someone else's" {
		t.Errorf("the other file: %q %v", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".tracecell-bind-*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}
