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
// (red team, round 63). A link on the way is followed only when it is the
// system's own (owned by root or this user, in a directory no other user
// may write).
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
		v := filepath.Join(base, "victim")
		if err := os.Mkdir(v, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(v, mode); err != nil {
			t.Fatal(err)
		}
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
		os.Mkdir(w, 0o755)
		if err := os.Symlink(v, filepath.Join(w, "tracecell")); err != nil {
			t.Fatal(err)
		}
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
		os.Mkdir(vartmp, 0o755)
		os.Chmod(vartmp, 0o777|os.ModeSticky)
		link := filepath.Join(vartmp, "tracecell-0")
		if err := os.Symlink(v, link); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(link, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := newServerAt(t, link)
		refused(t, err, link+" is a symbolic link")
		untouched(t, v, 0o777|os.ModeSticky)

		// The same link one level up: the state directory below it.
		_, err = newServerAt(t, filepath.Join(link, "state"))
		refused(t, err, link+" is a symbolic link owned by uid 65534")
		untouched(t, v, 0o777|os.ModeSticky)
	})

	t.Run("own link in a directory others may write", func(t *testing.T) {
		base := t.TempDir()
		v := victimDir(t, base, 0o755)
		shared := filepath.Join(base, "shared")
		os.Mkdir(shared, 0o755)
		os.Chmod(shared, 0o777|os.ModeSticky)
		link := filepath.Join(shared, "p")
		if err := os.Symlink(v, link); err != nil {
			t.Fatal(err)
		}
		_, err := newServerAt(t, filepath.Join(link, "state"))
		refused(t, err, link+" is a symbolic link in a directory other users may write")
		untouched(t, v, 0o755)
	})

	t.Run("system link on the way followed", func(t *testing.T) {
		// /var/run -> /run: a link of this user in this user's 0755
		// directory; the state directory is made below its target.
		base := t.TempDir()
		real := filepath.Join(base, "run")
		os.Mkdir(real, 0o755)
		if err := os.Symlink("run", filepath.Join(base, "varrun")); err != nil {
			t.Fatal(err)
		}
		s, err := newServerAt(t, filepath.Join(base, "varrun", "a", "state"))
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(real, "a", "state")
		if r, _ := filepath.EvalSymlinks(want); s.opts.StateDir != r {
			t.Errorf("state directory %s, want %s (resolved)", s.opts.StateDir, r)
		}
		for _, d := range []string{filepath.Join(real, "a"), want} {
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
