package tracer

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracecell/tracecell/internal/procfs"
	"golang.org/x/sys/unix"
)

// startGroup starts argv as the leader of a new session and process group
// (its pgid is its pid). No tracer runs in this test process, so nothing
// else reaps it.
func startGroup(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// killGroup kills group pgid at the end of the test, and reaps cmd.
func killGroup(t *testing.T, pgid int, cmd *exec.Cmd) {
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		cmd.Wait()
	})
}

// waitState waits until /proc/pid/stat says state.
func waitState(t *testing.T, pid int, state byte) procfs.Stat {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, ok := procfs.ReadStat(pid)
		if ok && st.State == state {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: state %c, want %c", pid, st.State, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProcessGroupInTree: a process group is the tree's only when a live
// process of the tree is a member of it now (or its leader is a zombie of
// the tree), never because a tree process once had its number: a pid the
// tree used and reaped may lead a host process group later.
func TestProcessGroupInTree(t *testing.T) {
	tr := newTracer(&Config{Policy: mustPolicy(t)}, 0)

	// A host process group whose number the tree had once (a recycled
	// pid): t.tree.ever remembers it, the group is not the tree's.
	host := startGroup(t, "sleep", "30")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	killGroup(t, host.Process.Pid, host)
	h := host.Process.Pid
	tr.tree.ever[h] = true
	if tr.pidInTree(-h) || tr.pgrpInTree(h) {
		t.Errorf("host process group %d (a pid the tree once had) counts as the tree's", h)
	}

	// The tree's own group, leader alive.
	lead := startGroup(t, "sleep", "30")
	if err := lead.Start(); err != nil {
		t.Fatal(err)
	}
	killGroup(t, lead.Process.Pid, lead)
	l := lead.Process.Pid
	tr.tree.add(l, l)
	if !tr.pidInTree(-l) || !tr.pgrpInTree(l) {
		t.Errorf("process group %d of a live tree process is not the tree's", l)
	}

	// The leader has exited and been reaped; a member of the tree lives on
	// (the kernel keeps the number while it is a pgid).
	sh := startGroup(t, "/bin/sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!")
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	s := sh.Process.Pid
	killGroup(t, s, sh)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	sh.Wait()
	if st := waitState(t, m, 'S'); st.Pgrp != s {
		t.Fatalf("member %d in group %d, want %d", m, st.Pgrp, s)
	}
	if tr.pgrpInTree(s) {
		t.Errorf("group %d counts as the tree's before its member is", s)
	}
	tr.tree.add(m, m)
	if !tr.pidInTree(-s) {
		t.Errorf("group %d whose leader is gone and whose member %d is in the tree is not the tree's", s, m)
	}
	// The member leaves the tree (the tracer saw it exit): the group is
	// no longer the tree's, whatever pids the tree had.
	tr.removeTask(m)
	if tr.pidInTree(-s) {
		t.Errorf("group %d counts as the tree's after its last tree member is gone", s)
	}

	// A zombie leader: the tree's only when its parent is in the tree.
	z := startGroup(t, "/bin/true")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Wait() })
	zp := z.Process.Pid
	waitState(t, zp, 'Z')
	tr.tree.ever[zp] = true
	if tr.pidInTree(-zp) {
		t.Errorf("zombie group leader %d whose parent is not in the tree counts as the tree's", zp)
	}
	self := os.Getpid()
	tr.tree.add(self, self)
	if !tr.pidInTree(-zp) {
		t.Errorf("zombie group leader %d of a tree parent is not the tree's", zp)
	}

	if tr.pidInTree(-1) || !tr.pidInTree(0) {
		t.Error("-1 and 0")
	}
}

// TestProcessGroupSignals: the tree may signal and renice its own process
// groups: its own, one whose leader lives, one whose leader has exited and
// been reaped while a member lives, and one whose leader is a zombie.
func TestProcessGroupSignals(t *testing.T) {
	needPython(t)
	script := `
import os, signal, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
os.killpg(os.getpgrp(), signal.SIGUSR1)
os.setpriority(os.PRIO_PGRP, 0, 1)
print("own", bool(got))

def child(body):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        os.setsid()
        body(w)
        os._exit(0)
    os.close(w)
    data = os.read(r, 100)
    os.close(r)
    return pid, data

def sleeper(w):
    os.write(w, b"x")
    time.sleep(30)
pid, _ = child(sleeper)
os.setpriority(os.PRIO_PGRP, pid, 5)
os.killpg(pid, signal.SIGTERM)
_, st = os.waitpid(pid, 0)
print("leader", os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM)

def parent_of_sleeper(w):
    g = os.fork()
    if g == 0:
        os.close(w)
        time.sleep(30)
        os._exit(0)
    os.write(w, str(g).encode())
pid, g = child(parent_of_sleeper)
os.waitpid(pid, 0)
os.setpriority(os.PRIO_PGRP, pid, 6)
os.killpg(pid, signal.SIGTERM)
print("member ok")

def nothing(w):
    os.write(w, b"x")
pid, _ = child(nothing)
for _ in range(500):
    if open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z":
        break
    time.sleep(0.01)
os.killpg(pid, signal.SIGTERM)
os.waitpid(pid, 0)
print("zombie ok")
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := "own True\nleader True\nmember ok\nzombie ok\n"
	if o.stdout != want || len(o.res.Denials) != 0 {
		t.Fatalf("stdout %q, want %q\nstderr %s\ndenials %+v", o.stdout, want, o.stderr, o.res.Denials)
	}
}

// needPidfdSendSignal skips when the kernel has no pidfd_send_signal (5.1).
func needPidfdSendSignal(t *testing.T) {
	t.Helper()
	if _, _, e := unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, ^uintptr(0), 0, 0, 0, 0, 0); e == unix.ENOSYS {
		t.Skip("the kernel has no pidfd_send_signal")
	}
}

// TestPidfdProcDir: the kernel takes an fd of a /proc/<pid> directory as
// the pidfd of pidfd_send_signal. It is decided like any other target:
// allowed for the tree's own process, denied and reported outside; an fd
// the kernel refuses (a /proc/<pid>/task/<tid> directory, another
// directory, an O_PATH fd) fails as it would, with nothing to report.
func TestPidfdProcDir(t *testing.T) {
	needPython(t)
	needPidfdSendSignal(t)
	host := startOutside(t, "sleep 300 </dev/null >/dev/null 2>&1")
	script := `
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def pss(fd, sig):
    return 0 if libc.syscall(424, fd, sig, None, 0) == 0 else ctypes.get_errno()
host = int(sys.argv[1])
d = os.O_RDONLY | os.O_DIRECTORY
print("outside", pss(os.open("/proc/%d" % host, d), signal.SIGTERM))
print("opath", pss(os.open("/proc/%d" % host, os.O_PATH), signal.SIGTERM))
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
fd = os.open("/proc/%d" % pid, d)
print("child", pss(fd, signal.SIGTERM))
_, st = os.waitpid(pid, 0)
print("child signalled", os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM)
print("gone", pss(fd, signal.SIGTERM))
print("task", pss(os.open("/proc/self/task/%d" % os.getpid(), d), signal.SIGTERM))
print("dir", pss(os.open(".", d), signal.SIGTERM))
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script, strconv.Itoa(host))
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := fmt.Sprintf("outside %d\nopath %d\nchild 0\nchild signalled True\ngone %d\ntask %d\ndir %d\n",
		unix.EPERM, unix.EBADF, unix.ESRCH, unix.EBADF, unix.EBADF)
	if o.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr %s", o.stdout, want, o.stderr)
	}
	if len(o.res.Denials) != 1 || o.res.Denials[0].Syscall != "pidfd_send_signal" ||
		o.res.Denials[0].TargetPid == nil || *o.res.Denials[0].TargetPid != host {
		t.Errorf("denials %+v, want one of pidfd_send_signal naming pid %d", o.res.Denials, host)
	}
	if st, ok := procfs.ReadStat(host); !ok || st.State == 'Z' {
		t.Errorf("the outside process %d was killed", host)
	}
}
