package tracer

// Freezing the tree while a checked call is in flight.
//
// The tracer reads a call's arguments (a path string, a sockaddr, a msghdr)
// from the tracee's memory and resolves paths through the file system, the
// fd table and the cwd at the seccomp stop; the kernel reads and resolves
// them again after the stop. Any other task of the tree that runs in
// between can rewrite the memory (a thread, or a process sharing the
// mapping), swap a symlink or a directory in the sandbox, dup2 another file
// onto a dirfd, or chdir a thread sharing the cwd: time of check to time of
// use. So, for a call that needs it (freezes), when the tree has more than
// one task:
//
//  1. Before the arguments are read, every other task is stopped: statuses
//     already reported are taken (those tasks are stopped already and stay
//     so: their statuses are queued in freezeState.backlog and answered after the
//     thaw, in order, never lost); every other attached task gets
//     PTRACE_INTERRUPT (needs PTRACE_SEIZE, 3.4) and the freeze waits for its
//     stop. A child whose first stop has not come yet needs nothing: a
//     seized child is born with JOBCTL_TRAP_STOP and TIF_SIGPENDING
//     (ptrace_init_task), so it stops before its first instruction. A
//     vfork parent whose child has not exec'd is interrupted but not waited
//     for: it sleeps in the kernel until its child (frozen, or the caller)
//     execs or exits, and the pending interrupt stops it before it returns
//     to its own code. Unless the child has exec'd or exited already, its
//     status not answered yet (the kernel woke the parent first): then the
//     parent is waited for like any other task.
//  2. The call is decoded and decided as always. A denied call never runs:
//     the others are let go at once.
//  3. An allowed call is resumed with PTRACE_SYSCALL: its syscall-exit stop
//     (SIGTRAP|0x80, PTRACE_O_TRACESYSGOOD) says that the kernel has finished
//     the call, path lookups included. Then the others are let go
//     (PTRACE_CONT for the stops the freeze caused; the backlog is answered
//     by the loop) and the caller is resumed with PTRACE_CONT.
//
// The common file calls (opens, mkdir, unlink, chmod, ...) with no dirfd
// do not freeze when their process has the path page: their path is copied
// where the tree cannot write and the others run on (pathpage.go). A freeze
// stops those copied calls too, and so waits for each to finish its walk.
//
// A call that blocks (a FIFO whose other end another thread will open, a
// lock, a full socket backlog) would keep the tree frozen, and may wait for
// a frozen task: a deadlock. When the call has not finished after
// freezeBlocked and the caller sleeps interruptibly (/proc state S), the
// others are let go and the call finishes unfrozen (task.inFlight; its
// syscall-exit stop comes to the loop later). This is safe because the
// kernel's path walk never sleeps interruptibly on local file systems,
// procfs or NFS (inode locks, I/O and RPC waits are uninterruptible or
// killable: state D): an interruptible sleep comes after the lookups, where
// the call waits for its partner. Not so for an AF_UNIX connect or send to
// a full queue: unix_wait_for_peer sleeps interruptibly after the lookup,
// and the call then resolves the name again ("goto restart"), so the tree
// let go could chdir the caller's shared cwd or swap a symlink and wake it
// (integration TestRaceUnixRelookup: a host socket reached). Such a call
// (call.relookup) is interrupted instead and checked again at its restart;
// it needs no partner present, only room in the queue, which its peer makes
// while the call is out. A caller in D or R is waited for. Sending
// the caller PTRACE_INTERRUPT instead (its call restarts, through seccomp,
// and is checked again) would never let a FIFO rendezvous happen: the
// partner is frozen every time the writer waits.
//
// A task that is killed while frozen (exit_group of another thread, the
// timeout's SIGKILL) reports its exit, which is queued like any other
// status; once the tree is dying the freeze ends at once. A freeze cannot
// keep a task from dying, and a dying task's exit writes user memory
// (clear_child_tid, robust futexes) after the check: the memory a frozen
// call is decided on is therefore copied into the path page and the call
// runs on the copy (copyfreeze.go, "Copy and freeze"); runFrozen sets its
// arguments back at its syscall-exit stop.
//
// Not closed: processes outside the tree (a host process that swaps a
// symlink in a sandbox it can write, or writes a mapping it shares with the
// tree), memory written by the kernel without the task running
// (asynchronous I/O completing, a DMA read into a buffer), a task that stays
// in an uninterruptible sleep longer than freezeStuck (it is accepted as
// frozen: it cannot return to its own code, but the call it sleeps in may
// still complete; never a task with a copied call in flight, which is
// waited for), and file systems whose lookups sleep interruptibly (FUSE,
// 9p) served from outside the tree.

import (
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/syscalls"
)

// Freeze timing.
var (
	// freezeBlocked: a frozen call that has not finished after this is
	// looked at; if it sleeps interruptibly the others are let go.
	freezeBlocked = 10 * time.Millisecond
	// freezeStuck: a task that has not stopped after this (an
	// uninterruptible sleep: a hung NFS server) is taken as frozen.
	freezeStuck = time.Second
	// freezeHold: how long tasks stopped by a freeze may stay stopped while
	// the tracer answers the stops queued meanwhile (often more checked
	// calls of other threads, each needing the same freeze) before they are
	// let go, whatever is still queued: no task starves.
	freezeHold = 2 * time.Millisecond
)

// pending is a wait status taken while the tree was frozen.
type pending struct {
	tid int
	ws  unix.WaitStatus
}

// frozenSet are the tasks stopped by freezes (PTRACE_EVENT_STOP of a
// PTRACE_INTERRUPT) and not let go yet. They stay stopped across the calls
// answered one after another from the backlog, up to freezeHold.
type frozenSet struct {
	tids  []int        // in the order they were held
	in    map[int]bool // those of tids still to be resumed by the thaw
	since time.Time    // when the first was held
}

// freezeState is what freezes leave behind for the loop: the statuses
// reaped while the tree was frozen (the backlog) and the tasks the
// freezes stopped (the frozen set).
//
// Invariants: the backlog is in the order the kernel reported the
// statuses, and each task's held counts its own statuses in it; a tid is
// in frozen.in only while it is stopped in the PTRACE_EVENT_STOP a freeze
// took and has reported nothing since (queue takes it out); frozen is nil
// when no task is held. Only the tracer thread uses it.
type freezeState struct {
	// tree is the registry whose tasks the statuses belong to.
	tree *tree
	// backlog holds the wait statuses reaped while the tree was frozen, in
	// the order the kernel reported them; the loop answers them first.
	backlog []pending
	// frozen are the tasks that freezes stopped and that are not let go
	// yet, nil when none.
	frozen *frozenSet
	// freezes counts frozen checked calls (tests and debugging).
	freezes int
}

// freezer is one frozen call.
type freezer struct {
	tk *task // the caller
	// waiting are the tasks interrupted and not stopped yet.
	waiting map[int]bool
	// gone: the caller exited (killed) while the tree was being frozen.
	gone bool
	// relookup: the call may resolve its name again after it slept
	// (call.relookup): when it blocks it is interrupted, never left to
	// finish unfrozen.
	relookup bool
	// interrupted: the caller was sent PTRACE_INTERRUPT (relookup).
	interrupted bool
	// blockAfter replaces freezeBlocked for this call (0: freezeBlocked).
	blockAfter time.Duration
	// noPaths: the call names no path (a futex), so left to finish
	// unfrozen it is not in flight for the walk cache (dirCache): it
	// cannot move a directory.
	noPaths bool
}

// freezes reports whether an allowed call of this handler must run with the
// rest of the tree frozen: its decision rests on memory (paths, sockaddrs,
// msghdrs, an f_owner_ex) or on the file system, fd table or cwd, which
// another task can change between the check and the kernel's use. Calls
// decided on registers alone (clone flags, a pid, a signal number) do not.
// exec does not: the exec event checks what the kernel actually loaded
// (execEvent), before any of it runs. Read-only opens do not when reads are
// not restricted (they are trapped only to be reported).
func freezes(h syscalls.Handler, name string, openFlags uint64, readsChecked bool) bool {
	switch h {
	case syscalls.HOpen:
		return readsChecked || syscalls.OpenWrites(openFlags) || name == "creat"
	case syscalls.HPath, syscalls.HFdMeta, syscalls.HIoctl, syscalls.HSocket, syscalls.HFcntl:
		return true
	case syscalls.HFutex:
		// The word's mapping (and futex_waitv's array): another thread
		// could map a read-only file page over a checked address before
		// the kernel takes the key.
		return true
	case syscalls.HChdir:
		// Never denied, but the tracer forgets the cwds it remembers
		// (base): no other check may run before the cwd has moved.
		return true
	case syscalls.HSignal:
		return name == "pidfd_send_signal" // the target is the pidfd's: the fd table
	}
	return false // HExec, HClone, HProcess, HProcMem, HForbidden (never allowed)
}

// needsFreeze reports whether c, if allowed, must run with the tree frozen.
// A single-task tree never does: nobody can race it. In audit mode nothing
// is enforced, so nothing is frozen.
//
// Precondition: t.regs holds c's registers.
func (t *tracer) needsFreeze(c *call) bool {
	if t.audit || t.cfg.NoFreeze || len(t.tree.tasks) < 2 {
		return false
	}
	var flags uint64
	switch c.spec.Handler {
	case syscalls.HOpen:
		if c.spec.FlagsArg >= 0 {
			flags = t.flagsArg(c)
		}
	case syscalls.HSocket:
		if c.name == "sendto" && t.regs.Arg(4) == 0 {
			return false // no address: a connected socket, nothing read
		}
	case syscalls.HIoctl:
		if syscalls.IoctlPasses(uint32(t.regs.Arg(1))) {
			return false // passed on the command number alone
		}
	case syscalls.HFutex:
		if c.name == "rt_sigreturn" || (c.name == "restart_syscall" && c.tk.futexRestart == 0) {
			return false // passed on the task's state alone
		}
		if c.name != "futex_waitv" && c.name != "futex_requeue" && t.mmAlone(c.tk) {
			return false // no other task can change its mappings
		}
		// futex_waitv and futex_requeue (Linux 5.16, 6.7) read an array
		// of {uaddr, flags} from memory: a process that shares that
		// memory (MAP_SHARED anonymous memory across fork, a memfd)
		// can rewrite an address between tracecell's read and the
		// kernel's (futex_parse_waitv) without sharing the mm, so
		// mmAlone is no proof (F2). They are rare (Wine, Proton):
		// always freeze.
	case syscalls.HFcntl:
		switch uint32(t.regs.Arg(1)) {
		case syscalls.FcntlSetOwnEx: // f_owner_ex in memory
		case syscalls.FcntlSetFl: // O_ASYNC: the fd table
			if uint32(t.regs.Arg(2))&syscalls.OAsync == 0 {
				return false // passed on the registers alone
			}
		case syscalls.FcntlSetLease: // the fd table
			if uint32(t.regs.Arg(2)) == syscalls.FcntlUnlck {
				return false // passed on the registers alone
			}
		default:
			return false // F_SETOWN: the pid is in a register; F_SETDELEG: never allowed
		}
	}
	return freezes(c.spec.Handler, c.name, flags, t.readsChecked)
}

// queue holds a status for the loop.
func (s *freezeState) queue(tid int, ws unix.WaitStatus) {
	if stopEvent(ws) == unix.PTRACE_EVENT_EXEC {
		s.dropBefore(tid)
	}
	s.backlog = append(s.backlog, pending{tid, ws})
	if s.frozen != nil && s.frozen.in[tid] {
		// A tid stopped by a freeze reports nothing more until it is let
		// go, unless it is gone or no longer that task: a non-leader
		// thread that execs takes over the leader's tid (de_thread kills
		// the frozen leader silently) and reports PTRACE_EVENT_EXEC under
		// it. The thaw must not PTRACE_CONT this tid: that would resume
		// the new program from the stop queued here, before the loop
		// checks it.
		delete(s.frozen.in, tid)
	}
	if tk := s.tree.tasks[tid]; tk != nil {
		tk.held++
	}
}

// dropBefore takes tid's statuses out of the backlog ahead of its exec
// event. An exec event is the first status of the program it starts: a
// leader that execs was running its execve, with nothing waiting; a
// thread that execs takes its leader's tid, and what waits under it is
// the old leader's, killed in that stop by de_thread (fs/exec.c).
// Answered, such a status would act on the new program's exec stop: read
// its registers as the dead leader's call and resume it before its exec
// is checked (execEvent). Kernels since 5.12 (dbb5afad100a, "ptrace: make
// ptrace() fail if the tracee changed its pid unexpectedly") refuse
// requests on that stop only until its exec event is reaped, which it is
// by now.
func (s *freezeState) dropBefore(tid int) {
	kept := s.backlog[:0]
	for _, p := range s.backlog {
		if p.tid != tid {
			kept = append(kept, p)
			continue
		}
		if tk := s.tree.tasks[tid]; tk != nil && tk.held > 0 {
			tk.held--
		}
	}
	clear(s.backlog[len(kept):])
	s.backlog = kept
}

// queued reports whether statuses wait in the backlog.
func (s *freezeState) queued() bool { return len(s.backlog) > 0 }

// unqueue takes the oldest held status.
//
// Precondition: queued.
func (s *freezeState) unqueue() pending {
	p := s.backlog[0]
	s.backlog[0] = pending{}
	s.backlog = s.backlog[1:]
	if len(s.backlog) == 0 {
		s.backlog = s.backlog[:0:0]
	}
	if tk := s.tree.tasks[p.tid]; tk != nil && tk.held > 0 {
		tk.held--
	}
	return p
}

// begin starts the frozen set if none is held.
func (s *freezeState) begin() {
	if s.frozen == nil {
		s.frozen = &frozenSet{in: map[int]bool{}, since: time.Now()}
	}
}

// hold records a task stopped by a freeze.
func (s *freezeState) hold(tid int) {
	s.begin()
	if !s.frozen.in[tid] {
		s.frozen.in[tid] = true
		s.frozen.tids = append(s.frozen.tids, tid)
	}
}

// isHeld reports whether tid is stopped by a freeze and not let go yet.
func (s *freezeState) isHeld(tid int) bool { return s.frozen != nil && s.frozen.in[tid] }

// forget drops tid from the frozen set: it is gone, nothing to resume.
func (s *freezeState) forget(tid int) {
	if s.frozen != nil {
		delete(s.frozen.in, tid)
	}
}

// release empties the frozen set and returns it, nil when none was held:
// the caller resumes the tids of its tids still in its in (thaw).
func (s *freezeState) release() *frozenSet {
	fs := s.frozen
	s.frozen = nil
	return fs
}

// due reports whether the frozen tasks must be let go now: nothing more is
// queued to be answered while they stay stopped, the tree is dying, or they
// have been stopped for freezeHold.
func (s *freezeState) due() bool {
	fs := s.frozen
	return fs != nil && (len(s.backlog) == 0 || s.tree.dying.Load() || time.Since(fs.since) > freezeHold)
}

// thaw lets go every task stopped by freezes. The statuses queued during
// the freezes are answered by the loop.
func (t *tracer) thaw() error {
	fs := t.fz.release()
	if fs == nil {
		return nil
	}
	for _, tid := range fs.tids {
		if !fs.in[tid] {
			continue // exited meanwhile
		}
		if err := t.resume(tid, 0); err != nil {
			return err
		}
	}
	return nil
}

// thawIfDue thaws unless more queued stops are waiting to be answered and
// the tasks have not been stopped for freezeHold yet.
func (t *tracer) thawIfDue() error {
	if t.fz.due() {
		return t.thaw()
	}
	return nil
}

// freeze stops every task of the tree but tk.
//
// Precondition: tk is in its seccomp stop; the calling goroutine is locked
// to the tracer thread.
func (t *tracer) freeze(tk *task) (*freezer, error) {
	f := &freezer{tk: tk, waiting: map[int]bool{}}
	t.fz.freezes++
	t.fz.begin()
	// Stops already reported: those tasks are frozen as they are.
	for {
		tid, ws, err := wait4NoHang()
		if err != nil {
			return f, err
		}
		if tid == 0 {
			break
		}
		f.take(&t.fz, tid, ws)
	}
	vforkWait := map[int]int{} // vfork parent -> its child
	for _, o := range t.tree.tasks {
		if o.vforkParent != 0 {
			vforkWait[o.vforkParent] = o.tid
		}
	}
	asleep := map[int]int{} // interrupted vfork parents not waited for
	for tid, o := range t.tree.tasks {
		// Skipped: the caller; tasks whose stop is queued, or that a
		// freeze stopped (in a stop: an interrupt would not be reported
		// until after the next resume); children before their first stop.
		if tid == tk.tid || o.held > 0 || !o.attached || t.fz.frozen.in[tid] {
			continue
		}
		if err := unix.PtraceInterrupt(tid); err != nil {
			if err == unix.ESRCH {
				continue // exiting: wait4 reports it
			}
			return f, os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_INTERRUPT) pid %d", tid), err)
		}
		if c, ok := vforkWait[tid]; ok {
			asleep[tid] = c
		} else {
			f.waiting[tid] = true
		}
	}
	start := time.Now()
	if err := t.fz.awaitStops(f, start, t.cfg.Log); err != nil {
		return f, err
	}
	// A vfork parent sleeps only until its child execs or exits, and the
	// kernel wakes it then (exec_mmap, exit_mm), before the child's exec
	// event or exit status is reported, let alone answered: a child whose
	// status says so (now that every other task has stopped) has released
	// its parent, which runs its own code until the interrupt stops it. Wait
	// for those parents too.
	for p, c := range asleep {
		// A parent whose stop came in during the first wait (held by the
		// freeze, or queued) is frozen already: its stop will not come again.
		if o := t.tree.tasks[p]; o == nil || o.held > 0 || t.fz.frozen.in[p] {
			continue
		}
		if t.fz.vforkReleased(c) {
			f.waiting[p] = true
		}
	}
	if err := t.fz.awaitStops(f, start, t.cfg.Log); err != nil {
		return f, err
	}
	return f, nil
}

// vforkReleased reports whether the vfork child c has released its parent
// as far as the tracer can tell: it is gone, or an exec event or its end is
// queued.
func (s *freezeState) vforkReleased(c int) bool {
	if s.tree.tasks[c] == nil {
		return true
	}
	for _, p := range s.backlog {
		if p.tid == c && (p.ws.Exited() || p.ws.Signaled() || (p.ws.Stopped() && stopEvent(p.ws) == unix.PTRACE_EVENT_EXEC)) {
			return true
		}
	}
	return false
}

// awaitStops waits until every task in f.waiting has stopped (or is gone, or
// stuck since start for freezeStuck), the caller is gone or the tree dies.
// The statuses it reaps are taken (freezer.take); a task taken as frozen
// for being stuck is logged to log.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func (s *freezeState) awaitStops(f *freezer, start time.Time, log zerolog.Logger) error {
	check := time.Now().Add(time.Millisecond)
	for len(f.waiting) > 0 && !f.gone && !s.tree.dying.Load() {
		tid, ws, err := pollUntil(check)
		if err != nil {
			return err
		}
		if tid != 0 {
			f.take(s, tid, ws)
			continue
		}
		// Slow to stop: a thread group leader that is a zombie while its
		// other threads run never reports a stop; a task in an
		// uninterruptible sleep stops only when it wakes.
		for x := range f.waiting {
			if st := procfs.StateLetter(x); st == 'Z' || st == 'X' || st == 0 {
				delete(f.waiting, x)
			}
		}
		if time.Since(start) > freezeStuck {
			for x := range f.waiting {
				if o := s.tree.tasks[x]; o != nil && o.slot != 0 {
					// A copied call in flight (pathpage.go) is never
					// taken as frozen: it was checked against names
					// that only a freeze keeps, and its walk may not
					// have begun (a thread kept off its CPU, here by
					// a SCHED_FIFO thread in a long call, escaped
					// past a symlink unlinked meanwhile). It is waited
					// for as a frozen call is (runFrozen), whatever
					// its state: its interrupt ends a sleep it can
					// leave, its death ends the wait.
					continue
				}
				log.Warn().Int("tid", x).Str("state", string(rune(procfs.StateLetter(x)))).
					Msg("task did not stop within the freeze bound; taken as frozen (it cannot run its own code before it stops)")
				delete(f.waiting, x)
			}
		}
		check = time.Now().Add(time.Millisecond)
	}
	return nil
}

// take files a status reaped during a freeze into s.
func (f *freezer) take(s *freezeState, tid int, ws unix.WaitStatus) {
	if tid == f.tk.tid {
		// The caller was killed in its stop.
		f.gone = true
		s.queue(tid, ws)
		return
	}
	delete(f.waiting, tid)
	if o := s.tree.tasks[tid]; o != nil && o.attached && o.held == 0 && stopEvent(ws) == unix.PTRACE_EVENT_STOP && !staleExecer(o) {
		// The freeze's interrupt (or a group-stop): the loop would only
		// resume it; the thaw does. Not under the record of a thread
		// gone in its exec: that stop is a new task's first (stale.go),
		// which the loop must see, or the task would be recorded as
		// never having stopped and be left out of every freeze.
		s.hold(tid)
		return
	}
	s.queue(tid, ws)
}

// runFrozen runs the caller's allowed call to its end with the tree frozen.
//
// Precondition: f.tk is in its seccomp stop, its call allowed; the calling
// goroutine is locked to the tracer thread.
func (t *tracer) runFrozen(f *freezer) error {
	tid := f.tk.tid
	if f.gone || t.tree.dying.Load() {
		if err := t.thaw(); err != nil {
			return err
		}
		return t.resume(tid, 0)
	}
	// The call runs, and stops at its syscall exit (the entry stop is
	// behind us: since 4.8 the seccomp stop comes after it).
	if err := unix.PtraceSyscall(tid, 0); err != nil {
		if err == unix.ESRCH {
			return t.thawIfDue()
		}
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SYSCALL) pid %d", tid), err)
	}
	blocked := freezeBlocked
	if f.blockAfter > 0 {
		blocked = f.blockAfter
	}
	check := time.Now().Add(blocked)
	for !t.tree.dying.Load() {
		x, ws, err := pollUntil(check)
		if err != nil {
			t.thaw()
			return err
		}
		if x == tid {
			if ws.Stopped() && ws.StopSignal() == unix.SIGTRAP|0x80 {
				// The call has finished.
				t.callDone(f.tk, false)
				if len(f.tk.copies) > 0 {
					if err := t.endCopies(f.tk); err != nil {
						t.thaw()
						return err
					}
				}
				if err := t.resume(tid, 0); err != nil {
					return err
				}
				return t.thawIfDue()
			}
			// Killed, or another stop: the loop answers it.
			t.fz.queue(x, ws)
			return t.thawIfDue()
		}
		if x != 0 {
			f.take(&t.fz, x, ws)
			continue
		}
		st := procfs.StateLetter(tid)
		if st == 0 {
			return t.thaw() // gone, and its exit not reported to us
		}
		if st == 'S' && f.relookup {
			// Blocked, but the kernel resolves the name again when it
			// wakes (an AF_UNIX connect or send waiting for room in the
			// peer's queue): were the tree let go now, another task
			// could change what the name means (a chdir, a symlink) and
			// wake it. Interrupt it instead: the sleep ends, the call
			// reaches its syscall-exit stop (-ERESTARTSYS) and, once
			// the tree is let go and the interrupt's stop answered,
			// restarts through seccomp and is checked again. Its peer
			// empties the queue while it is not in the call: no
			// rendezvous is needed, so this cannot deadlock.
			if !f.interrupted {
				if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
					t.thaw()
					return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_INTERRUPT) pid %d", tid), err)
				}
				f.interrupted = true
			}
			check = time.Now().Add(blocked)
			continue
		}
		if st == 'S' {
			// Blocked after its lookups (see the comment at the top):
			// let the tree run; the loop answers its syscall-exit stop.
			if !f.noPaths {
				t.tree.setInFlight(f.tk, true)
			}
			return t.thaw()
		}
		check = time.Now().Add(blocked)
	}
	return t.thaw()
}

// pollUntil waits for a status until deadline without blocking the tracer
// in wait4 (which no timer could interrupt: Go's signal handlers restart
// it): it polls, spinning first, then sleeping a little longer each time.
// The sleeps are nanosleep(2) on this thread: time.Sleep on a locked thread
// takes about 1 ms whatever is asked (measured: 10 µs asked, 814 µs slept;
// nanosleep: 66 µs). (0, 0, nil) means none came.
func pollUntil(deadline time.Time) (int, unix.WaitStatus, error) {
	spinEnd := time.Now().Add(spinFor)
	sleep := 10 * time.Microsecond
	for {
		tid, ws, err := wait4NoHang()
		if err != nil || tid != 0 {
			return tid, ws, err
		}
		now := time.Now()
		if now.After(deadline) {
			return 0, 0, nil
		}
		if now.Before(spinEnd) {
			// The tasks we wait for need a CPU to reach their stops:
			// yield this one rather than spin on it.
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		}
		ts := unix.NsecToTimespec(int64(sleep))
		unix.Nanosleep(&ts, nil) // EINTR: poll again
		if sleep < 200*time.Microsecond {
			sleep *= 2
		}
	}
}

// wait4NoHang reaps one status of any task, or returns 0.
func wait4NoHang() (int, unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		tid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ECHILD {
			return 0, 0, nil
		}
		if err != nil {
			return 0, 0, os.NewSyscallError("wait4", err)
		}
		if tid <= 0 {
			return 0, 0, nil
		}
		return tid, ws, nil
	}
}
