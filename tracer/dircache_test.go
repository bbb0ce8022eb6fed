package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
)

// The walk cache (pathres.DirCache) never lets a path be decided or
// reported by where a directory used to be: a cached directory that the
// tree renames away and replaces with a symlink is walked again, whether
// the symlink leads outside (denied, ground truth on disk) or back to the
// same directory under its new name (the report names the new name).
func TestDirCacheAfterRenames(t *testing.T) {
	needPython(t)
	sbx, host := t.TempDir(), t.TempDir()
	realSbx, _ := filepath.EvalSymlinks(sbx)
	realHost, _ := filepath.EvalSymlinks(host)
	script := `
import os, sys
os.mkdir("d"); open("d/a", "w").close()
os.rename("d", "e")
os.symlink(sys.argv[1], "d")
try:
    open("d/b", "w").close(); print("escaped")
except PermissionError:
    print("denied")
os.mkdir("f"); open("f/a", "w").close()
os.rename("f", "g"); os.symlink("g", "f")
open(os.path.abspath("f/c"), "w").close()
print("done")
`
	o := runTraced(t, sbx, func(_ *policy.Config, c *Config) { c.TraceAll = true }, python, "-c", script, realHost)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.stdout != "denied\ndone\n" {
		t.Fatalf("stdout %q, stderr %q", o.stdout, o.stderr)
	}
	if _, err := os.Lstat(filepath.Join(realHost, "b")); err == nil {
		t.Fatal("a file was created outside the sandbox")
	}
	var denied, created *report.Event
	for i := range o.events {
		e := &o.events[i]
		if len(e.Paths) == 0 {
			continue
		}
		switch {
		case strings.HasSuffix(e.Paths[0].Given, "d/b"):
			denied = e
		case strings.HasSuffix(e.Paths[0].Given, "f/c"):
			created = e
		}
	}
	if denied == nil || denied.Paths[0].Resolved != filepath.Join(realHost, "b") {
		t.Errorf("denial of d/b: %+v", denied)
	}
	if created == nil || created.Paths[0].Resolved != filepath.Join(realSbx, "g", "c") {
		t.Errorf("create of f/c: %+v, want resolved %s", created, filepath.Join(realSbx, "g", "c"))
	}
}
