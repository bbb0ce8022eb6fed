package tracer

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// event handles a PTRACE_EVENT_* stop.
func (t *tracer) event(tk *task, cause int) error {
	tid := tk.tid
	switch cause {
	case unix.PTRACE_EVENT_SECCOMP:
		return t.seccompStop(tk)
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		msg, err := unix.PtraceGetEventMsg(tid)
		if err == nil {
			nt := int(msg)
			n := t.tree.tasks[nt]
			held := 0
			if n != nil && staleExecer(n) {
				held = t.retireStale(n) // stale.go
				n = nil
			}
			if n == nil {
				// The event does not tell a thread from a process:
				// kernel_clone picks it from CLONE_VFORK and the exit
				// signal (SIGCHLD: fork), not CLONE_THREAD, so a
				// clone(2) of a thread with exit signal SIGCHLD comes
				// as a fork event. Taken for a process of its own, such
				// a thread was decided on its own /proc/self, cwd and
				// group while the kernel used its leader's (a red team:
				// /proc/self/cwd/x with O_CREAT, the leader's cwd
				// outside the sandbox: 500 of 500 files outside), and
				// the killer's tgkill missed it. cloneTgid asks the
				// kernel for every event.
				n = t.tree.add(nt, cloneTgid(tk.tgid, nt))
				n.waitStop = true
				n.held = held
				t.rec.taskBorn(n)
			}
			// The child inherits the parent's saved restart
			// (copy_process: restart_block is part of the copied
			// task_struct), a shared futex wait's among them.
			n.futexRestart = tk.futexRestart
			// A forked child runs the parent's program with its argv
			// until it execs: what /proc/<child>/cmdline shows is the
			// parent's memory as it is now, which the parent may have
			// rewritten.
			if pp, cp := t.tree.procs[tk.tgid], t.tree.procs[n.tgid]; n.tgid != tk.tgid && pp != nil && cp != nil && cp.execs == 0 && cp.argv == nil {
				cp.exe, cp.argv, cp.argvCut = pp.exe, pp.argv, pp.argvCut
			}
			if pp, cp := t.tree.procs[tk.tgid], t.tree.procs[n.tgid]; n.tgid != tk.tgid && pp != nil && cp != nil &&
				pp.page == pageMapped && cp.page == pageUnknown && cp.execs == 0 {
				// fork copies the path page, clone(CLONE_VM) and vfork
				// share it (the parent could not unmap it nor mark it
				// MADV_DONTFORK or MADV_WIPEONFORK: decodeMem), unless
				// the page came after the copy: checked at first use.
				cp.page = pageInherited
			}
			if cause == unix.PTRACE_EVENT_VFORK {
				// tid sleeps in the kernel until nt execs or exits.
				n.vforkParent = tid
			}
			if n.tgid != tk.tgid {
				name := map[int]string{unix.PTRACE_EVENT_FORK: "fork", unix.PTRACE_EVENT_VFORK: "vfork", unix.PTRACE_EVENT_CLONE: "clone"}[cause]
				t.lifecycle(tk.tgid, tid, name, func(ev *report.Event) { ev.ChildPid = n.tgid })
			}
		} else if err != unix.ESRCH {
			return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_GETEVENTMSG) pid %d", tid), err)
		}
	case unix.PTRACE_EVENT_EXEC:
		return t.execEvent(tk)
	}
	return t.resume(tid, 0)
}

// execEvent enforces the exec policy after the kernel replaced the process
// image and before any of the new code runs: the execve stop checked the path
// the program gave, this checks what the kernel actually loaded.
func (t *tracer) execEvent(tk *task) error {
	tid := tk.tid
	approved, initial, chain := tk.approvedExec, tk.initialExec, tk.chainExec
	if msg, err := unix.PtraceGetEventMsg(tid); err == nil && int(msg) != tid {
		// A non-leader thread exec'd: it now carries the leader's tid.
		// Its record is the one of the group under the former tid, or
		// aside if a new task got that tid first (stale.go).
		// The leader it replaced is dead, a vfork parent or not (a red
		// team: its vfork child still named the tid, and freezes then
		// did not wait for the new program).
		t.tree.vforkParentGone(tid)
		if old := t.formerRecord(int(msg), tk.tgid); old != nil {
			approved, initial, chain = old.approvedExec, old.initialExec, old.chainExec
			// Its saved restart too: exec does not reset restart_block.
			tk.futexRestart = old.futexRestart
		}
	}
	tk.execing = false // the leader now
	// The thread that exec'd may have had its own cwd (clone without
	// CLONE_FS) and now carries the leader's tid. It is in no call left to
	// finish unfrozen (a leader that was is gone, and its syscall-exit stop
	// with it), which would otherwise keep the walk cache off for good.
	t.tree.forgetCwds()
	t.tree.setInFlight(tk, false)
	// The leader's struct, its copied call killed by the exec.
	t.page.release(tk)
	// All other threads of the group are gone.
	for x, o := range t.tree.tasks {
		if o.tgid == tk.tgid && x != tid {
			t.removeTask(x)
		}
	}
	tk.approvedExec, tk.initialExec, tk.chainExec = "", false, false
	tk.vforkParent = 0 // the exec released the vfork parent
	p := t.tree.procs[tk.tgid]
	if p == nil {
		p = &proc{tgid: tk.tgid, threads: 1}
		t.tree.procs[tk.tgid] = p
	}
	// The argv the kernel copied: nothing of the new program has run yet.
	// The root's first exec is tracecell's own, with Config.Argv.
	if initial && tid == t.tree.rootPid && !t.rootExecDone {
		p.argv, p.argvCut = append([]string{}, t.cfg.Argv...), false
	} else {
		p.argv, p.argvCut = readCmdline(tid)
	}
	p.dropPage() // a new address space
	p.dropMaps()
	exeLink := fmt.Sprintf("/proc/%d/exe", tid)
	exe, exeErr := os.Readlink(exeLink)
	p.exe = exe
	p.execs++
	t.rec.counts.Execs++
	if exeErr != nil {
		// The new program's process is not dumpable: an image the tree
		// may not read (mode 0111) or a set-id one makes it so
		// (would_dump, begin_new_exec), and a tracer without
		// CAP_SYS_PTRACE can then neither name what was loaded nor read
		// the process's fds and memory at its later calls. Fail closed
		// (red team, session 25: an execute-only program of the tree's
		// own ran past an approved path swapped after the check, since
		// "" matched no script's interpreter, "", either).
		return t.killExec(tk, "", approved, fmt.Sprintf("tracecell cannot read %s (%v): the program loaded is not readable to the tree (an execute-only or set-id file), so its process could not be checked: process killed", exeLink, exeErr))
	}
	if initial && tid == t.tree.rootPid && !t.rootExecDone {
		t.rootExecDone = true
		if err := t.resume(tid, 0); err != nil {
			return err
		}
		if t.cfg.OnRunning != nil {
			t.cfg.OnRunning()
		}
		return nil
	}
	// The text is the loaded file's path in the namespace of the mount it
	// is on: decide on it only when it names that file in tracecell's.
	unverified := exeUnverified(exeLink, exe)
	if unverified == "" && initial && chain && tk.tgid == t.tree.rootPid && approved == exe {
		return t.resume(tid, 0) // the start chain's one exec, loaded as approved
	}
	op := &policy.Op{Kind: syscalls.KindExec, Syscall: "execve", Paths: []policy.Path{{Role: "program", Given: exe, Resolved: exe, Exists: true}}}
	d := t.pol.Decide(op, t.ledger)
	if unverified == "" && (d.Allow || (approved != "" && (approved == exe || interpreterOf(approved) == exe))) {
		return t.resume(tid, 0)
	}
	reason := fmt.Sprintf("the kernel loaded %s, not the approved program %q: process killed", exe, approved)
	if unverified != "" {
		reason = fmt.Sprintf("the kernel loaded a program tracecell cannot name (%s): process killed", unverified)
	}
	return t.killExec(tk, exe, approved, reason)
}

// killExec records an exec the tracer refuses after the fact (rule
// exec-mismatch, with reason) and kills the task that made it; in audit
// mode it only records it. exe is what the kernel loaded, "" when unknown.
func (t *tracer) killExec(tk *task, exe, approved, reason string) error {
	tid := tk.tid
	op := &policy.Op{Kind: syscalls.KindExec, Syscall: "execve", Paths: []policy.Path{{Role: "program", Given: exe, Resolved: exe, Exists: exe != ""}}}
	if exe == "" {
		op.Paths[0].Given = approved // what was approved; what was loaded is unknown
	}
	d := policy.Decision{Rule: policy.RuleExecMismatch, Errno: syscall.EACCES, Reason: reason}
	ev := t.newEvent(&call{tk: tk, name: "execve", nr: -1}, op, d)
	if t.audit {
		ev.Decision = "audit"
		t.record(ev, true)
		return t.resume(tid, 0)
	}
	t.record(ev, false)
	unix.Kill(tid, unix.SIGKILL)
	return t.resume(tid, 0)
}

// interpreterOf returns the resolved interpreter of a "#!" script, or "".
func interpreterOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(line[2:])
	if len(fields) == 0 {
		return ""
	}
	r, err := filepath.EvalSymlinks(fields[0])
	if err != nil {
		return ""
	}
	return r
}

// syscallStop handles a syscall-entry or -exit stop: the root thread's
// while the stop order is probed, and the syscall-exit stop of a checked
// call that a freeze left to finish unfrozen (freeze.go).
func (t *tracer) syscallStop(tk *task) error {
	unfrozen := tk.inFlight
	t.tree.setInFlight(tk, false)
	t.callDone(tk, unfrozen)
	if tk.slot != 0 {
		if err := t.endCopied(tk); err != nil {
			return err
		}
	}
	if len(tk.copies) > 0 {
		// A frozen call on copies, left to finish unfrozen.
		if err := t.endCopies(tk); err != nil {
			return err
		}
	}
	if t.probeState == 1 && tk.tid == t.tree.rootPid {
		if t.readRegs(tk.tid) == nil {
			if t.regs.Nr() == t.probeNr && uint32(t.regs.Arg(2)) == probeMagic && t.regs.AtSyscallEntry() {
				t.probeEntry = true
			}
		}
	}
	return t.resume(tk.tid, 0)
}

// probe answers the child's two probe calls. The first is denied and turns on
// syscall stops for the root thread; at the second, a kernel with the
// order since 4.8 has already shown the syscall-entry stop (commit
// 93e35efb8de4, "x86/ptrace: run seccomp after ptrace"). With the old order
// a denial at the seccomp stop cannot be trusted: refuse to run.
func (t *tracer) probe(tk *task) error {
	switch t.probeState {
	case 0:
		t.probeState = 1
	case 1:
		if !t.probeEntry {
			unix.Kill(tk.tid, unix.SIGKILL)
			return fmt.Errorf("this kernel reports seccomp stops before syscall-entry stops (the order before Linux 4.8): tracecell cannot enforce a policy here; use a kernel with the 4.8 order (RHEL 8's 4.18 has it)")
		}
		t.probeState = 2
	default:
		// The target itself made a call that looks like the probe: deny it
		// like any forbidden call would be.
	}
	if err := t.deny(tk.tid, probeErrno); err != nil {
		return err
	}
	return t.resume(tk.tid, 0)
}

// deny makes the call the thread is stopped in fail with errno.
//
// Precondition: t.regs holds tid's registers from this stop.
func (t *tracer) deny(tid int, errno syscall.Errno) error {
	for _, w := range t.regs.Deny(errno) {
		if _, err := ptraceRegset(unix.PTRACE_SETREGSET, tid, w.Note, w.Data); err != nil {
			if err == unix.ESRCH {
				return nil
			}
			return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SETREGSET, note %#x) pid %d", w.Note, tid), err)
		}
	}
	return nil
}

// scratchStarts updates the ledger for an allowed call. The entries it
// creates in a scratch directory are the tree's only once the call has made
// them (callDone), recorded with the identity of what it made: a create the
// tree lets fail on purpose (EMFILE, ENOSPC) must not leave it owning a
// name a host process may take later. The entries it deletes stop being
// its own at once (should the call fail, the tree only loses a right). A
// rename moves the tree's entries to their new names once it has
// succeeded (callDone, ledger.renameDone): the objects keep their
// identities, and until then the old names still hold them.
func (t *tracer) scratchStarts(c *call, op *policy.Op, d policy.Decision) {
	if op != nil {
		switch op.Kind {
		case syscalls.KindDelete:
			for _, p := range op.Paths {
				t.ledger.drop(p.Resolved)
			}
		case syscalls.KindRename:
			exchange := c.name == "renameat2" && t.flagsArg(c)&unix.RENAME_EXCHANGE != 0
			whiteout := c.name == "renameat2" && t.flagsArg(c)&unix.RENAME_WHITEOUT != 0
			if len(op.Paths) == 2 {
				src, dst := op.Paths[0], op.Paths[1]
				if src.Role == "target" {
					src, dst = dst, src
				}
				fresh := slices.Contains(d.Scratch, dst.Resolved)
				if fresh || t.ledger.involves(src.Resolved, dst.Resolved) {
					c.tk.pendingMove = &scratchMove{from: src.Resolved, to: dst.Resolved, exchange: exchange, fresh: fresh, whiteout: whiteout}
				}
			}
		}
	}
	if len(d.Scratch) > 0 {
		c.tk.pendingScratch = append(c.tk.pendingScratch[:0], d.Scratch...)
	}
}

// exeUnverified says why the text exe read from the magic link link
// (/proc/<pid>/exe) does not name the loaded file in tracecell's mount
// namespace (pathres.CheckLink), or "" when it does. An unlinked file's text
// (" (deleted)") is no name at all, and the policy never allows it.
func exeUnverified(link, exe string) string {
	if exe == "" || strings.HasSuffix(exe, " (deleted)") {
		return ""
	}
	obj, err := pathres.StatID(link, true)
	if err != nil {
		return fmt.Sprintf("stat %s: %v", link, err)
	}
	if _, err := pathres.CheckLink(link, exe, obj); err != nil {
		return err.Error()
	}
	return ""
}

// lifecycle writes a process event (report.RuleLifecycle) to the trace: the
// process tree of `tracecell report` comes from these. Only with TraceAll
// (a --trace file); never counted as a checked call.
func (t *tracer) lifecycle(tgid, tid int, name string, set func(*report.Event)) {
	if !t.cfg.TraceAll || t.cfg.OnEvent == nil {
		return
	}
	exe, argv, cut := t.tree.procInfo(tgid)
	ev := &report.Event{
		Time: time.Now().UTC(), Decision: report.Allow, Pid: tgid, Tid: tid,
		Exe: exe, Argv: argv, ArgvTruncated: cut, Program: programName(exe),
		Syscall: name, ABI: t.layout.Name, Kind: syscalls.KindProcess, Rule: report.RuleLifecycle,
	}
	set(ev)
	t.cfg.OnEvent(ev)
}
