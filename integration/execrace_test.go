package integration

// A thread other than its leader that execs (tracer/execrun.go): the exec
// runs with the tree frozen until its outcome, so that no stop of the
// leader whose tid the thread takes is answered meanwhile.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecFromThread: generation after generation, a second thread execs
// the next while the leader makes checked calls as fast as it can (and, in
// one case, 40 more threads sleep, so that each exec has a tree to
// freeze). Every program that ran (its line in the log, written by the
// program itself) must have been seen by the exec check: the report's
// execs count them. A tracer that resumed the leader's tid after the
// thread had taken it would let a program run unseen. On kernels since
// 5.12 (dbb5afad100a) the kernel itself refuses that resume until the exec
// event is reaped, so this test cannot fail on this machine's kernel for a
// tracer without execrun.go; it guards the freeze that closes the race on
// 4.18, and the failed-exec path below.
func TestExecFromThread(t *testing.T) {
	bin := cProgram(t, "TRACECELL_EXECRACE_BIN", "escapes/execrace.c", "-pthread")
	for _, c := range []struct{ name, spinners, idlers string }{
		{"leader-busy", "0", "0"},
		{"forty-idle-threads", "0", "40"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sbx := realDir(t)
			r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", bin}, bin, bin, sbx, "60", c.spinners, c.idlers)
			if r.status != 0 || resultOf(r.stdout) != "execrace done" {
				t.Fatalf("status %d, result %q\nstderr:\n%s", r.status, resultOf(r.stdout), tail(r.stderr, 2000))
			}
			b, err := os.ReadFile(filepath.Join(sbx, "log"))
			if err != nil {
				t.Fatal(err)
			}
			ran := len(strings.Split(strings.TrimSpace(string(b)), "\n"))
			if ran != 61 || r.report.Counts.Execs != ran {
				t.Fatalf("%d programs ran (want 61), the tracer checked %d execs", ran, r.report.Counts.Execs)
			}
			// The initial program exec'd from its only thread: no freeze.
			// Each of the 60 from a thread: one each, at least.
			if r.report.Counts.Freezes < 60 {
				t.Errorf("%d freezes for 60 execs from a thread", r.report.Counts.Freezes)
			}
		})
	}
}

// TestFailedExecFromThread: an allowed exec from a thread that the kernel
// refuses (ENOEXEC: not a program) comes back to its syscall-exit stop,
// where the freeze ends; the process goes on writing files.
func TestFailedExecFromThread(t *testing.T) {
	if noPython != "" {
		t.Skip(noPython)
	}
	sbx := realDir(t)
	prog := filepath.Join(sbx, "notaprogram")
	if err := os.WriteFile(prog, []byte("not a program\x00\x01"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `
import os, sys, threading
errs = []
def run():
    try:
        os.execv(sys.argv[1], ["x"])
    except OSError as e:
        errs.append(e.errno)
for i in range(20):
    th = threading.Thread(target=run)
    th.start()
    th.join()
    open(os.path.join(sys.argv[2], "f%d" % i), "w").close()
print("result: errnos", sorted(set(errs)), len(errs))
`
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", prog}, python, "-c", script, prog, sbx)
	if r.status != 0 {
		t.Fatalf("status %d\nstderr:\n%s", r.status, tail(r.stderr, 2000))
	}
	if got := resultOf(r.stdout); got != "errnos [8] 20" {
		t.Fatalf("result %q, want every exec refused with ENOEXEC (8)", got)
	}
	for i := 0; i < 20; i++ {
		if _, err := os.Stat(filepath.Join(sbx, fmt.Sprintf("f%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if r.report.Counts.Freezes < 20 {
		t.Errorf("%d freezes for 20 execs from a thread", r.report.Counts.Freezes)
	}
}
