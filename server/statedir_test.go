package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestStateDirPlantedLink: a symlink at the state directory's path, which
// another user or a sandboxed tree of an earlier run could have made, is
// never followed: `tracecell serve` as root chmodded the link's target 0700
// (a 1777 /tmp lost its sticky bit) and filled it with cells/ and sbx-*
// (red team, round 63). No link on the way is followed either, and no
// directory on it may let another user move the state directory away
// (round 64).
func TestStateDirPlantedLink(t *testing.T) {
	newServerAt := func(t *testing.T, state string) (*Server, error) {
		t.Helper()
		s, err := New(Options{StateDir: state, Starter: (&fakeStarter{}).start, PoolSize: -1, IdleTimeout: -1, Log: zerolog.Nop()})
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	victimDir := func(t *testing.T, base string, mode os.FileMode) string {
		t.Helper()
		v := dirMode(t, filepath.Join(base, "victim"), mode)
		if err := os.WriteFile(filepath.Join(v, "host.txt"), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return v
	}
	untouched := func(t *testing.T, v string, mode os.FileMode) {
		t.Helper()
		st, err := os.Stat(v)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&(os.ModePerm|os.ModeSticky) != mode {
			t.Errorf("the link's target %s became %v, was %v", v, st.Mode(), mode)
		}
		ents, _ := os.ReadDir(v)
		if len(ents) != 1 {
			t.Errorf("the server wrote into the link's target: %v", ents)
		}
	}
	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--state-dir") {
			t.Fatalf("err = %v, want a refusal naming %q and --state-dir", err, want)
		}
	}

	t.Run("last component a link", func(t *testing.T) {
		// The repro: XDG_STATE_HOME=w, where a tree confined to w made
		// w/tracecell -> victim. No --write of this server overlaps.
		base := t.TempDir()
		v := victimDir(t, base, 0o755)
		w := filepath.Join(base, "w")
		dirMode(t, w, 0o755)
		plantLink(t, v, filepath.Join(w, "tracecell"))
		_, err := newServerAt(t, filepath.Join(w, "tracecell"))
		refused(t, err, filepath.Join(w, "tracecell")+" is a symbolic link")
		untouched(t, v, 0o755)
	})

	t.Run("link of another user in a sticky directory", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a link of another uid")
		}
		// The default /var/tmp/tracecell-0 planted by nobody, pointing
		// at a 1777 directory (a /tmp).
		base := t.TempDir()
		v := victimDir(t, base, 0o777|os.ModeSticky)
		vartmp := filepath.Join(base, "vartmp")
		dirMode(t, vartmp, 0o777|os.ModeSticky)
		link := filepath.Join(vartmp, "tracecell-0")
		plantLink(t, v, link)
		if err := os.Lchown(link, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := newServerAt(t, link)
		refused(t, err, link+" belongs to uid 65534, who made it first in the shared directory "+vartmp+": remove it")
		untouched(t, v, 0o777|os.ModeSticky)
		_, err = newServerAt(t, filepath.Join(link, "state"))
		refused(t, err, link+" belongs to uid 65534")
		untouched(t, v, 0o777|os.ModeSticky)

		// A directory another user made there first (squatting
		// /var/tmp/tracecell-0): refused, the message naming it.
		squat := filepath.Join(vartmp, "tracecell-1")
		dirMode(t, squat, 0o777)
		os.Chown(squat, 65534, 65534)
		_, err = newServerAt(t, squat)
		refused(t, err, squat+" belongs to uid 65534, who made it first")
	})

	t.Run("own link on the way", func(t *testing.T) {
		// A tree that could write the home directory made ~/.local a
		// link on an earlier run; the state directory is
		// $XDG_STATE_HOME/tracecell = ~/.local/state/tracecell, and the
		// link's target holds a project named tracecell (round 64).
		base := t.TempDir()
		v := victimDir(t, base, 0o755)
		proj := filepath.Join(v, "state", "tracecell")
		os.MkdirAll(proj, 0o755)
		os.Chmod(proj, 0o755)
		home := filepath.Join(base, "home")
		dirMode(t, home, 0o755)
		link := filepath.Join(home, ".local")
		plantLink(t, v, link)
		_, err := newServerAt(t, filepath.Join(link, "state", "tracecell"))
		refused(t, err, link+" is a symbolic link (to \""+v+"\")")
		if st, _ := os.Stat(proj); st.Mode().Perm() != 0o755 {
			t.Errorf("the project behind the link became %v", st.Mode().Perm())
		}
		if ents, _ := os.ReadDir(proj); len(ents) != 0 {
			t.Errorf("the server wrote into the project behind the link: %v", ents)
		}
	})

	t.Run("a cells link inside the state directory", func(t *testing.T) {
		// The state directory is real, but a tree made its cells a link
		// to a host directory: the boot records would go there.
		base := t.TempDir()
		v := victimDir(t, base, 0o755)
		state := filepath.Join(base, "state")
		dirMode(t, state, 0o700)
		plantLink(t, v, filepath.Join(state, "cells"))
		_, err := newServerAt(t, state)
		refused(t, err, filepath.Join(state, "cells")+" is a symbolic link")
		untouched(t, v, 0o755)
	})

	t.Run("a directory of another user on the way", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a directory of another uid")
		}
		// nobody owns the parent: it could rename the (root's, 0700)
		// state directory away and put a link in its place while a root
		// server runs (round 64).
		base := t.TempDir()
		alice := filepath.Join(base, "alice")
		dirMode(t, alice, 0o755)
		if err := os.Chown(alice, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := newServerAt(t, filepath.Join(alice, "tc"))
		refused(t, err, alice+" belongs to uid 65534")
		if _, err := os.Lstat(filepath.Join(alice, "tc")); err == nil {
			t.Error("the state directory was made under another user's directory")
		}
	})

	t.Run("a directory others may write on the way", func(t *testing.T) {
		base := t.TempDir()
		shared := filepath.Join(base, "shared")
		dirMode(t, shared, 0o777) // no sticky bit: anyone may rename what is in it
		_, err := newServerAt(t, filepath.Join(shared, "state", "sd"))
		refused(t, err, shared+" may be written by other users")
		// Refused before anything is made in it (round 65).
		if _, err := os.Lstat(filepath.Join(shared, "state")); err == nil {
			t.Error("the refused walk made a directory in the shared directory")
		}
	})

	t.Run("a sticky directory like /var/tmp", func(t *testing.T) {
		base := t.TempDir()
		vartmp := filepath.Join(base, "vartmp")
		dirMode(t, vartmp, 0o777|os.ModeSticky)
		s, err := newServerAt(t, filepath.Join(vartmp, "a", "state"))
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(vartmp, "a", "state")
		if s.opts.StateDir != want {
			t.Errorf("state directory %s, want %s", s.opts.StateDir, want)
		}
		for _, d := range []string{filepath.Join(vartmp, "a"), want} {
			if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v %v, want a new 0700 directory", d, st, err)
			}
		}
	})

	t.Run("a file on the way", func(t *testing.T) {
		base := t.TempDir()
		f := filepath.Join(base, "f")
		os.WriteFile(f, nil, 0o644)
		_, err := newServerAt(t, filepath.Join(f, "state"))
		refused(t, err, f+" is not a directory")
	})
}

// dirMode makes the directory p with exactly mode (chmod after mkdir: the
// umask does not apply) and returns p.
func dirMode(t *testing.T, p string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// plantLink makes at a symbolic link to target and returns at.
func plantLink(t *testing.T, target, at string) string {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
	return at
}
