package decode

import (
	"fmt"
	"github.com/tracecell/tracecell/arch"
	"syscall"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// signal handles kill, tkill, tgkill, rt_(tg)sigqueueinfo, pidfd_open and
// pidfd_send_signal: the process a signal reaches, in the tree or not.
// Signal 0 only asks whether the target exists (passed); a target that is
// gone fails with ESRCH, as in the kernel.
func (d *Decoder) signal() *policy.Op {
	var pid, sig int
	switch d.Name {
	case "kill":
		pid, sig = int(d.Regs.Int32Arg(0)), int(d.Regs.Int32Arg(1))
	case "tkill":
		pid, sig = int(d.Regs.Int32Arg(0)), int(d.Regs.Int32Arg(1))
		if pid <= 0 {
			d.Out = KernelFailsWith(syscall.EINVAL)
			return nil
		}
	case "tgkill", "rt_tgsigqueueinfo":
		pid, sig = int(d.Regs.Int32Arg(1)), int(d.Regs.Int32Arg(2))
		if tg := int(d.Regs.Int32Arg(0)); tg > 0 && !d.Env.PidInTree(tg) {
			pid = tg
		}
		if pid <= 0 {
			d.Out = KernelFailsWith(syscall.EINVAL)
			return nil
		}
	case "rt_sigqueueinfo":
		pid, sig = int(d.Regs.Int32Arg(0)), int(d.Regs.Int32Arg(1))
	case "pidfd_send_signal":
		sig = int(d.Regs.Int32Arg(1))
		p, errno, why := d.Env.PidfdPid(d.Regs.Int32Arg(0))
		if errno != 0 {
			d.Out = KernelFailsWith(errno)
			if why != "" {
				// Fail closed, reported: the fd names a process
				// tracecell cannot put a pid on.
				p := policy.Path{Given: fmt.Sprintf("fd %d", d.Regs.Int32Arg(0))}
				if l, ok := d.Env.FdLink(d.Regs.Int32Arg(0)); ok {
					p.Resolved = l
				}
				d.Out = FailClosedWith(errno, why, p)
			}
			return nil
		}
		pid = p
	case "pidfd_open":
		pid = int(d.Regs.Int32Arg(0))
		if pid <= 0 {
			d.Out = KernelFailsWith(syscall.EINVAL)
			return nil
		}
	default:
		pid = int(d.Regs.Int32Arg(d.Spec.PidArg))
	}
	d.Sig = sig
	if sig == int(syscall.SIGSYS) && carriesSiginfo(d.Name, d.Regs) {
		// A siginfo of the sender's choosing may say SYS_SECCOMP with
		// another arch: the kernel's own report of a seccomp trap, by
		// which tracecell learns of a call of a foreign ABI (tracer:
		// foreign.go). The kernel lets a process queue any si_code to
		// itself (rt_sigqueueinfo checks si_code >= 0 only for other
		// processes), so the tree could have a blocked int 0x80 call
		// reported that it never made (red team, round 44). A SIGSYS
		// sent any other way (kill, tgkill) carries SI_USER or SI_TKILL.
		return &policy.Op{Kind: syscalls.KindForbidden, Syscall: d.Name, Option: "SIGSYS", TargetPid: pid, TargetInTree: d.Env.PidInTree(pid)}
	}
	op := &policy.Op{Kind: syscalls.KindSignal, Syscall: d.Name, TargetPid: pid, TargetInTree: d.Env.PidInTree(pid)}
	if !op.TargetInTree && d.Env.PidGone(pid) {
		d.Out = KernelFailsWith(syscall.ESRCH)
		return nil
	}
	if sig == 0 && d.Name != "pidfd_open" && pid != -1 {
		// Signal 0 only asks whether the process exists.
		d.Out = PassOutcome()
	}
	return op
}

// process handles the calls that act on another process or group
// (setpriority, ioprio_set, prlimit64, sched_setaffinity, ...): a target
// that is gone fails with ESRCH.
func (d *Decoder) process() *policy.Op {
	op := d.processOp()
	if op != nil && !op.TargetInTree && d.Env.PidGone(op.TargetPid) {
		d.Out = KernelFailsWith(syscall.ESRCH)
		return nil
	}
	return op
}

// processOp is process's operation: the target as the call's arguments
// name it (a pid, a group, every process of a user).
func (d *Decoder) processOp() *policy.Op {
	op := &policy.Op{Kind: syscalls.KindProcess, Syscall: d.Name}
	switch d.Name {
	case "setpriority", "ioprio_set":
		which, who := int(d.Regs.Int32Arg(0)), int(d.Regs.Int32Arg(1))
		// setpriority: PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2;
		// ioprio_set: IOPRIO_WHO_PROCESS 1, _PGRP 2, _USER 3.
		process, group := 0, 1
		if d.Name == "ioprio_set" {
			process, group = 1, 2
		}
		switch which {
		case process:
			op.TargetPid, op.TargetInTree = who, who == 0 || d.Env.PidInTree(who)
		case group:
			op.TargetPid, op.TargetInTree = -who, who == 0 || d.Env.PgrpInTree(who)
		default:
			op.TargetPid, op.TargetInTree = -1, false // every process of a user
		}
	case "kcmp":
		// Both pids name processes whose resources are compared: the
		// first one outside the tree is the target. The kernel takes no
		// 0 for the caller (ESRCH).
		p1, p2 := int(d.Regs.Int32Arg(0)), int(d.Regs.Int32Arg(1))
		op.TargetPid, op.TargetInTree = p1, d.Env.PidInTree(p1)
		if op.TargetInTree {
			op.TargetPid, op.TargetInTree = p2, d.Env.PidInTree(p2)
		}
	case "prlimit64":
		pid := int(d.Regs.Int32Arg(0))
		if d.Regs.Arg(2) == 0 {
			d.Out = PassOutcome() // only reads the limits
		}
		op.TargetPid, op.TargetInTree = pid, pid == 0 || d.Env.PidInTree(pid)
	default:
		pid := int(d.Regs.Int32Arg(d.Spec.PidArg))
		op.TargetPid, op.TargetInTree = pid, pid == 0 || d.Env.PidInTree(pid)
	}
	return op
}

// carriesSiginfo reports whether the signal call name passes a siginfo of
// the caller's making: rt_sigqueueinfo and rt_tgsigqueueinfo always,
// pidfd_send_signal when its info argument is not NULL (else the kernel
// fills one in as kill does).
func carriesSiginfo(name string, r *arch.Regs) bool {
	switch name {
	case "rt_sigqueueinfo", "rt_tgsigqueueinfo":
		return true
	case "pidfd_send_signal":
		return r.Arg(2) != 0
	}
	return false
}
