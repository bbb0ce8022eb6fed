package tracer

import (
	"fmt"
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
	sbx, realSbx, realHost := pythonSandboxAndHost(t)
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
	for _, noFreeze := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-freeze=%v", noFreeze), func(t *testing.T) {
			checkRenamesRun(t, sbx, realSbx, realHost, script, noFreeze)
		})
	}
}

func checkRenamesRun(t *testing.T, sbx, realSbx, realHost, script string, noFreeze bool) {
	clearDir(t, sbx)
	o := runTraced(t, sbx, func(_ *policy.Config, c *Config) { c.TraceAll, c.NoFreeze = true, noFreeze }, python, "-c", script, realHost)
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

// The remembered cwd (base) follows every way the tree can move it: chdir,
// fchdir, a chdir by another thread sharing the cwd, a rename of the cwd.
// Ground truth: nothing appears outside the sandbox, and each create is
// reported where it really happened.
func TestRememberedCwd(t *testing.T) {
	sbx, realSbx, realHost := pythonSandboxAndHost(t)
	script := `
import os, sys, threading
out = sys.argv[1]
def create(name):
    try:
        open(name, "w").close(); print(name, "created")
    except PermissionError:
        print(name, "denied")
os.mkdir("a"); os.chdir("a"); create("p1")
os.chdir(out); create("p2")
os.chdir(sys.argv[2]); create("p3")
fd = os.open(out, os.O_RDONLY); os.fchdir(fd); create("p4")
os.chdir(sys.argv[2]); create("p5")
t = threading.Thread(target=os.chdir, args=(out,)); t.start(); t.join()
create("p6")
os.chdir(sys.argv[2] + "/a"); create("p7")
os.rename(sys.argv[2] + "/a", sys.argv[2] + "/b"); create("p8")
`
	for _, noFreeze := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-freeze=%v", noFreeze), func(t *testing.T) {
			checkCwdRun(t, sbx, realSbx, realHost, script, noFreeze)
		})
	}
}

func checkCwdRun(t *testing.T, sbx, realSbx, realHost, script string, noFreeze bool) {
	clearDir(t, sbx)
	o := runTraced(t, sbx, func(_ *policy.Config, c *Config) { c.TraceAll, c.NoFreeze = true, noFreeze }, python, "-c", script, realHost, realSbx)
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := "p1 created\np2 denied\np3 created\np4 denied\np5 created\np6 denied\np7 created\np8 created\n"
	if o.stdout != want {
		t.Fatalf("stdout %q, want %q; stderr %q", o.stdout, want, o.stderr)
	}
	if ents, _ := os.ReadDir(realHost); len(ents) > 0 {
		t.Fatalf("created outside the sandbox: %v", ents)
	}
	where := map[string]string{
		"p1": realSbx + "/a/p1", "p2": realHost + "/p2", "p3": realSbx + "/p3", "p4": realHost + "/p4",
		"p5": realSbx + "/p5", "p6": realHost + "/p6", "p7": realSbx + "/a/p7", "p8": realSbx + "/b/p8",
	}
	seen := 0
	for _, e := range o.events {
		if len(e.Paths) == 0 || e.Syscall == "chdir" || e.Syscall == "fchdir" {
			continue
		}
		if w, ok := where[e.Paths[0].Given]; ok && e.Kind.String() == "create" {
			seen++
			if e.Paths[0].Resolved != w {
				t.Errorf("%s resolved to %s, want %s", e.Paths[0].Given, e.Paths[0].Resolved, w)
			}
		}
	}
	if seen != len(where) {
		t.Errorf("%d of %d creates reported", seen, len(where))
	}
	for _, p := range []string{"/b/p1", "/p3", "/p5", "/b/p7", "/b/p8"} {
		if _, err := os.Stat(realSbx + p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// pythonSandboxAndHost skips without python and returns a fresh sandbox
// (as given and resolved) and a fresh resolved host directory outside it.
func pythonSandboxAndHost(t *testing.T) (sbx, realSbx, realHost string) {
	t.Helper()
	needPython(t)
	sbx = t.TempDir()
	var err error
	if realSbx, err = filepath.EvalSymlinks(sbx); err == nil {
		realHost, err = filepath.EvalSymlinks(t.TempDir())
	}
	if err != nil {
		t.Fatal(err)
	}
	return sbx, realSbx, realHost
}

// clearDir empties dir (a sandbox reused by subtests).
func clearDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// A relative walk's base must name its directory by a path without
// symlinks, or the walk cache would record directories reached through a
// symlink under a name inside the sandbox (found by review: a write
// anywhere). Two bases that do not: an O_PATH fd of a symlink used as a
// dirfd (read as the symlink's own path) and a removed cwd (read as its old
// path plus " (deleted)", a name the tree then gives to a symlink). Each
// first makes a relative call from that base (which the kernel fails), then
// writes through the same name as an absolute path.
func TestCacheBaseIsVerified(t *testing.T) {
	for name, poison := range map[string]string{
		"O_PATH fd of a symlink as dirfd": `
os.symlink("/", S + "/l")
fd = os.open(S + "/l", os.O_PATH | os.O_NOFOLLOW)
try:
    os.open(first + "/x", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
except OSError as e:
    print("first", e.errno)
via = S + "/l"
`,
		"removed cwd renamed as a symlink": `
os.mkdir(S + "/a"); os.chdir(S + "/a"); os.rmdir(S + "/a")
os.symlink("/", S + "/a (deleted)")
try:
    os.open(first + "/x", os.O_WRONLY | os.O_CREAT)
except OSError as e:
    print("first", e.errno)
via = S + "/a (deleted)"
`,
	} {
		t.Run(name, func(t *testing.T) {
			sbx, realSbx, realHost := pythonSandboxAndHost(t)
			target := filepath.Join(realHost, "d", "f")
			if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			script := "import os, sys\nS, TARGET = sys.argv[1], sys.argv[2]\nfirst = TARGET.lstrip('/').split('/')[0]\n" + poison + `
try:
    open(via + TARGET, "w").write("escaped")
    print("escaped")
except PermissionError:
    print("denied")
`
			o := runTraced(t, sbx, nil, python, "-c", script, realSbx, target)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if !strings.HasSuffix(o.stdout, "denied\n") {
				t.Errorf("stdout %q, stderr %q", o.stdout, o.stderr)
			}
			if _, err := os.Lstat(target); err == nil {
				t.Fatalf("%s was written from the sandbox", target)
			}
			found := false
			for _, d := range o.res.Denials {
				if len(d.Paths) > 0 && d.Paths[0].Resolved == target {
					found = true
				}
			}
			if !found {
				t.Errorf("no denial names %s: %+v", target, o.res.Denials)
			}
		})
	}
}

// The walk cache and the remembered cwds are used only when every checked
// call runs with the tree frozen: in audit and --no-freeze runs a rename
// under way could meet a walk, and one won race would stay in the cache.
func TestDirCacheOnlyWhenFrozen(t *testing.T) {
	for _, c := range []struct {
		mode     policy.Mode
		noFreeze bool
		want     bool
	}{
		{policy.Enforce, false, true},
		{policy.Enforce, true, false},
		{policy.Audit, false, false},
	} {
		pol, err := policy.New(policy.Config{WriteRoots: []string{t.TempDir()}, Mode: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		if got := newDirCache(&Config{Policy: pol, NoFreeze: c.noFreeze}) != nil; got != c.want {
			t.Errorf("mode %v, no-freeze %v: cache %v, want %v", c.mode, c.noFreeze, got, c.want)
		}
	}
}

// TestInFlightKeepsCacheOff: while any task has a call left to finish
// unfrozen the walk cache is off, and it comes back once every such call
// has ended or its task is gone (a count, not a scan of every task).
func TestInFlightKeepsCacheOff(t *testing.T) {
	tr := newTracer(&Config{Policy: mustPolicy(t)}, 0)
	if tr.dirs == nil {
		t.Skip("no walk cache in this configuration")
	}
	a := tr.tree.add(noTid, noTid)
	b := tr.tree.add(noTid+1, noTid)
	steps := []struct {
		name string
		do   func()
		on   bool
	}{
		{"none in flight", func() {}, true},
		{"a in flight", func() { tr.tree.setInFlight(a, true) }, false},
		{"a set twice", func() { tr.tree.setInFlight(a, true) }, false},
		{"b in flight too", func() { tr.tree.setInFlight(b, true) }, false},
		{"a ends", func() { tr.tree.setInFlight(a, false) }, false},
		{"b removed while in flight", func() { tr.removeTask(b.tid) }, true},
		{"a again, then its tid reused", func() {
			tr.tree.setInFlight(a, true)
			tr.tree.add(noTid, noTid)
		}, true},
	}
	for _, s := range steps {
		s.do()
		if on := tr.dirCache() != nil; on != s.on {
			t.Fatalf("%s: cache on=%v, want %v (inFlightN=%d)", s.name, on, s.on, tr.tree.inFlightN)
		}
	}
	if tr.tree.inFlightN != 0 {
		t.Fatalf("inFlightN = %d at the end, want 0", tr.tree.inFlightN)
	}
}
