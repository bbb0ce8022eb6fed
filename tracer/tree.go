package tracer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tracecell/tracecell/internal/procmap"
	"golang.org/x/sys/unix"
)

// task is one traced thread.
type task struct {
	tid, tgid int
	// seq is the task's place in the order the tree registered its tasks
	// (tree.add, from 1): a new task object, even on a reused tid, gets a
	// higher one.
	seq uint64
	// mmApartBelow: every task of another group registered before it
	// (seq below it) was found by kcmp not to share this task's mm
	// (mmAlone). That stays true for the pair: a task's mm changes only at
	// its execve, to a new mm no other task has, and only a new task
	// (clone(CLONE_VM), vfork) can come to share an existing one.
	mmApartBelow uint64
	// attached is set once the task's first stop was seen (a new child's
	// SIGSTOP can arrive before its parent's fork event).
	attached bool
	// waitStop is set between a fork event and the child's first stop
	// (PTRACE_EVENT_STOP: it is seized). Until then it cannot run any of
	// its own code (see freeze.go).
	waitStop bool
	// vforkParent is the tid that vforked this task, until this task
	// execs or that thread's record goes (tree.remove): that thread
	// sleeps in the kernel until then (see freeze.go).
	vforkParent int
	// held counts this task's statuses waiting in freezeState.backlog: it
	// is stopped in a ptrace stop that the tracer has not answered yet.
	held int
	// cwd is the task's cwd as last read from /proc/<tid>/cwd, "" when
	// not remembered (base).
	cwd string
	// inFlight: this task's checked call was left to finish unfrozen (it
	// blocked, see freeze.go); its syscall-exit stop is still to come.
	// Set only through tree.setInFlight, which counts it.
	inFlight bool
	// slot is 1 + the path page slot of this task's copied call in flight
	// (pathpage.go), 0 when none; slotArg is the argument pointed at it and
	// slotOrig its own value, set back at the syscall-exit stop.
	slot     int
	slotArg  int
	slotOrig uint64
	// copies are the arguments of this task's frozen call pointed at
	// path page slots (copy and freeze, copyfreeze.go), set back at its
	// syscall-exit stop.
	copies []argCopy
	// approvedExec is the program allowed at this task's execve stop,
	// enforced again at the exec event.
	approvedExec string
	// initialExec: the approved exec is the command's own first one.
	initialExec bool
	chainExec   bool // the approved exec is the start chain's (Config.InitialChain)
	// futexExit is the word of this task's allowed shared FUTEX_WAIT or
	// FUTEX_WAIT_BITSET with a timeout in flight, resumed to its syscall
	// exit (futex.go), 0 when none; futexRestart is the word of such a
	// wait that ended with -ERESTART_RESTARTBLOCK: the kernel saved it
	// for restart_syscall, which is checked against it. A new task
	// inherits its parent's (copy_process copies the task_struct, and
	// restart_block with it), so it is copied at the clone, fork or vfork
	// event; until that event it is decode.RestartUnknown.
	futexExit, futexRestart uint64
	// bindIno is the socket of this task's allowed inet bind in flight,
	// resumed to its syscall exit (listen.go), 0 when none.
	bindIno uint64
	// pendingScratch are the scratch entries this task's allowed call in
	// flight creates: the tree owns them once the call has succeeded
	// (callDone).
	pendingScratch []string
	// pendingMove is this task's allowed rename in flight: the ledger
	// moves the tree's entries to their new names once it has succeeded
	// (callDone, ledger.renameDone). nil when none.
	pendingMove *scratchMove
	// ptyPending: this task's call in flight is a TIOCGPTN on fd ptyFd
	// writing to ptyArg, resumed to its syscall exit, where the pty it
	// names is recorded (pty.go).
	ptyPending bool
	ptyFd      int32
	ptyArg     uint64
	// execing: a thread other than its group's leader stopped at an
	// execve here. If the exec goes through, the kernel frees the
	// thread's tid in de_thread, before the exec event reports it and
	// with no exit status, and may give it to a new task of the tree
	// meanwhile: such a record is stale once its tid is no longer in its
	// group (staleExecer).
	execing bool
	// call is the record of the task's checked call at its seccomp stop
	// (newCall): a task is in one stop at a time, and the record is not
	// kept past it, so each stop reuses it instead of allocating one.
	call call
}

// newCall returns tk's call record, emptied, for call nr named name.
func (tk *task) newCall(nr int, name string) *call {
	tk.call = call{tk: tk, nr: nr, name: name}
	return &tk.call
}

// proc is one traced process (thread group).
type proc struct {
	tgid int
	// threads counts the group's tasks in tree.tasks; the proc is dropped
	// when it reaches 0.
	threads int
	// exe and argv are /proc/<tgid>/exe and cmdline, read at each exec
	// event before the new program runs (the root's first: Config.Argv)
	// and passed on to a forked child, never read from memory the
	// program has had a chance to rewrite; execs counts the group's
	// execs.
	exe  string
	argv []string
	// argvCut: /proc/<tgid>/cmdline held more than maxArgvBytes, of which
	// argv is the start.
	argvCut bool
	execs   int
	// page: whether the tracer's path page is mapped in this process;
	// mem is its /proc/<tid>/mem while it is (pathpage.go).
	page pageState
	mem  *os.File
	// maps answers which mapping holds an address (the shared futex
	// check), opened at the first such check and closed with the address
	// space (dropMaps): the fd keeps the mm it was opened on.
	maps *procmap.Maps
}

// tree is the registry of the traced tree: its tasks and processes, and
// the set of live tids the killer goroutine signals.
//
// Invariants: every task in tasks has its proc in procs, whose threads
// counts the tasks of that group; every tgid that add made a proc for is
// in ever (execEvent's fallback for a missing proc does not add it); live
// holds exactly the tids of tasks (the killer reads it, so it is written
// under liveMu); inFlightN is the number of tasks with inFlight set.
// Everything but live, timedOut, interrupted and dying belongs to the
// tracer thread.
type tree struct {
	// rootPid is the command's process, forked by the tracer.
	rootPid int
	tasks   map[int]*task
	procs   map[int]*proc
	// ever holds every tgid that was ever in the tree: never proof that a
	// pid is the tree's now (pidInTree).
	ever map[int]bool
	// inFlightN counts the tasks whose inFlight is set (setInFlight), so
	// that dirCache need not look at every task on every call.
	inFlightN int
	// seq is the seq of the task add registered last.
	seq uint64
	// departed holds, by their old tid, the records of execing threads
	// found stale (a new task got the tid) before their group's exec
	// event, which takes its exec's details from there
	// (tracer.formerRecord); dropped with the group (dropExecers).
	departed map[int]*task

	// liveMu guards live, timedOut and interrupted, which the killer
	// goroutine reads and writes.
	liveMu sync.Mutex
	// live maps the tids to their thread groups, shared with the killer
	// goroutine, which signals each with tgkill: a tid freed without an
	// exit status (a non-leader's exec, stale.go) that a process outside
	// the tree got meanwhile is in another group, and tgkill misses it.
	live map[int]int
	// timedOut and interrupted say why the killer stopped the tree
	// (Config.Timeout, the run's context).
	timedOut, interrupted bool
	// dying is set once the tree is being killed: every task that still
	// stops is killed on sight and its call denied.
	dying atomic.Bool
}

// init makes tr an empty registry.
func (tr *tree) init() {
	tr.tasks = map[int]*task{}
	tr.procs = map[int]*proc{}
	tr.ever = map[int]bool{}
	tr.live = map[int]int{}
	tr.departed = map[int]*task{}
}

// add registers task tid of thread group tgid, and the group if it is
// new. The tracer adds only tids it does not know (a new child); should
// tid be registered still, the old task is replaced and its flight ends
// (setInFlight), and its group counts one thread more than it has.
func (tr *tree) add(tid, tgid int) *task {
	if old := tr.tasks[tid]; old != nil {
		tr.setInFlight(old, false)
	}
	tr.seq++
	tk := &task{tid: tid, tgid: tgid, seq: tr.seq}
	tr.tasks[tid] = tk
	p := tr.procs[tgid]
	if p == nil {
		p = &proc{tgid: tgid}
		tr.procs[tgid] = p
		tr.ever[tgid] = true
	}
	p.threads++
	tr.liveMu.Lock()
	tr.live[tid] = tgid
	tr.liveMu.Unlock()
	return tk
}

// remove forgets task tid, and its process with its last thread (its path
// page state and memory file with it). It returns the task, nil when tid
// was not known; what the task still holds elsewhere (path page slots,
// its place in the frozen set) is the caller's to free.
func (tr *tree) remove(tid int) *task {
	tk := tr.tasks[tid]
	if tk == nil {
		return nil
	}
	delete(tr.tasks, tid)
	tr.setInFlight(tk, false)
	tr.vforkParentGone(tid)
	if p := tr.procs[tk.tgid]; p != nil {
		p.threads--
		if p.threads <= 0 {
			p.dropPage()
			p.dropMaps()
			delete(tr.procs, tk.tgid)
		}
	}
	tr.liveMu.Lock()
	delete(tr.live, tid)
	tr.liveMu.Unlock()
	return tk
}

// vforkParentGone forgets tid as the sleeping parent of its vfork
// children: its record went (the parent killed, or gone in an exec), or a
// thread's exec killed it and gave its tid to the new program. A task under
// that tid would otherwise be taken for the parent, which a freeze
// interrupts but does not wait for (freeze.go), and run during a frozen
// call.
func (tr *tree) vforkParentGone(tid int) {
	for _, o := range tr.tasks {
		if o.vforkParent == tid {
			o.vforkParent = 0
		}
	}
}

// setInFlight sets tk.inFlight and keeps tr.inFlightN in step.
func (tr *tree) setInFlight(tk *task, v bool) {
	switch {
	case v && !tk.inFlight:
		tr.inFlightN++
	case !v && tk.inFlight:
		tr.inFlightN--
	}
	tk.inFlight = v
}

// forgetCwds forgets every task's remembered cwd (base).
func (tr *tree) forgetCwds() {
	for _, tk := range tr.tasks {
		tk.cwd = ""
	}
}

// tracked reports whether pid is a task or a process of the tree now.
func (tr *tree) tracked(pid int) bool { return tr.tasks[pid] != nil || tr.procs[pid] != nil }

// everHad reports whether pid was ever a process of the tree (a hint that
// spares a /proc read, never proof).
func (tr *tree) everHad(pid int) bool { return tr.ever[pid] }

// hasProc reports whether tgid is a process of the tree now.
func (tr *tree) hasProc(tgid int) bool { return tr.procs[tgid] != nil }

// killAll sends SIGKILL to every task of the tree and marks it dying (a
// setsid escapee has left the process group, so kill by pid, not by
// group). It returns how many signals were sent. Safe on any goroutine.
func (tr *tree) killAll() int {
	tr.liveMu.Lock()
	defer tr.liveMu.Unlock()
	tr.dying.Store(true)
	n := 0
	for tid, tgid := range tr.live {
		if unix.Tgkill(tgid, tid, unix.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// liveGroups counts the thread groups that still have a live task.
func (tr *tree) liveGroups() int {
	tr.liveMu.Lock()
	defer tr.liveMu.Unlock()
	groups := map[int]bool{}
	for x := range tr.live {
		if tt := tr.tasks[x]; tt != nil {
			groups[tt.tgid] = true
		}
	}
	return len(groups)
}

// stopBy records why the killer stops the tree: the timeout (timedOut) or
// the run's context. Safe on any goroutine.
func (tr *tree) stopBy(timedOut bool) {
	tr.liveMu.Lock()
	if timedOut {
		tr.timedOut = true
	} else {
		tr.interrupted = true
	}
	tr.liveMu.Unlock()
}

// stopReason says whether the killer stopped the tree on the timeout or
// the run's context (stopBy).
func (tr *tree) stopReason() (timedOut, interrupted bool) {
	tr.liveMu.Lock()
	defer tr.liveMu.Unlock()
	return tr.timedOut, tr.interrupted
}

// procInfo returns the exe and argv of a traced process, read once per exec
// (a process the tree no longer has is read every time).
func (tr *tree) procInfo(tgid int) (string, []string, bool) {
	p := tr.procs[tgid]
	if p == nil {
		p = &proc{tgid: tgid}
	}
	if p.exe == "" {
		p.exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", tgid))
	}
	if p.argv == nil {
		p.argv, p.argvCut = readCmdline(tgid)
	}
	return p.exe, p.argv, p.argvCut
}

// readCmdline returns the argv in /proc/<pid>/cmdline, nil when it cannot
// be read. That is the process's own memory: read it at the exec event,
// before the new program runs, or it says what the program wrote there
// (a red team reported a forged argv this way, session 23).
func readCmdline(pid int) ([]string, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxArgvBytes+1))
	if err != nil {
		return nil, false
	}
	cut := len(b) > maxArgvBytes
	if cut {
		b = b[:maxArgvBytes]
	}
	b = bytes.TrimSuffix(b, []byte{0})
	argv := []string{}
	for _, a := range bytes.Split(b, []byte{0}) {
		argv = append(argv, string(a))
	}
	return argv, cut
}

// maxArgvBytes bounds the argv a process's denials carry: its first 4 KiB
// (report.Event.ArgvTruncated says when there was more). Every denial
// repeats its process's argv, and a tree that exec'd an allowed program
// with megabytes of arguments (ARG_MAX grows with RLIMIT_STACK) and then
// made thousands of denied calls had tracecell write gigabytes of report
// (red team, session 25).
const maxArgvBytes = 4096
