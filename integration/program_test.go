package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProgramNameNotArgv0: the program a denial names (its notice on
// stderr, its summary, the report's "program") is what the kernel says the
// process runs, not the argv[0] the program gave itself at exec. A tree
// that exec'd python3 as "sshd" was reported as sshd (red team, round 44).
// The ground truth is the python binary's own name, resolved by the test.
func TestProgramNameNotArgv0(t *testing.T) {
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Base(real)
	sbx := realDir(t)
	host := realDir(t)
	target := filepath.Join(host, "x")
	code := "import os, sys\n" +
		"if len(sys.argv) < 2:\n" +
		"    os.execv(" + strconv.Quote(python) + ", ['/usr/sbin/sshd', '-c', " + strconv.Quote("open("+strconv.Quote(target)+", 'w')") + "])\n"
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", python}, python, "-c", code)
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("ESCAPED: %s was created", target)
	}
	var found bool
	for _, e := range r.report.Denials {
		if e.Syscall != "openat" || !e.hasResolved(target) {
			continue
		}
		found = true
		if e.Program != want {
			t.Errorf("denial names program %q, want %q (the exe %s)", e.Program, want, real)
		}
	}
	if !found {
		t.Fatalf("no denial of %s; denials:\n%s\nstderr:\n%s", target, r.report.denialList(), r.stderr)
	}
	if strings.Contains(r.stderr, "sshd") || !strings.Contains(r.stderr, "by "+want+"[") {
		t.Errorf("the notice names the program the tree chose, not %s:\n%s", want, r.stderr)
	}
}
