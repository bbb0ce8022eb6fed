package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRemoveStaleScriptDirs: directories of gone worker-hosts are removed,
// those of live ones (and everything else in TMPDIR) are kept.
func TestRemoveStaleScriptDirs(t *testing.T) {
	tmp := t.TempDir()
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := gone.Process.Pid // reaped: no such process (barring reuse within the test)
	mk := func(name string, age time.Duration) string {
		p := filepath.Join(tmp, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "worker.py"), []byte("#"), 0o600); err != nil {
			t.Fatal(err)
		}
		if age > 0 {
			old := time.Now().Add(-age)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	outside := t.TempDir()
	cases := []struct {
		name string
		path string
		kept bool
	}{
		{"dead host", mk(scriptDirPrefix+strconv.Itoa(deadPid)+"-123", 0), false},
		{"live host", mk(scriptDirPrefix+strconv.Itoa(os.Getpid())+"-456", 0), true},
		{"old naming, old", mk(scriptDirPrefix+"789", 2*staleUnnamedAge), false},
		{"old naming, recent", mk(scriptDirPrefix+"790", 0), true},
		{"other name", mk("tracecell-other-1-2", 2*staleUnnamedAge), true},
	}
	link := filepath.Join(tmp, scriptDirPrefix+strconv.Itoa(deadPid)+"-link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	removeStaleScriptDirs(tmp, time.Now())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := os.Stat(c.path)
			if kept := err == nil; kept != c.kept {
				t.Errorf("%s: kept=%v, want %v", filepath.Base(c.path), kept, c.kept)
			}
		})
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("a symlink with the prefix was removed: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the symlink's target was touched: %v", err)
	}
}

// TestScriptDirNamedByPid: the directory names its host, so a later host
// can tell whether it is stale.
func TestScriptDirNamedByPid(t *testing.T) {
	b := scriptDirName()
	want := scriptDirPrefix + strconv.Itoa(os.Getpid()) + "-"
	if len(b) <= len(want) || b[:len(want)] != want {
		t.Errorf("script dir %s, want a name starting %s", b, want)
	}
	if b == scriptDirName() {
		t.Errorf("two script dir names are the same: %s", b)
	}
}

// TestPickScriptBase: the directory for worker.py never goes where the tree
// can write (a writable root or scratch directory containing TMPDIR, also
// through a symlink), nor under a deny-read path; the next base is taken,
// and with none left the error names the bases and what to do.
func TestPickScriptBase(t *testing.T) {
	rw := t.TempDir()
	inRW := filepath.Join(rw, "tmp")
	safe := t.TempDir()
	linkToRW := filepath.Join(safe, "link")
	for _, err := range []error{os.Mkdir(inRW, 0o700), os.Symlink(inRW, linkToRW)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	safeR, _ := filepath.EvalSymlinks(safe)
	rwR, _ := filepath.EvalSymlinks(rw)
	cases := []struct {
		name       string
		bases      []string
		writable   []string
		unreadable []string
		want       string // "" = error
	}{
		{"first is safe", []string{safe, inRW}, []string{rwR}, nil, safeR},
		{"TMPDIR in a writable root", []string{inRW, safe}, []string{rwR}, nil, safeR},
		{"TMPDIR is a writable root", []string{rw, safe}, []string{rwR}, nil, safeR},
		{"TMPDIR a symlink into a writable root", []string{linkToRW, safe}, []string{rwR}, nil, safeR},
		{"TMPDIR in scratch", []string{inRW, safe}, []string{"/dev/shm", rwR}, nil, safeR},
		{"TMPDIR deny-read", []string{safe, rw}, nil, []string{safeR}, rwR},
		{"relative and missing skipped", []string{"tmp", filepath.Join(safe, "missing"), safe}, nil, nil, safeR},
		{"none left", []string{inRW, rw}, []string{rwR}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := pickScriptBase(c.bases, c.writable, c.unreadable)
			if c.want == "" {
				if err == nil || !strings.Contains(err.Error(), "set TMPDIR") || !strings.Contains(err.Error(), inRW) {
					t.Errorf("got %q, %v; want an error naming %s and saying what to do", got, err, inRW)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("got %q, %v; want %s", got, err, c.want)
			}
		})
	}
}

// TestWriteScriptNeverFollows: whatever is already at the directory's name
// or (in a directory that is not private) at worker.py is never written
// through: a symlink to a victim file leaves the victim as it was.
func TestWriteScriptNeverFollows(t *testing.T) {
	tmp := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("VICTIM"), 0o644); err != nil {
		t.Fatal(err)
	}
	victimDir := t.TempDir()
	linkDir := filepath.Join(tmp, "linkdir")
	if err := os.Symlink(victimDir, linkDir); err != nil {
		t.Fatal(err)
	}
	openDir := filepath.Join(tmp, "open")
	if err := os.Mkdir(openDir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(openDir, 0o777)
	if err := os.Symlink(victim, filepath.Join(openDir, "worker.py")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir string }{
		{"directory name is a symlink", linkDir},
		{"directory exists, worker.py a symlink", openDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p, err := writeScript(c.dir, []byte("print(1)\n")); err == nil {
				t.Errorf("wrote %s", p)
			}
		})
	}
	if b, _ := os.ReadFile(victim); string(b) != "VICTIM" {
		t.Errorf("victim now %q", b)
	}
	if ents, _ := os.ReadDir(victimDir); len(ents) != 0 {
		t.Errorf("wrote into the symlinked directory: %v", ents)
	}
	// What was there is left alone (never removed as if it were ours).
	if _, err := os.Lstat(filepath.Join(openDir, "worker.py")); err != nil {
		t.Errorf("the entry that was there was removed: %v", err)
	}
	if _, err := os.Lstat(linkDir); err != nil {
		t.Errorf("the symlink that was there was removed: %v", err)
	}
	p, err := writeScript(filepath.Join(tmp, "fresh"), []byte("print(1)\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "print(1)\n" {
		t.Errorf("%s holds %q", p, b)
	}
	if st, _ := os.Stat(filepath.Dir(p)); st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", st.Mode().Perm())
	}
}
