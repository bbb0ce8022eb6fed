package tracer

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// seccompStop answers a PTRACE_EVENT_SECCOMP stop. It is the pipeline of a
// checked call: stop (which call, copied or frozen), decode (the
// operation and outcome, package decode), decide (the policy's answer),
// act (deny or resume, and record).
func (t *tracer) seccompStop(tk *task) error {
	c, fr, done, err := t.stopCall(tk)
	if done {
		return err
	}
	c, op, fr, done, err := t.decodeCall(c, fr)
	if done {
		return err
	}
	return t.act(c, fr, op, t.decide(c, op))
}

// stopCall reads the stopped call and keeps its arguments from changing
// under the check: copied to the path page or with the tree frozen. done
// says that the stop is over (not a call to check, or its task is gone),
// with err as seccompStop's answer.
func (t *tracer) stopCall(tk *task) (c *call, fr *freezer, done bool, err error) {
	tid := tk.tid
	if err := t.readRegs(tid); err != nil {
		if err == unix.ESRCH {
			return nil, nil, true, nil // killed meanwhile; wait4 reports it
		}
		return nil, nil, true, err
	}
	nr := t.regs.Nr()
	if t.x32Call(nr) {
		return nil, nil, true, t.foreignStop(tk, nr)
	}
	if nr == t.probeNr && uint32(t.regs.Arg(2)) == probeMagic && tk.tgid == t.tree.rootPid && !t.rootExecDone {
		return nil, nil, true, t.probe(tk)
	}
	// A call noted for its syscall exit is over by now (ptyDone reads the
	// memory it named: never for another call).
	tk.ptyPending = false
	c = tk.newCall(nr, t.table.Name(nr))
	spec, ok := syscalls.Lookup(c.name)
	if !ok {
		// Our filter traps only calls the tables describe; this stop came
		// from a filter the program installed itself (SECCOMP_RET_TRACE):
		// nothing for us to check.
		return nil, nil, true, t.resume(tid, 0)
	}
	c.spec = spec
	if spec.Handler == syscalls.HExec && tk.tid != tk.tgid {
		tk.execing = true // its tid may be freed without a status (stale.go)
	}
	// Another task of the tree could change what the call's arguments name
	// between this check and the kernel's use: copy its path where no task
	// can write (pathpage.go), or stop them all before the arguments are
	// read (freeze.go).
	if !t.needsFreeze(c) {
		return c, nil, false, nil
	}
	// A copyable call runs on its copy without a freeze; any other
	// call that reads memory runs frozen on copies of it, which an
	// exit of a task the freeze cannot hold cannot write (copy and
	// freeze, pathpage.go).
	hasPage := false // the process has the path page (for a frozen call's copies)
	pa, ok := t.copyArg(c)
	if (ok || frozenCopies(c)) && t.page.usable() {
		switch p := t.tree.procs[tk.tgid]; {
		case p == nil || t.tree.dying.Load():
		case p.page == pageUnknown && t.page.ownFilter(tk.tid):
			p.page = pageNone // the injected mmap could meet the program's filter
		case p.page == pageUnknown:
			return nil, nil, true, t.mapPage(tk, p) // the call comes back when it is mapped
		case p.page == pageInherited && !pageReadOnly(tk.tid):
			p.page = pageNone
		case p.page == pageInherited, p.page == pageMapped:
			p.page = pageMapped
			hasPage = true
			if !ok {
				break
			}
			if i := t.page.take(); i >= 0 {
				c.copying, c.slot, c.copyArg = true, i, pa.Arg
			}
		}
	}
	if c.copying {
		return c, nil, false, nil
	}
	fr, done, err = t.freezeCaller(tk)
	if done {
		return nil, nil, true, err
	}
	c.frozen, c.fcopy = true, hasPage
	if frozenCopies(c) || c.name == "sendmmsg" {
		t.judgeMM(c)
	}
	return c, fr, false, nil
}

// decodeCall decodes c (package decode, and the families still decoded
// here), decoding it again frozen when its copy failed, and judges what
// the checked memory allows now that it is known. The call it returns may
// be a new one (decided again); done says that the stop is over.
func (t *tracer) decodeCall(c *call, fr *freezer) (_ *call, op *policy.Op, _ *freezer, done bool, err error) {
	tk, spec := c.tk, c.spec
	op = t.decodeOp(c)
	if c.copyFail || c.copyUnsafe {
		// The page could not be written, or the path is one only a
		// freeze keeps from changing (uncopyable): decide the call
		// again, frozen.
		t.page.put(c.slot)
		// The process had the page when the stop began: only a copied
		// call is decided again (its copies are tried again; a page that
		// cannot be written is reported so, copyFrozen).
		hasPage := c.copying
		c = &call{tk: tk, nr: c.nr, name: c.name, spec: spec}
		f, done, err := t.freezeCaller(tk)
		if done {
			return nil, nil, nil, true, err
		}
		fr = f
		if p := t.tree.procs[tk.tgid]; p != nil && p.page == pageMapped {
			hasPage = true
		}
		c.frozen, c.fcopy = true, hasPage
		t.judgeMM(c) // a copyable call: frozenCopies
		op = t.decodeOp(c)
	}
	if c.uncopied && !c.Out.Fails() && c.Out.Verdict != decode.Limit && !t.audit && !t.cfg.NoPathPage {
		// Some checked memory could not be copied: the call may run on
		// its own memory only where no exit can write it; otherwise a
		// call the policy would allow is denied (below). Judged now,
		// with the tree frozen. (Not with Config.NoPathPage: the freeze
		// alone was asked for; the README names the gap.)
		if why := t.exitWritable(c, c.spans); why != "" {
			if op == nil {
				op = &policy.Op{Kind: spec.Kind, Syscall: c.name}
			}
			c.exitDeny = &policy.Decision{Rule: policy.RuleKernelRewritten, Errno: syscall.EACCES,
				Reason: fmt.Sprintf("tracecell could not copy the memory %s reads where the program cannot write it (%s), and %s: a task killed while the tree is stopped could change it after the check (its exit writes clear_child_tid and robust futexes), so the call is denied to be safe", c.name, c.noCopy, why)}
		}
	}
	if fr != nil {
		fr.relookup = c.Relookup
		if spec.Handler == syscalls.HFutex {
			fr.blockAfter, fr.noPaths = futexBlocked, true
		}
	}
	if op != nil && movesDirs(op) {
		// Decided or not, the walks after this one must not trust where
		// directories were (pathres.DirCache), nor what a cwd is called.
		t.forgetDirs()
	}
	return c, op, fr, false, nil
}

// decodeOp is decode, with its notes applied (a chdir forgets the cwds; a
// TIOCGPTN or a futex call leaves its syscall exit to follow), and the
// policy's pick of the operation that decides a call acting on several
// objects (decode.Result.Ops: policy.Worst; decoding itself never decides).
func (t *tracer) decodeOp(c *call) *policy.Op {
	op := t.decode(c)
	if c.ForgetCwds {
		t.tree.forgetCwds() // chdir, fchdir: run frozen, so no check comes between
	}
	if c.FollowPty {
		t.ptyStarts(c) // TIOCGPTN: its result is read at the syscall exit
	}
	if c.Futex.ClearRestart {
		c.tk.futexRestart = 0
	}
	if c.Futex.Passed {
		c.tk.futexExit = c.Futex.Exit // followed to the syscall exit (futex.go)
	}
	if len(c.Ops) > 0 {
		op = t.pol.Worst(c.Ops, t.ledger)
	}
	return op
}

// action is what the act stage does with a call.
type action uint8

const (
	actFailClosed   action = iota // deny with the decode's errno, reported (audit: allow, reported)
	actKernelFails                // fail with the decode's errno, as the kernel would: no denial
	actPass                       // allow without a decision (--trace records it)
	actAllow                      // allowed by the decision
	actKernelAnswer               // denied, but the kernel fails it first (EEXIST, ENOENT): its answer
	actDeny                       // denied by the decision (audit: allowed, reported)
)

// verdict is the decide stage's answer for one call.
type verdict struct {
	// act is what the act stage does.
	act action
	// d is the decision (actFailClosed, actAllow, actDeny).
	d policy.Decision
	// errno fails the call (actKernelFails, actKernelAnswer).
	errno syscall.Errno
}

// decide answers a decoded call: from its outcome, or by the policy.
func (t *tracer) decide(c *call, op *policy.Op) verdict {
	t.rec.counts.Checked++
	switch {
	case c.Out.Fails() && c.Out.Why != "":
		// Fail closed, and say so: a blocked action is always reported.
		return verdict{act: actFailClosed, d: policy.FailClosed{Cause: c.Out.Why}.Decision(c.Out.Errno)}
	case c.Out.Fails():
		// The kernel would fail this call the same way before touching
		// anything (a missing directory, a bad fd or pointer): not a denial.
		return verdict{act: actKernelFails, errno: c.Out.Errno}
	case c.Out.Verdict == decode.Pass && c.exitDeny == nil:
		return verdict{act: actPass}
	}
	var d policy.Decision
	switch {
	case c.Out.Verdict == decode.Limit:
		d = *c.Out.Decision
	case c.Out.Verdict == decode.Pass: // harmless but for memory an exit could write (exitDeny)
		d = *c.exitDeny
	default:
		d = t.pol.Decide(op, t.ledger)
		if d.Allow && c.exitDeny != nil {
			d = *c.exitDeny
		}
		if d.Allow && len(d.Scratch) > 0 && t.ledger.full(d.Scratch) {
			d = policy.Decision{Rule: policy.RuleScratchFull, Errno: syscall.ENOSPC,
				Reason: fmt.Sprintf("tracecell keeps at most %d entries (%d MiB of names) the tree made in scratch directories, and this create would need more: remove some first", maxLedgerEntries, maxLedgerNames>>20)}
		}
	}
	if d.Allow {
		return verdict{act: actAllow, d: d}
	}
	if e := t.kernelFails(c, op); e != 0 && c.Out.Verdict != decode.Limit {
		// The kernel fails this call before it can change anything
		// (EEXIST, ENOENT): its answer, not a denial. Given by the tracer
		// without running the call, so that no race can make it succeed.
		return verdict{act: actKernelAnswer, errno: e}
	}
	return verdict{act: actDeny, d: d}
}

// act carries out v for c: it denies or resumes the call, records its
// event, and notes what an allowed call starts (scratch, exec, bind).
func (t *tracer) act(c *call, fr *freezer, op *policy.Op, v verdict) error {
	tk, tid, spec := c.tk, c.tk.tid, c.spec
	switch v.act {
	case actFailClosed:
		ev := t.newEvent(c, op, v.d)
		if len(ev.Paths) == 0 {
			ev.Paths = []policy.Path{c.Out.Path}
		}
		if ev.Kind == 0 {
			ev.Kind = spec.Kind
			// An open that failed closed before its operation was made
			// is a read or a write by its flags, as it would have been
			// decided (round 58: a read was reported as a write).
			if c.HasOpenFlags && !syscalls.OpenWrites(c.OpenFlags) {
				ev.Kind = syscalls.KindRead
			}
		}
		if t.audit {
			ev.Decision, ev.Errno = report.Audit, ""
			ev.Reason = policy.FailClosed{Cause: c.Out.Why}.Text(policy.Audit)
			t.record(ev, true)
			return t.release(c, fr, true)
		}
		t.record(ev, false)
		if err := t.deny(tid, v.d.Errno); err != nil {
			return err
		}
		return t.release(c, fr, false)
	case actKernelFails:
		t.rec.counts.Failed++
		if err := t.deny(tid, v.errno); err != nil {
			return err
		}
		return t.release(c, fr, false)
	case actPass:
		if t.cfg.TraceAll && op != nil {
			t.record(t.newEvent(c, op, policy.Decision{Allow: true}), true)
		}
		t.rec.counts.Allowed++
		return t.release(c, fr, true)
	case actAllow:
		t.rec.counts.Allowed++
		t.scratchStarts(c, op, v.d)
		if spec.Handler == syscalls.HExec && len(op.Paths) > 0 {
			tk.approvedExec = op.Paths[0].Resolved
			tk.initialExec = op.Initial
		}
		if spec.Handler == syscalls.HSocket {
			t.bindStarts(c, op)
		}
		if t.cfg.TraceAll {
			t.record(t.newEvent(c, op, v.d), true)
		}
		return t.release(c, fr, true)
	case actKernelAnswer:
		t.rec.counts.Failed++
		if t.audit {
			return t.release(c, fr, true) // the kernel answers the same
		}
		if err := t.deny(tid, v.errno); err != nil {
			return err
		}
		return t.release(c, fr, false)
	}
	ev := t.newEvent(c, op, v.d)
	if t.audit && c.Out.Verdict != decode.Limit {
		ev.Decision = report.Audit
		t.record(ev, true)
		if spec.Handler == syscalls.HExec && len(op.Paths) > 0 {
			tk.approvedExec = op.Paths[0].Resolved
		}
		t.scratchStarts(c, op, v.d)
		// No freeze in audit mode (needsFreeze), but a decision always
		// leaves through release: a frozen tree is never left stopped.
		return t.release(c, fr, true)
	}
	t.record(ev, false)
	errno := v.d.Errno
	if errno == 0 {
		errno = syscall.EACCES
	}
	if err := t.deny(tid, errno); err != nil {
		return err
	}
	return t.release(c, fr, false)
}
