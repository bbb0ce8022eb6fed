package integration

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A crash of the tree writes no core file: the kernel would write it in the
// crashing task's cwd, which the tree may move outside the sandbox, with no
// call the tracer sees. The program raises its core limit as far as it can,
// moves into the host directory and crashes. Ground truth: the host
// directory's contents; the same program run bare leaves a core there when
// the machine writes core files at all (a core_pattern that is a file name,
// and a hard limit above 0).
func TestNoCoreFiles(t *testing.T) {
	prog := `
import os, resource, signal, sys
try:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
except (ValueError, OSError):
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
print("core limit", resource.getrlimit(resource.RLIMIT_CORE), flush=True)
os.chdir(sys.argv[1])
os.kill(os.getpid(), signal.SIGSEGV)
`
	crashed := 128 + int(syscall.SIGSEGV)

	t.Run("traced", func(t *testing.T) {
		w := &world{t: t, sbx: realDir(t), host: realDir(t)}
		before := snapshot(t, w.host)
		r := runTraced(t, w.sbx, runEnv(t, w.sbx), nil, python, "-c", prog, w.host)
		if r.status != crashed {
			t.Fatalf("status %d, want %d (SIGSEGV)\nstdout:\n%s\nstderr:\n%s", r.status, crashed, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "core limit (0, 0)") {
			t.Errorf("the tree's core limit: %q, want (0, 0)", r.stdout)
		}
		if d := diffSnap(before, snapshot(t, w.host)); len(d) > 0 {
			t.Fatalf("ESCAPED: a crash wrote outside the sandbox: %s", strings.Join(d, "; "))
		}
	})

	// The bare run shows the test can see a core file where one is made.
	t.Run("bare", func(t *testing.T) {
		pat, err := os.ReadFile("/proc/sys/kernel/core_pattern")
		if err != nil || strings.HasPrefix(string(pat), "|") || strings.Contains(string(pat), "/") {
			t.Skipf("core_pattern %q: core files do not go to the cwd here", strings.TrimSpace(string(pat)))
		}
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Max == 0 {
			t.Skip("the hard core limit is 0 here: no core files even bare")
		}
		w := &world{t: t, sbx: realDir(t), host: realDir(t)}
		before := snapshot(t, w.host)
		r := runBare(t, w.sbx, runEnv(t, w.sbx), python, "-c", prog, w.host)
		if r.status != crashed {
			t.Fatalf("bare status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.status, crashed, r.stdout, r.stderr)
		}
		if d := diffSnap(before, snapshot(t, w.host)); len(d) == 0 {
			t.Skipf("the bare crash wrote no core file either (core_pattern %q, %s)", strings.TrimSpace(string(pat)), strings.TrimSpace(r.stdout))
		}
	})
}
