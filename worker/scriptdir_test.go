package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	t.Setenv("TMPDIR", t.TempDir())
	d, err := makeScriptDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(d)
	want := scriptDirPrefix + strconv.Itoa(os.Getpid()) + "-"
	if b := filepath.Base(d); len(b) <= len(want) || b[:len(want)] != want {
		t.Errorf("script dir %s, want a name starting %s", b, want)
	}
}
