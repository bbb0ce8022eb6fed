package integration

// Threads that the kernel reports as forks, and an exec from a thread that
// fails past its point of no return (red team of stop 20): testdata/
// escapes/sigthread.c.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sigthread is testdata/escapes/sigthread.c, compiled once.
func sigthread(t *testing.T) string {
	return cProgram(t, "TRACECELL_SIGTHREAD_BIN", "escapes/sigthread.c")
}

// TestThreadReportedAsFork: a clone(CLONE_THREAD|CLONE_SIGHAND|CLONE_VM)
// with exit signal SIGCHLD comes to the tracer as PTRACE_EVENT_FORK. Taken
// for a process of its own, a thread that chdir'd into the sandbox had
// /proc/self/cwd/escN resolved against its own cwd, while the kernel uses
// its leader's (here a host directory): before, 500 of 500 files were
// created there. The host directory, listed by the test, is the ground
// truth; the bare run shows the kernel's /proc/self is the leader's.
func TestThreadReportedAsFork(t *testing.T) {
	bin := sigthread(t)
	for _, traced := range []bool{false, true} {
		t.Run(map[bool]string{false: "bare", true: "traced"}[traced], func(t *testing.T) {
			res, outside := runOutside(t, traced, nil, func(sbx, host string) []string {
				return []string{bin, "cwd", sbx, host, "100"}
			})
			if !traced {
				if outside != 100 {
					t.Fatalf("bare run: %s, %d files in the host directory; want 100", res, outside)
				}
				return
			}
			if outside != 0 {
				t.Fatalf("ESCAPED: %d files created in the host directory (%s)", outside, res)
			}
			if want := "sigthread created=0 denied=100"; res != want {
				t.Fatalf("result %q, want %q", res, want)
			}
		})
	}
}

// TestKillThreadReportedAsFork: such a thread spinning in user space after
// its leader alone exited is killed at --timeout. Before, the killer sent
// tgkill(thread, thread) (ESRCH: the thread is not a leader) and
// tgkill(leader, leader) (a zombie: no thread to take it), and tracecell
// ran until killed from outside, SIGTERM and SIGINT included.
func TestKillThreadReportedAsFork(t *testing.T) {
	bin := sigthread(t)
	sbx := realDir(t)
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--timeout", "2s"}, bin, "spin")
	if resultOf(r.stdout) != "sigthread spinning" {
		t.Fatalf("result %q\nstderr:\n%s", resultOf(r.stdout), tail(r.stderr, 2000))
	}
	if !r.report.Exit.TimedOut || r.wall > 30*time.Second {
		t.Fatalf("timed_out %v after %v (status %d), want the tree killed at 2 s", r.report.Exit.TimedOut, r.wall, r.status)
	}
}

// TestExecFailsPastPointOfNoReturn: a thread other than the leader execs
// an allowed program with an address-space limit the new image does not
// fit: de_thread has run, so the thread has the leader's tid, and the
// kernel kills the process (SIGSEGV) without an exec event. The freeze
// around a thread's exec (tracer/execrun.go) waited for that event for
// ever (a red team); the run must end with the program's SIGSEGV.
func TestExecFailsPastPointOfNoReturn(t *testing.T) {
	bin := sigthread(t)
	sbx := realDir(t)
	bare := runBare(t, sbx, runEnv(t, sbx), bin, "exec", "/bin/true")
	if bare.status != 128+11 {
		t.Skipf("bare run: status %d, not SIGSEGV: the exec does not fail past its point of no return here", bare.status)
	}
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", "/bin/true", "--timeout", "60s"}, bin, "exec", "/bin/true")
	if r.status != 128+11 || r.report.Exit.Signal != "SIGSEGV" || r.report.Exit.TimedOut {
		t.Fatalf("status %d, exit %+v after %v; want the program's SIGSEGV", r.status, r.report.Exit, r.wall)
	}
	t.Logf("ended after %v", r.wall.Round(time.Millisecond))
}

// TestExecFromThreadBreaksALease: a thread execs a program in the sandbox
// on which another process of the tree holds a write lease, given up in
// its SIGIO handler: the exec's open waits for that. The freeze around a
// thread's exec held the holder, and the tree stalled until the kernel
// broke the lease itself, fs.lease-break-time later (45 s; a red team).
// The exec, asleep before de_thread, is now interrupted and checked again
// once the tree has run. The run must end well before the kernel's break.
func TestExecFromThreadBreaksALease(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/lease-break-time")
	if err != nil {
		t.Skipf("no lease-break-time: %v", err)
	}
	var breakTime int
	if _, err := fmt.Sscan(string(b), &breakTime); err != nil || breakTime < 10 {
		t.Skipf("fs.lease-break-time is %q: too short to tell a stall from the kernel's break", b)
	}
	bin := sigthread(t)
	sbx := realDir(t)
	prog := filepath.Join(sbx, "prog")
	src, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, src, 0o755); err != nil {
		t.Fatal(err)
	}
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", prog}, bin, "lease", prog)
	if r.status != 0 || r.report.Counts.Execs != 2 {
		t.Fatalf("status %d, %d execs\nstderr:\n%s", r.status, r.report.Counts.Execs, tail(r.stderr, 2000))
	}
	if limit := time.Duration(breakTime) * time.Second / 2; r.wall > limit {
		t.Fatalf("the exec took %v, past half the kernel's lease break time (%d s): the lease holder was kept frozen", r.wall, breakTime)
	}
}
