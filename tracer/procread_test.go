package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
)

// otherThread is a thread of this test process that is not its leader.
func otherThread(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if tid, _ := strconv.Atoi(e.Name()); tid != 0 && tid != os.Getpid() {
			return tid
		}
	}
	t.Skip("the test process has one thread")
	return 0
}

// TestCloneTgid checks the thread-group decision of a clone event against
// real tasks: threads of this process, and a child process.
func TestCloneTgid(t *testing.T) {
	child := exec.Command("/bin/sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		child.Process.Kill()
		child.Wait()
	}()
	pid, thread, cp := os.Getpid(), otherThread(t), child.Process.Pid
	for _, tc := range []struct {
		name              string
		parentTgid, nt    int
		want, wantFirstSt int
	}{
		{"thread of the parent's group", pid, thread, pid, pid},
		{"the leader itself", pid, pid, pid, pid},
		{"a process", pid, cp, cp, cp},
		// A parent group the tracer got wrong: /proc says.
		{"thread, wrong parent group", cp, thread, pid, pid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cloneTgid(tc.parentTgid, tc.nt); got != tc.want {
				t.Errorf("cloneTgid(%d, %d) = %d, want %d", tc.parentTgid, tc.nt, got, tc.want)
			}
			if got := firstStopTgid(tc.nt); got != tc.wantFirstSt {
				t.Errorf("firstStopTgid(%d) = %d, want %d", tc.nt, got, tc.wantFirstSt)
			}
		})
	}
}

// TestCloneTgidFallback: when tgkill cannot answer (EPERM, as an LSM may
// say), the decision falls back to /proc/<nt>/status.
func TestCloneTgidFallback(t *testing.T) {
	defer func(p func(int, int) error) { groupProbe = p }(groupProbe)
	calls := 0
	groupProbe = func(int, int) error { calls++; return unix.EPERM }
	pid, thread := os.Getpid(), otherThread(t)
	if got := cloneTgid(pid, thread); got != pid {
		t.Errorf("cloneTgid(%d, %d) = %d with tgkill failing, want %d from /proc", pid, thread, got, pid)
	}
	if calls != 1 {
		t.Errorf("%d tgkill probes after EPERM, want 1", calls)
	}
	if got := cloneTgid(pid, 1<<22+1); got != 1<<22+1 {
		t.Errorf("cloneTgid of a tid that does not exist = %d, want the tid itself", got)
	}
}

// TestTreeCounts runs a tree that makes threads (glibc's pthread_create:
// clone3 since 2.34, clone before), forks (clone with SIGCHLD: a fork
// event) and spawns (subprocess: vfork; posix_spawn: clone3 or clone with
// CLONE_VM|CLONE_VFORK: a vfork event), and checks the processes and
// threads the tracer counted: each new task got its thread group right.
func TestTreeCounts(t *testing.T) {
	needPython(t)
	prog := `
import os, subprocess, threading
ts = [threading.Thread(target=lambda: None) for _ in range(5)]
for x in ts: x.start()
for x in ts: x.join()
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        th = threading.Thread(target=lambda: None); th.start(); th.join()
        os._exit(0)
    os.waitpid(pid, 0)
subprocess.run(["/bin/true"], check=True)
os.waitpid(os.posix_spawn("/bin/true", ["/bin/true"], {}), 0)
`
	o := runTraced(t, t.TempDir(), func(pc *policy.Config, _ *Config) {
		if tp, err := filepath.EvalSymlinks("/bin/true"); err == nil {
			pc.AllowExec = append(pc.AllowExec, tp)
		}
	}, python, "-c", prog)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr %s", o.res.ExitCode, o.stderr)
	}
	// The root, 2 forks, subprocess's child, posix_spawn's child; the
	// threads of the root (5) and of each fork (1) on top.
	if c := o.res.Counts; c.Processes != 5 || c.Threads != 5+5+2 {
		t.Errorf("processes %d threads %d, want 5 and 12", c.Processes, c.Threads)
	}
}
