package tracer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

func TestFreezes(t *testing.T) {
	w := uint64(unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC)
	cases := []struct {
		name         string
		h            syscalls.Handler
		call         string
		flags        uint64
		readsChecked bool
		want         bool
	}{
		{"open for writing", syscalls.HOpen, "openat", w, false, true},
		{"O_RDONLY|O_TRUNC writes", syscalls.HOpen, "openat", unix.O_TRUNC, false, true},
		{"read-only open, reads free", syscalls.HOpen, "openat", unix.O_RDONLY, false, false},
		{"read-only open, reads checked", syscalls.HOpen, "openat", unix.O_RDONLY, true, true},
		{"creat has no flags argument", syscalls.HOpen, "creat", 0, false, true},
		{"rename", syscalls.HPath, "renameat2", 0, false, true},
		{"fchmod: the fd table", syscalls.HFdMeta, "fchmod", 0, false, true},
		{"ioctl", syscalls.HIoctl, "ioctl", 0, false, true},
		{"sendmsg: msghdr in memory", syscalls.HSocket, "sendmsg", 0, false, true},
		{"F_SETOWN_EX: f_owner_ex in memory", syscalls.HFcntl, "fcntl", 0, false, true},
		{"pidfd_send_signal: the fd table", syscalls.HSignal, "pidfd_send_signal", 0, false, true},
		{"chdir: remembered cwds are forgotten first", syscalls.HChdir, "chdir", 0, false, true},
		{"kill: registers only", syscalls.HSignal, "kill", 0, false, false},
		{"exec: checked again at the exec event", syscalls.HExec, "execve", 0, false, false},
		{"clone: registers only", syscalls.HClone, "clone", 0, false, false},
		{"prlimit64: registers only", syscalls.HProcess, "prlimit64", 0, false, false},
		{"forbidden: never allowed", syscalls.HForbidden, "ptrace", 0, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := freezes(c.h, c.call, c.flags, c.readsChecked); got != c.want {
				t.Errorf("freezes(%v, %s, %#x, %v) = %v, want %v", c.h, c.call, c.flags, c.readsChecked, got, c.want)
			}
		})
	}
}

func TestStopEvent(t *testing.T) {
	stop := func(sig, ev int) unix.WaitStatus { return unix.WaitStatus(0x7f | sig<<8 | ev<<16) }
	cases := []struct {
		name string
		ws   unix.WaitStatus
		want int
	}{
		{"interrupt or first stop", stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_STOP), unix.PTRACE_EVENT_STOP},
		{"group-stop reports the stop signal", stop(int(unix.SIGSTOP), unix.PTRACE_EVENT_STOP), unix.PTRACE_EVENT_STOP},
		{"seccomp", stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_SECCOMP), unix.PTRACE_EVENT_SECCOMP},
		{"syscall stop", stop(int(unix.SIGTRAP)|0x80, 0), 0},
		{"signal-delivery stop", stop(int(unix.SIGUSR1), 0), 0},
		{"exited", unix.WaitStatus(3 << 8), 0},
		{"killed", unix.WaitStatus(unix.SIGKILL), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := stopEvent(c.ws); got != c.want {
				t.Errorf("stopEvent(%#x) = %d, want %d", uint32(c.ws), got, c.want)
			}
		})
	}
}

// noTid is a tid no process has (above PID_MAX_LIMIT): ptrace says ESRCH,
// which resume treats as "gone".
const noTid = 1 << 23

func TestBacklogAndFrozenSet(t *testing.T) {
	tr := newTracer(&Config{Policy: mustPolicy(t)}, 0)
	a := tr.tree.add(noTid, noTid)
	b := tr.tree.add(noTid+1, noTid)
	seccomp := unix.WaitStatus(0x7f | int(unix.SIGTRAP)<<8 | unix.PTRACE_EVENT_SECCOMP<<16)

	t.Run("queue keeps the kernel's order and counts per task", func(t *testing.T) {
		tr.fz.queue(a.tid, seccomp)
		tr.fz.queue(noTid+2, 0) // not known yet: a child's first stop
		tr.fz.queue(a.tid, unix.WaitStatus(unix.SIGKILL))
		if a.held != 2 || b.held != 0 {
			t.Fatalf("held a=%d b=%d", a.held, b.held)
		}
		var got []int
		for len(tr.fz.backlog) > 0 {
			got = append(got, tr.fz.unqueue().tid)
		}
		if want := []int{noTid, noTid + 2, noTid}; !slices.Equal(got, want) {
			t.Fatalf("order %v, want %v", got, want)
		}
		if a.held != 0 {
			t.Fatalf("held a=%d after unqueue", a.held)
		}
	})
	t.Run("an exec event drops the old leader's statuses ahead of it", func(t *testing.T) {
		// a's call stopped (the old leader's), b's stop, then the exec of a
		// thread that took a's tid: only b's stop and the exec are left.
		exec := unix.WaitStatus(0x7f | int(unix.SIGTRAP)<<8 | unix.PTRACE_EVENT_EXEC<<16)
		tr.fz.queue(a.tid, seccomp)
		tr.fz.queue(b.tid, seccomp)
		tr.fz.queue(a.tid, seccomp)
		tr.fz.queue(a.tid, exec)
		if a.held != 1 || b.held != 1 {
			t.Fatalf("held a=%d b=%d", a.held, b.held)
		}
		var got []pending
		for len(tr.fz.backlog) > 0 {
			got = append(got, tr.fz.unqueue())
		}
		if want := []pending{{b.tid, seccomp}, {a.tid, exec}}; !slices.Equal(got, want) {
			t.Fatalf("backlog %v, want %v", got, want)
		}
		if a.held != 0 || b.held != 0 {
			t.Fatalf("held a=%d b=%d after unqueue", a.held, b.held)
		}
	})
	t.Run("a task is held once", func(t *testing.T) {
		tr.fz.hold(a.tid)
		tr.fz.hold(a.tid)
		tr.fz.hold(b.tid)
		if n := len(tr.fz.frozen.tids); n != 2 || len(tr.fz.frozen.in) != 2 {
			t.Fatalf("frozen %v", tr.fz.frozen.tids)
		}
	})
	t.Run("stays frozen while stops are queued, within freezeHold", func(t *testing.T) {
		tr.fz.queue(b.tid, seccomp)
		// The set was made by the subtest before; on a slow machine (an
		// emulated arm64 guest) freezeHold may already have passed since.
		tr.fz.frozen.since = time.Now().Add(time.Minute)
		if err := tr.thawIfDue(); err != nil || tr.fz.frozen == nil {
			t.Fatalf("thawed early: %v %v", err, tr.fz.frozen)
		}
		tr.fz.frozen.since = time.Now().Add(-2 * freezeHold)
		if err := tr.thawIfDue(); err != nil || tr.fz.frozen != nil {
			t.Fatalf("not thawed after freezeHold: %v %v", err, tr.fz.frozen)
		}
		tr.fz.unqueue()
	})
	t.Run("thawed when nothing is queued", func(t *testing.T) {
		tr.fz.hold(a.tid)
		if err := tr.thawIfDue(); err != nil || tr.fz.frozen != nil {
			t.Fatalf("not thawed: %v %v", err, tr.fz.frozen)
		}
	})
	t.Run("thawed at once when the tree is dying", func(t *testing.T) {
		tr.fz.hold(a.tid)
		tr.fz.queue(b.tid, seccomp)
		tr.tree.dying.Store(true)
		if err := tr.thawIfDue(); err != nil || tr.fz.frozen != nil {
			t.Fatalf("not thawed: %v %v", err, tr.fz.frozen)
		}
	})
}

func mustPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{WriteRoots: []string{t.TempDir()}, Scratch: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A single-task tree never freezes; a threaded one does for its writes;
// audit mode never does.
func TestFreezeOnlyWithOtherTasks(t *testing.T) {
	needPython(t)
	single := `
for i in range(20):
    open("f%d" % i, "w").write("x")
print("ok")
`
	threaded := `
import threading
def w(k):
    for i in range(20):
        open("t%d-%d" % (k, i), "w").write("x")
ts = [threading.Thread(target=w, args=(k,)) for k in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
print("ok")
`
	cases := []struct {
		name       string
		script     string
		audit      bool
		noFreeze   bool
		noPathPage bool
		frozen     bool
		copied     bool
	}{
		{"single task", single, false, false, false, false, false},
		{"threads: the path page", threaded, false, false, false, false, true},
		{"threads, NoPathPage", threaded, false, false, true, true, false},
		{"threads, audit mode", threaded, true, false, false, false, false},
		{"threads, NoFreeze", threaded, false, true, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := runTraced(t, t.TempDir(), func(pc *policy.Config, cfg *Config) {
				if c.audit {
					pc.Mode = policy.Audit
				}
				cfg.NoFreeze, cfg.NoPathPage = c.noFreeze, c.noPathPage
			}, python, "-c", c.script)
			if o.err != nil || o.stdout != "ok\n" {
				t.Fatalf("err %v stdout %q stderr %q", o.err, o.stdout, o.stderr)
			}
			if (o.res.Freezes > 0) != c.frozen || (o.res.Copies > 0) != c.copied {
				t.Errorf("%d freezes, %d copied calls; want frozen=%v copied=%v", o.res.Freezes, o.res.Copies, c.frozen, c.copied)
			}
			if c.copied && o.res.PageMaps != 1 {
				t.Errorf("the path page was mapped %d times, want once", o.res.PageMaps)
			}
		})
	}
}

// Exits, clones, vfork, signals and the timeout while calls are frozen: no
// task is left stopped, the run ends, nothing waits for the freeze bound.
func TestFreezeLifecycle(t *testing.T) {
	needPython(t)
	cases := []struct {
		name    string
		script  string
		timeout time.Duration
		check   func(t *testing.T, o runOut)
	}{
		{"exit_group while other threads are frozen", `
import os, threading, time
def w(k):
    i = 0
    while True:
        open("w%d" % k, "w").write(str(i)); i += 1
for k in range(3):
    threading.Thread(target=w, args=(k,), daemon=True).start()
time.sleep(0.3)
os._exit(7)
`, 0, func(t *testing.T, o runOut) {
			if o.res.ExitCode != 7 || o.res.Freezes+o.res.Copies == 0 {
				t.Errorf("exit %d, %d freezes, %d copied", o.res.ExitCode, o.res.Freezes, o.res.Copies)
			}
		}},
		{"timeout during freezes", `
import threading
def w(k):
    i = 0
    while True:
        open("w%d" % k, "w").write(str(i)); i += 1
for k in range(3):
    threading.Thread(target=w, args=(k,)).start()
`, 700 * time.Millisecond, func(t *testing.T, o runOut) {
			if !o.res.TimedOut {
				t.Errorf("not timed out: %+v", o.res)
			}
		}},
		{"clones, forks and signals during freezes", `
import os, threading, signal
signal.signal(signal.SIGUSR1, lambda *a: None)
def w(k, n):
    for i in range(n):
        open("c%d-%d" % (k, i), "w").write("x")
        if i % 10 == 0:
            os.kill(os.getpid(), signal.SIGUSR1)
ts = []
for k in range(12):
    t = threading.Thread(target=w, args=(k, 30)); t.start(); ts.append(t)
    if k % 4 == 0:
        pid = os.fork()
        if pid == 0:
            w(100 + k, 20)
            os._exit(0)
        os.waitpid(pid, 0)
[t.join() for t in ts]
print(len([n for n in os.listdir(".") if n.startswith("c")]))
`, 0, func(t *testing.T, o runOut) {
			if o.stdout != "420\n" || o.res.ExitCode != 0 {
				t.Errorf("stdout %q exit %d stderr %q", o.stdout, o.res.ExitCode, o.stderr)
			}
		}},
		{"job control: SIGSTOP to the tree while calls are frozen", `
import os, threading, signal
def w(k):
    for i in range(200):
        open("s%d" % k, "w").write(str(i))
ts = [threading.Thread(target=w, args=(k,)) for k in range(3)]
[t.start() for t in ts]
for i in range(5):
    os.kill(os.getpid(), signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGCONT)
[t.join() for t in ts]
print("ok")
`, 0, func(t *testing.T, o runOut) {
			// A traced tree is not stopped by job control (group-stops,
			// PTRACE_EVENT_STOP when seized, are resumed), as before.
			if o.stdout != "ok\n" || o.res.ExitCode != 0 {
				t.Errorf("stdout %q exit %d stderr %q", o.stdout, o.res.ExitCode, o.stderr)
			}
		}},
		{"vfork parent is not waited for", `
import subprocess, threading
stop = False
def w():
    i = 0
    while not stop:
        open("v", "w").write(str(i)); i += 1
t = threading.Thread(target=w); t.start()
for i in range(15):
    subprocess.run(["/bin/true"], check=True)
stop = True
t.join()
print("ok")
`, 0, func(t *testing.T, o runOut) {
			if o.stdout != "ok\n" || o.res.Wall > 10*time.Second {
				t.Errorf("stdout %q wall %v stderr %q", o.stdout, o.res.Wall, o.stderr)
			}
		}},
	}
	// Each case runs with the path page (copied calls in flight while the
	// rest happens) and with freezes only.
	for _, c := range cases {
		for _, noPage := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/no-path-page=%v", c.name, noPage), func(t *testing.T) {
				var logb bytes.Buffer
				start := time.Now()
				o := runTraced(t, t.TempDir(), func(pc *policy.Config, cfg *Config) {
					cfg.NoPathPage = noPage
					cfg.Timeout = c.timeout
					cfg.Log = zerolog.New(&logb)
					if tp, err := filepath.EvalSymlinks("/bin/true"); err == nil {
						pc.AllowExec = append(pc.AllowExec, tp)
					}
				}, python, "-c", c.script)
				if o.err != nil {
					t.Fatalf("err %v stderr %q", o.err, o.stderr)
				}
				if d := time.Since(start); d > 20*time.Second {
					t.Errorf("run took %v", d)
				}
				if strings.Contains(logb.String(), "did not stop") {
					t.Errorf("a task hit the freeze bound:\n%s", logb.String())
				}
				c.check(t, o)
				if !noPage && o.res.Copies == 0 {
					t.Errorf("no call ran on the path page (%d freezes)", o.res.Freezes)
				}
			})
		}
	}
}

// A checked call left to finish unfrozen because it blocked (a FIFO open
// waiting for its reader) is interrupted by the next freeze; its restart
// goes through seccomp again, so it is checked again, and the rendezvous
// still happens.
func TestBlockedCallCheckedAgainAfterInterrupt(t *testing.T) {
	needPython(t)
	// With freezes only, every open of the other thread interrupts the
	// blocked one. With the path page the FIFO open runs on its copy and
	// the other thread's opens freeze nothing; its symlinks do (they could
	// redirect a walk), and the copied open, interrupted, must restart
	// with its own path argument back in place and be checked again.
	for _, c := range []struct {
		name, op string
		noPage   bool
	}{
		{"freezes only", `open("o%d" % i, "w").write("x")`, true},
		{"path page", `os.symlink("x", "l%d" % i)`, false},
	} {
		t.Run(c.name, func(t *testing.T) { checkBlockedCall(t, c.op, c.noPage) })
	}
}

func checkBlockedCall(t *testing.T, op string, noPage bool) {
	script := `
import os, threading, time
os.mkfifo("fifo")
def reader():
    time.sleep(0.4)
    with open("fifo", "rb") as f:
        f.read()
def other():
    for i in range(40):
        OP
        time.sleep(0.005)
ts = [threading.Thread(target=reader), threading.Thread(target=other)]
[t.start() for t in ts]
with open("fifo", "wb") as f:
    f.write(b"x")
[t.join() for t in ts]
print("ok")
`
	sbx, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(sbx, "fifo")
	script = strings.Replace(script, "OP", op, 1)
	o := runTraced(t, sbx, func(_ *policy.Config, c *Config) { c.TraceAll, c.NoPathPage = true, noPage }, python, "-c", script)
	if o.err != nil || o.stdout != "ok\n" {
		t.Fatalf("err %v stdout %q stderr %q", o.err, o.stdout, o.stderr)
	}
	checks := 0
	for _, e := range o.events {
		if len(e.Paths) > 0 && e.Paths[0].Resolved == fifo && e.Flags != "" && strings.Contains(e.Flags, "O_WRONLY") {
			checks++
		}
	}
	if checks < 2 {
		t.Errorf("the blocked FIFO open was checked %d times, want it checked again after each interrupt", checks)
	}
	if !noPage && o.res.Copies == 0 {
		t.Errorf("no call ran on the path page (%d freezes)", o.res.Freezes)
	}
	t.Logf("FIFO open for writing checked %d times, %d freezes, %d copied", checks, o.res.Freezes, o.res.Copies)
}

// TestFrozenTidReportsAgain: a task stopped by a freeze reports nothing
// until it is let go, unless its tid now belongs to another stop: a
// non-leader thread that execs takes the leader's tid (de_thread kills the
// leader, frozen or not, without an exit status) and reports
// PTRACE_EVENT_EXEC under it. Such a status is queued for the loop, and the
// thaw must not PTRACE_CONT that tid: it would resume the exec'd program
// from its exec event before execEvent has checked what was loaded (or from
// its next, unseen, seccomp stop, without any check).
func TestFrozenTidReportsAgain(t *testing.T) {
	stop := func(sig, ev int) unix.WaitStatus { return unix.WaitStatus(0x7f | sig<<8 | ev<<16) }
	cases := []struct {
		name string
		ws   unix.WaitStatus
	}{
		{"exec event under the leader's tid", stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_EXEC)},
		{"seccomp stop of the exec'd program", stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_SECCOMP)},
		{"killed", unix.WaitStatus(unix.SIGKILL)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracer(&Config{Policy: mustPolicy(t)}, 0)
			leader := tr.tree.add(noTid, noTid)
			leader.attached = true
			caller := tr.tree.add(noTid+1, noTid)
			caller.attached = true
			tr.fz.hold(leader.tid)
			f := &freezer{tk: caller, waiting: map[int]bool{}}
			f.take(&tr.fz, leader.tid, c.ws)
			if tr.fz.frozen.in[leader.tid] {
				t.Errorf("tid %d still in the frozen set after reporting %#x: the thaw would resume it", leader.tid, uint32(c.ws))
			}
			if len(tr.fz.backlog) != 1 || tr.fz.backlog[0].tid != leader.tid || leader.held != 1 {
				t.Errorf("backlog %v, held %d: the status must be queued for the loop", tr.fz.backlog, leader.held)
			}
		})
	}
}

// TestVforkReleased: a vfork parent is not waited for by a freeze while it
// sleeps until its child execs or exits; once the child's exec event or
// exit is reported (even if not answered yet) the kernel has woken the
// parent, which must then be waited for like any task.
func TestVforkReleased(t *testing.T) {
	stop := func(sig, ev int) unix.WaitStatus { return unix.WaitStatus(0x7f | sig<<8 | ev<<16) }
	cases := []struct {
		name   string
		queued []unix.WaitStatus // the child's statuses in the backlog
		gone   bool
		want   bool
	}{
		{"child running or frozen", nil, false, false},
		{"child's seccomp stop queued: not exec'd yet", []unix.WaitStatus{stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_SECCOMP)}, false, false},
		{"child's interrupt stop queued", []unix.WaitStatus{stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_STOP)}, false, false},
		{"child's exec event queued", []unix.WaitStatus{stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_SECCOMP), stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_EXEC)}, false, true},
		{"child exited", []unix.WaitStatus{unix.WaitStatus(127 << 8)}, false, true},
		{"child killed", []unix.WaitStatus{unix.WaitStatus(unix.SIGKILL)}, false, true},
		{"child gone", nil, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracer(&Config{Policy: mustPolicy(t)}, 0)
			tr.tree.add(noTid, noTid)
			child := tr.tree.add(noTid+1, noTid+1)
			child.vforkParent = noTid
			tr.fz.queue(noTid, stop(int(unix.SIGTRAP), unix.PTRACE_EVENT_EXEC)) // another task's: not the child's
			for _, ws := range c.queued {
				tr.fz.queue(child.tid, ws)
			}
			if c.gone {
				tr.removeTask(child.tid)
			}
			if got := tr.fz.vforkReleased(child.tid); got != c.want {
				t.Errorf("vforkReleased = %v, want %v", got, c.want)
			}
		})
	}
}
