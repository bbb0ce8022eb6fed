package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// forgeArgv overwrites the process's own argv strings (the memory that
// /proc/<pid>/cmdline shows) with "FORGED", then makes a denied mkdir, in
// the process and in a forked child. The denials must name the argv the
// kernel started it with: a report that quoted the program's memory would
// let it write its own record (red team, session 23).
const forgeArgv = `
import ctypes, os, sys
f = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
start, end = int(f[45]), int(f[46])  # arg_start, arg_end (fields 48, 49)
n = end - start
fake = b"FOR" + b"GED"
ctypes.memmove(start, (fake * (n // 6 + 1))[:n - 1] + b"\0", n)
assert fake in open("/proc/self/cmdline", "rb").read()
def deny(name):
    try:
        os.mkdir(os.path.join(sys.argv[1], name))
    except PermissionError:
        pass
deny("parent")
pid = os.fork()
if pid == 0:
    deny("child")
    os._exit(0)
os.waitpid(pid, 0)
print("done")
`

func TestDenialArgvNotForged(t *testing.T) {
	sbx := realDir(t)
	outside := realDir(t)
	r := runTraced(t, sbx, nil, []string{"-q"}, python, "-c", forgeArgv, outside, "REAL-ARGUMENT")
	if r.status != 0 || !strings.Contains(r.stdout, "done") {
		t.Fatalf("status %d, stdout %q\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	for _, name := range []string{"parent", "child"} {
		if _, err := os.Stat(filepath.Join(outside, name)); err == nil {
			t.Fatalf("%s was created outside the sandbox", name)
		}
	}
	pids := map[int]bool{}
	for _, e := range r.report.Denials {
		joined := strings.Join(e.Argv, " ")
		if strings.Contains(joined, "FORGED") || len(e.Argv) != 5 || e.Argv[1] != "-c" || e.Argv[4] != "REAL-ARGUMENT" {
			t.Errorf("denial of %s by pid %d has argv %q, want the one it was started with", e.Syscall, e.Pid, e.Argv)
		}
		pids[e.Pid] = true
	}
	if len(pids) != 2 {
		t.Errorf("denials from %d processes, want 2 (parent and child):\n%s", len(pids), r.report.denialList())
	}
}
