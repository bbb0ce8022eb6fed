package integration

// Process groups and /proc/<pid> directories as signal targets. The ground
// truth is an outside victim: whether it caught the signal (its own log) and
// its nice value (the kernel's /proc/<pid>/stat), read after the run, never
// the traced program's word.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// victimPy catches SIGUSR2 and logs it; it writes "ready PID PGRP" once its
// handler is in place.
const victimPy = `
import os, signal, sys, time
log = sys.argv[1]
def note(s):
    with open(log, "a") as f:
        f.write(s + "\n")
signal.signal(signal.SIGUSR2, lambda s, f: note("signal %d" % s))
note("ready %d %d" % (os.getpid(), os.getpgrp()))
while True:
    time.sleep(1)
`

// startPyVictim starts victimPy outside the tree (a child of the test, not
// of tracecell), in a session and process group of its own when setsid.
// It returns once the victim's handler is in place.
func startPyVictim(t *testing.T, dir string, setsid bool) (*exec.Cmd, string) {
	t.Helper()
	if noPython != "" {
		t.Skip(noPython)
	}
	log := filepath.Join(dir, fmt.Sprintf("victim-%d.log", time.Now().UnixNano()))
	cmd := exec.Command(python, "-c", victimPy, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start victim: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, log
}

// waitReady waits for the victim's ready line.
func waitReady(t *testing.T, log string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(log)
		if bytes.HasPrefix(b, []byte("ready ")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("victim not ready: log %q", b)
		}
	}
}

// victimCaught reads the victim's log after a grace period for a signal
// in flight.
func victimCaught(t *testing.T, log string) bool {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("victim log: %v", err)
	}
	return bytes.Contains(b, []byte("\nsignal "))
}

// needPidfdSendSignal skips when the kernel has no pidfd_send_signal (5.1;
// under testdata/surface418 it answers ENOSYS).
func needPidfdSendSignal(t *testing.T) {
	t.Helper()
	if _, _, e := unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, ^uintptr(0), 0, 0, 0, 0, 0); e == unix.ENOSYS {
		t.Skip("the kernel has no pidfd_send_signal (ENOSYS)")
	}
}

// tracedRun is a tracecell run started in the background.
type tracedRun struct {
	cmd    *exec.Cmd
	so, se bytes.Buffer
	rp     string
	cancel context.CancelFunc
}

func startTracedRun(t *testing.T, sbx string, argv ...string) *tracedRun {
	t.Helper()
	if noPython != "" {
		t.Skip(noPython)
	}
	r := &tracedRun{rp: filepath.Join(t.TempDir(), "report.json")}
	args := []string{"run", "--write", sbx, "--report", r.rp}
	for _, kv := range runEnv(t, sbx) {
		args = append(args, "--env", kv)
	}
	args = append(append(args, "--"), argv...)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	r.cancel = cancel
	r.cmd = exec.CommandContext(ctx, tcBin, args...)
	r.cmd.Dir = sbx
	r.cmd.Stdout, r.cmd.Stderr = &r.so, &r.se
	r.cmd.WaitDelay = 5 * time.Second
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start tracecell: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		r.cmd.Wait()
	})
	return r
}

func (r *tracedRun) wait(t *testing.T) result {
	t.Helper()
	err := r.cmd.Wait()
	r.cancel()
	res := result{stdout: r.so.String(), stderr: r.se.String()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("tracecell: %v\nstderr:\n%s", err, res.stderr)
	}
	res.status = r.cmd.ProcessState.ExitCode()
	b, err := os.ReadFile(r.rp)
	if err != nil {
		t.Fatalf("tracecell wrote no report (status %d): %v\nstderr:\n%s", res.status, err, res.stderr)
	}
	res.report = &reportDoc{}
	if err := json.Unmarshal(b, res.report); err != nil {
		t.Fatalf("decode report: %v\n%s", err, b)
	}
	return res
}

// waitFile waits for path to exist and returns its content.
func waitFile(t *testing.T, path string, r *tracedRun) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			r.cancel()
			r.cmd.Wait()
			t.Fatalf("no %s\nstdout:\n%s\nstderr:\n%s", path, r.so.String(), r.se.String())
		}
	}
}

// denialsFor lists the report's denials of syscall naming target.
func denialsFor(rep *reportDoc, syscall string, target int) int {
	n := 0
	for _, e := range rep.Denials {
		if e.Syscall == syscall && e.Decision == "deny" && e.TargetPid != nil && *e.TargetPid == target {
			n++
		}
	}
	return n
}

// groupTreePy forks and reaps a child (a pid the tree used), writes its pid
// to "used", waits for the pid of a host process group in "victim", then
// signals and renices that group.
const groupTreePy = `
import os, signal, sys, time
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
with open("used.tmp", "w") as f:
    f.write(str(pid))
os.rename("used.tmp", "used")
deadline = time.time() + 60
while not os.path.exists("victim"):
    if time.time() > deadline:
        print("no victim")
        sys.exit(3)
    time.sleep(0.02)
v = int(open("victim").read())
for name, f in (("killpg", lambda: os.killpg(v, signal.SIGUSR2)),
                ("setpriority", lambda: os.setpriority(os.PRIO_PGRP, v, 7))):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, e.errno)
`

// TestProcessGroupRecycledPid: a host process group whose number is a pid
// the tree once had (and reaped) is not the tree's. The tree's child pid is
// handed to a host process that leads its own group, through
// /proc/sys/kernel/ns_last_pid (root only) rather than by cycling every pid.
// The tree's kill(-pgid) and setpriority(PRIO_PGRP) must be denied and
// reported, and the victim neither signalled nor reniced.
func TestProcessGroupRecycledPid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: /proc/sys/kernel/ns_last_pid hands a chosen pid to a host process")
	}
	const nsLastPid = "/proc/sys/kernel/ns_last_pid"
	if f, err := os.OpenFile(nsLastPid, os.O_WRONLY, 0); err != nil {
		t.Skipf("cannot write %s: %v", nsLastPid, err)
	} else {
		f.Close()
	}
	sbx, host := realDir(t), realDir(t)
	run := startTracedRun(t, sbx, python, "-c", groupTreePy)
	used, err := strconv.Atoi(waitFile(t, filepath.Join(sbx, "used"), run))
	if err != nil || used < 2 {
		t.Fatalf("used pid %d: %v", used, err)
	}

	// The tree has reaped its child: give its pid to a host group leader.
	// Another process may take the pid first: try again.
	var victim *exec.Cmd
	var log string
	for try := 0; try < 50 && victim == nil; try++ {
		if err := os.WriteFile(nsLastPid, []byte(strconv.Itoa(used-1)), 0); err != nil {
			t.Skipf("write %s: %v", nsLastPid, err)
		}
		cmd, l := startPyVictim(t, host, true)
		if cmd.Process.Pid == used {
			victim, log = cmd, l
			break
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	if victim == nil {
		t.Skipf("could not start a host process with pid %d", used)
	}
	waitReady(t, log)
	if pg := procStatField(used, 5); pg != strconv.Itoa(used) {
		t.Fatalf("victim %d leads no group (pgrp %s)", used, pg)
	}
	writeFile(t, filepath.Join(sbx, "victim.tmp"), strconv.Itoa(used), 0o644)
	if err := os.Rename(filepath.Join(sbx, "victim.tmp"), filepath.Join(sbx, "victim")); err != nil {
		t.Fatal(err)
	}
	r := run.wait(t)

	if victimCaught(t, log) {
		t.Errorf("the host process group %d (a pid the tree once had) got the tree's signal", used)
	}
	if nice := procStatField(used, 19); nice != "0" {
		t.Errorf("the host process group %d was reniced: nice %s", used, nice)
	}
	want := fmt.Sprintf("killpg %d\nsetpriority %d\n", syscall.EPERM, syscall.EPERM)
	if r.stdout != want {
		t.Errorf("stdout %q, want %q\nstderr:\n%s", r.stdout, want, r.stderr)
	}
	if denialsFor(r.report, "kill", -used) != 1 || denialsFor(r.report, "setpriority", -used) != 1 {
		t.Errorf("want a denial of kill and of setpriority naming group %d; denials:\n%s", used, r.report.denialList())
	}
}

// pidfdTreePy sends SIGUSR2 through pidfd_send_signal to the process whose
// /proc directory it opens: the outside victim, then a child of its own.
const pidfdTreePy = `
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def pss(fd, sig):
    return 0 if libc.syscall(424, fd, sig, None, 0) == 0 else ctypes.get_errno()
d = os.O_RDONLY | os.O_DIRECTORY
print("outside", pss(os.open("/proc/" + sys.argv[1], d), signal.SIGUSR2))
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
print("child", pss(os.open("/proc/%d" % pid, d), signal.SIGUSR2))
_, st = os.waitpid(pid, 0)
print("child signalled", os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGUSR2)
`

// TestPidfdProcDirSignal: the kernel takes an fd of a /proc/<pid> directory
// as a pidfd. Through one the tree may signal its own child, not an outside
// process: that is denied (EPERM, as other signals are) and reported.
func TestPidfdProcDirSignal(t *testing.T) {
	needPidfdSendSignal(t)
	sbx, host := realDir(t), realDir(t)
	victim, log := startPyVictim(t, host, false)
	waitReady(t, log)
	v := victim.Process.Pid
	r := runTraced(t, sbx, runEnv(t, sbx), nil, python, "-c", pidfdTreePy, strconv.Itoa(v))

	if victimCaught(t, log) {
		t.Errorf("the outside process %d got the tree's signal through its /proc directory", v)
	}
	want := fmt.Sprintf("outside %d\nchild 0\nchild signalled True\n", syscall.EPERM)
	if r.stdout != want {
		t.Errorf("stdout %q, want %q\nstderr:\n%s", r.stdout, want, r.stderr)
	}
	if denialsFor(r.report, "pidfd_send_signal", v) != 1 || len(r.report.Denials) != 1 {
		t.Errorf("want one denial of pidfd_send_signal naming pid %d; denials:\n%s", v, r.report.denialList())
	}
}
