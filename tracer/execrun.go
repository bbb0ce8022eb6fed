package tracer

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/procfs"
)

// A thread other than its group's leader that execs. de_thread (fs/exec.c)
// kills the other threads, the leader among them, whatever stop they are in,
// and gives the leader's tid to the thread, which reports PTRACE_EVENT_EXEC
// under it (ptrace(2), "execve(2) under ptrace"). Until that event is
// reaped the tid names a stopped task the tracer takes for the old leader:
// a request made on it then (the leader's call answered, a freeze's thaw)
// would act on the new program's exec stop, and PTRACE_CONT would resume
// the new program past its exec event, which wait4 then never reports: no
// exec check (execEvent), and the old process's records (its path page
// among them) kept for the new address space. Kernels since 5.12
// (dbb5afad100a, "ptrace: make ptrace() fail if the tracee changed its pid
// unexpectedly", backported to some stable series) refuse such requests
// with ESRCH; 4.18 does not.
//
// So the exec of a non-leader runs with the tree frozen until its outcome
// is known: no other task of its group is answered or resumed while the
// tid may change hands. The exec event comes under the leader's tid
// (success: the queued statuses of the dead leader ahead of it are dropped,
// freezeState.dropBefore, and the frozen leader is not thawed,
// freezeState.queue); a failed execve comes back to its syscall-exit stop
// (the call is resumed with PTRACE_SYSCALL; a successful one is resumed
// from its exec event with PTRACE_CONT, so it makes none). Most programs
// exec from their only thread (a forked child): only a process that execs
// from a second thread pays for this freeze.
//
// An exec can wait for another task of the tree: to give up a lease on the
// program (break_lease in the open), or on 4.18, where do_open_execat opens
// the file before it checks S_ISREG, for a writer of an executable FIFO.
// Frozen, that task never acts; so an exec asleep (interruptibly) before
// de_thread for freezeBlocked is interrupted, comes back, and is checked
// again once the tree has run. Not closed: such a wait in an
// uninterruptible sleep keeps the tree frozen until the kill (--timeout,
// SIGTERM); it harms only the program itself.

// runExec lets tk, a thread other than its leader that stopped at an
// allowed execve, run the call with the tree frozen until its outcome.
//
// Precondition: tk is in its seccomp stop, its execve allowed; the calling
// goroutine is locked to the tracer thread.
func (t *tracer) runExec(tk *task) error {
	f, done, err := t.freezeCaller(tk)
	if done {
		return err
	}
	tid, leader := tk.tid, tk.tgid
	if err := unix.PtraceSyscall(tid, 0); err != nil {
		if err == unix.ESRCH {
			return t.thawIfDue() // killed meanwhile: wait4 reports it
		}
		t.thaw()
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SYSCALL) pid %d", tid), err)
	}
	// No time bound: the exec ends (its event, its failure) or the group
	// dies, and each is reported. An exec that sleeps (a binary on a slow
	// file system, de_thread waiting for a thread in an uninterruptible
	// sleep) keeps the tree frozen that long; the killer (tree.dying) ends
	// the wait.
	interrupted := false
	for !t.tree.dying.Load() {
		// Once tid has left its group the exec is past de_thread, which
		// waited for the old leader's death (and a dead task's stop can
		// no longer be reaped): every status under the leader's tid
		// reaped from now on is the new program's. Its first is its
		// exec event, unless the load failed past the point of no
		// return: then the failed call's syscall-exit stop and its
		// death (SIGSEGV), with no exec event (a red team: the wait
		// never ended). The old leader is not resumed.
		through := t.execThrough(tk)
		x, ws, err := pollUntil(time.Now().Add(freezeBlocked))
		if err != nil {
			t.thaw()
			return err
		}
		// A status under tid once the thread has gone in its exec is a
		// new task's that got the tid (stale.go): freezer.take files it.
		own := x == tid && !staleExecer(tk)
		switch {
		case x == 0 && through && groupProbe(leader, leader) == unix.ESRCH:
			return t.thawIfDue() // the group is gone, its end reaped
		case x == 0 && !through && !interrupted && procfs.StateLetter(tid) == 'S':
			// Asleep before de_thread, for longer than freezeBlocked:
			// the exec may wait for a task the freeze holds (a lease
			// on the program to break, whose holder must give it up:
			// a red team stalled the tree for fs.lease-break-time,
			// 45 s; 4.18's FIFO). Interrupt it: the wait ends, the
			// call comes back to its syscall-exit stop (-ERESTARTSYS:
			// failed, below), the tree is let go, and the restarted
			// execve is checked again.
			if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
				t.thaw()
				return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_INTERRUPT) pid %d", tid), err)
			}
			interrupted = true
		case x == 0:
			continue
		case own && ws.Stopped() && ws.StopSignal() == unix.SIGTRAP|0x80:
			// The execve returned: it failed. The leader, if frozen, is
			// the old one still.
			if err := t.resume(tid, 0); err != nil {
				t.thaw()
				return err
			}
			return t.thawIfDue()
		case own:
			// The thread killed in its exec: the loop answers it.
			t.fz.queue(x, ws)
			return t.thawIfDue()
		case x == leader && newProgram(ws, through || t.execThrough(tk)):
			// What waits under the tid ahead of it is the dead old
			// leader's (queued before the exec began, or taken since):
			// never to be answered on the new program (a red team:
			// the wait ended on such a status, and the loop read the
			// dead leader's call from the new program's registers).
			t.fz.dropBefore(leader)
			t.fz.queue(x, ws)
			return t.thawIfDue()
		default:
			f.take(&t.fz, x, ws)
		}
	}
	t.execThrough(tk)
	return t.thaw()
}

// newProgram reports whether ws, a status reaped under the leader's tid
// while a thread of its group execs, is the new program's: its exec event,
// the group's end (a leader's exit is reported only once every thread's
// is), or, once the thread is through (has left its group), a stop that is
// no ptrace event: the syscall-exit stop of an exec that failed past its
// point of no return (the thread was resumed with PTRACE_SYSCALL), or on
// 4.18 the signal-delivery stop of the SIGSEGV that kills it. The old
// leader's stops are taken for its own while the thread is not through;
// one reaped just before it died and the thread went through would be
// taken for the new program's, which needs that stop (of a call it was
// left to finish, or a signal) to come at that very moment.
func newProgram(ws unix.WaitStatus, through bool) bool {
	switch {
	case ws.Exited(), ws.Signaled(), stopEvent(ws) == unix.PTRACE_EVENT_EXEC:
		return true
	}
	return through && ws.Stopped() && stopEvent(ws) == 0
}

// execThrough reports whether tk, a thread that stopped at an execve, has
// left its group in the exec (staleExecer); if so its group's leader is
// taken out of the frozen set: the tid names the new program now, which
// the thaw must not resume before its exec event is reaped.
func (t *tracer) execThrough(tk *task) bool {
	if !staleExecer(tk) {
		return false
	}
	t.fz.forget(tk.tgid)
	return true
}
