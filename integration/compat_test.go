package integration

import (
	"path/filepath"
	"testing"
)

// TestCompat runs realistic agent scripts (testdata/compat: pandas, numpy,
// matplotlib, multiprocessing, threads, tempfile, sqlite3, zipfile) bare and
// under tracecell and wants the same output and the same files, byte for
// byte. The scripts are written to be reproducible: fixed random seeds,
// PYTHONHASHSEED=0 (matplotlib's font cache is built by iterating a set),
// a fixed SVG hash salt, PNGs saved without the matplotlib version, and
// archives with fixed timestamps. PNGs from Agg are byte-stable across runs
// given the same inputs, so they are compared by sha256 like everything else.
//
// Two libraries start helper programs during ordinary work: Python's
// platform.processor() (called while pandas is imported) runs `uname -p`,
// and matplotlib's font manager runs `fc-list`. --allow-exec defaults to
// none, so an operator running such code allows them, as this test does;
// without them the run still works but reports the blocked execs (covered by
// TestHelperExecsBlocked).
var helperExecs = []string{"--allow-exec", "uname", "--allow-exec", "fc-list"}

func TestCompat(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "compat", "*.py"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no compat scripts: %v", err)
	}
	for _, s := range scripts {
		t.Run(filepath.Base(s), func(t *testing.T) {
			t.Parallel()
			sameAsBare(t, helperExecs, python, s)
		})
	}
}

// TestHelperExecsBlocked: without --allow-exec the helper programs are
// blocked and reported, and pandas still works (platform.processor() falls
// back when uname cannot run).
func TestHelperExecsBlocked(t *testing.T) {
	sb := realDir(t)
	r := runTraced(t, sb, runEnv(t, sb), nil, python, "-c", "import platform; platform.processor(); print('ok')")
	if r.status != 0 || r.stdout != "ok\n" {
		t.Fatalf("status %d stdout %q stderr %s", r.status, r.stdout, r.stderr)
	}
	found := false
	for _, d := range r.report.Denials {
		if d.Kind == "exec" && len(d.Paths) > 0 && filepath.Base(d.Paths[0].Resolved) == "uname" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no exec denial for uname:\n%s", r.report.denialList())
	}
}
