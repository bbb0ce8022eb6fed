package tracer

// Calls of a foreign ABI: i386 through int 0x80 (and AArch32 on arm64),
// and x32 on x86_64. The tracer checks native calls only, so none may run;
// each is reported with its ABI and number, and its process killed.
//
//   - x32 (a native-arch call whose number has __X32_SYSCALL_BIT,
//     0x40000000): the filter traps it (SECCOMP_RET_TRACE). At the stop the
//     number in orig_rax carries the bit (seccomp_data.nr is regs->orig_ax
//     on every kernel since seccomp filters, 3.5), and no filter can change
//     a register: a filter the tree installs can only turn the trap into a
//     kill, a SIGSYS, an errno or the same trap (SECCOMP_RET_TRACE
//     outranks SECCOMP_RET_ALLOW), never let the call through. The tracer
//     reports the call, fails it (ENOSYS) and kills the process.
//   - another arch (seccomp_data.arch AUDIT_ARCH_I386 on x86_64): the
//     filter answers SECCOMP_RET_TRAP. The kernel skips the call and forces
//     a SIGSYS whose siginfo it fills with the call's number and arch
//     (kernel/seccomp.c seccomp_init_siginfo: si_code SYS_SECCOMP,
//     si_syscall, si_arch); the tracer takes it at its signal-delivery
//     stop, before any code of the tree runs, reports it and kills the
//     process instead of delivering it. A trace stop would not do: at one,
//     nothing a 4.18 tracer can read tells the ABI (PTRACE_GET_SYSCALL_INFO
//     is 5.3), RET_DATA can be forged by a later filter of the tree's (for
//     equal actions the newest filter's data wins), and the i386 number
//     would be taken for a native one. TRAP cannot be outranked but by a
//     kill: the call never runs whatever filters the tree adds, and
//     without the tracer the default action of SIGSYS kills. A SIGSYS the
//     tree would forge for itself (rt_sigqueueinfo to its own pid may
//     carry si_code SYS_SECCOMP) is refused at the call (decode: signal),
//     so the siginfo of a SIGSYS comes from the kernel or from kill/tgkill
//     (SI_USER, SI_TKILL).

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// x32Call reports whether nr (orig_rax at a seccomp stop) is an x32 call.
func (t *tracer) x32Call(nr int) bool {
	x := t.table.X32Bit
	return x != 0 && nr >= 0 && uint32(nr)&x != 0
}

// foreignStop answers the seccomp stop of an x32 call: reported, failed
// with ENOSYS, and the process killed.
func (t *tracer) foreignStop(tk *task, nr int) error {
	abi, name, what := t.x32Name(nr)
	c := &call{tk: tk, nr: nr, name: name}
	op := &policy.Op{Kind: syscalls.KindForbidden, Syscall: name}
	d := policy.Decision{Rule: policy.RuleForeignABI, Errno: syscall.ENOSYS,
		Reason: what + ": tracecell checks only native " + t.table.ABI + " calls, so the process is killed"}
	ev := t.newEvent(c, op, d)
	ev.ABI = abi
	t.rec.counts.Checked++
	t.record(ev, false)
	if err := t.deny(tk.tid, syscall.ENOSYS); err != nil {
		return err
	}
	unix.Kill(tk.tgid, unix.SIGKILL)
	return t.resume(tk.tid, 0)
}

// x32Name is the ABI, the report's syscall name and a description of the
// x32 call nr (with its x32 bit).
func (t *tracer) x32Name(nr int) (abi, name, what string) {
	native := uint32(nr) &^ t.table.X32Bit
	name = t.table.Name(int(native))
	what = "a system call of a foreign ABI, x32: number " + strconv.Itoa(int(native))
	if name != "" && native < 512 { // 512 and up are x32's own compat calls
		what += " (" + name + ")"
	} else {
		name = "x32_" + strconv.Itoa(int(native))
	}
	return "x32", name, what
}

// sysSeccomp is SYS_SECCOMP, the si_code of a SIGSYS from SECCOMP_RET_TRAP.
const sysSeccomp = 1

// foreignTrap handles a signal-delivery stop of SIGSYS: when it is the
// kernel's for a call of a foreign ABI (filter.RetTrap), the call is
// reported and the process killed, and foreignTrap returns true. A SIGSYS
// of a filter of the program's own (native arch) is passed on as any
// signal.
func (t *tracer) foreignTrap(tk *task) (bool, error) {
	si, err := ptraceSiginfo(tk.tid)
	if err != nil {
		return false, nil // a group-stop, or gone: handle decides
	}
	// siginfo_t on 64-bit: si_signo, si_errno, si_code, padding, then for
	// SIGSYS void *_call_addr, int _syscall, unsigned int _arch.
	code := int32(binary.LittleEndian.Uint32(si[8:]))
	nr := int32(binary.LittleEndian.Uint32(si[24:]))
	arch := binary.LittleEndian.Uint32(si[28:])
	// si_code 1 is also CLD_EXITED: a child whose exit signal is SIGSYS
	// (clone's low byte) sends its parent a SIGSYS with that code, its
	// exit status where the call's number would be and zeros at the arch
	// (red team, round 45). The kernel's seccomp SIGSYS names the call's
	// arch, and the only ones the filter traps are the compat ABI's
	// (i386, AArch32) and x32 numbers of the native one.
	if code != sysSeccomp || !(arch == t.table.CompatAuditArch || (arch == t.table.AuditArch && t.x32Call(int(nr)))) {
		return false, nil
	}
	abi := archName(arch)
	name := abi + "_" + strconv.Itoa(int(nr))
	what := "a system call of a foreign ABI, " + abi + ": number " + strconv.Itoa(int(nr))
	if arch == t.table.AuditArch { // x32 (the filter traces these; a filter of the tree's may trap them)
		abi, name, what = t.x32Name(int(nr))
	}
	return true, t.killForeign(tk, int(nr), abi, name, what)
}

// killForeign reports a call (or process) of a foreign ABI found at tk's
// signal-delivery stop and kills its process; the signal is not delivered.
func (t *tracer) killForeign(tk *task, nr int, abi, name, what string) error {
	c := &call{tk: tk, nr: nr, name: name}
	ev := t.newEvent(c, &policy.Op{Kind: syscalls.KindForbidden, Syscall: name},
		policy.Decision{Rule: policy.RuleForeignABI, Errno: syscall.ENOSYS,
			Reason: what + ": tracecell checks only native " + t.table.ABI + " calls, so the process is killed"})
	ev.ABI, ev.Errno = abi, ""
	t.rec.counts.Checked++
	t.record(ev, false)
	unix.Kill(tk.tgid, unix.SIGKILL)
	return t.resume(tk.tid, 0)
}

// compatStop handles a signal-delivery stop that foreignTrap did not take:
// when the kernel says the call tk last entered was of the compat ABI
// (PTRACE_GET_SYSCALL_INFO, 5.3), it was a call of a foreign ABI, trapped
// by the filter, whose SIGSYS the kernel dropped: a SIGSYS already
// pending for the thread (tgkill, a timer), being a classic signal, makes
// the kernel discard the seccomp one (legacy_queue), and the pending one is
// delivered in its place (red team, round 46: the process died of SIGSYS
// with nothing reported). The call did not run; it is reported (its
// number from orig_rax, which the trap's syscall_rollback leaves, where
// the registers read in the native layout) and the process killed, as in
// foreignTrap. A 32-bit program may show the compat arch before it made
// any call (just after its exec): it is killed as a process running that
// code, and reported so. On kernels before 5.3 nothing at this
// stop tells the ABI: such a call goes unreported there (README, Known
// gaps).
func (t *tracer) compatStop(tk *task) (bool, error) {
	if t.noSyscallInfo {
		return false, nil
	}
	arch, err := ptraceSyscallArch(tk.tid)
	if err == unix.EIO || err == unix.EINVAL {
		t.noSyscallInfo = true // before 5.3
		return false, nil
	}
	if err != nil || arch != t.table.CompatAuditArch {
		return false, nil
	}
	abi := archName(arch)
	var nr int
	var name, what string
	if t.readRegs(tk.tid) == nil {
		// A 64-bit process after an int 0x80 (TS_COMPAT): orig_rax.
		nr = t.regs.Nr()
		name = abi + "_" + strconv.Itoa(nr)
		what = "a system call of a foreign ABI, " + abi + ": number " + strconv.Itoa(nr)
	} else {
		// The registers come in the compat layout: the process runs
		// 32-bit code, every call of which is of that ABI. The kernel
		// marks it as in a compat call from the exec of a 32-bit
		// program to its first return to user mode, calls or none (red
		// team, round 47: an itimer's signal pending then).
		nr, name = -1, abi
		what = "a process running " + abi + " code, which can make only system calls of a foreign ABI"
	}
	return true, t.killForeign(tk, nr, abi, name, what)
}

// archName names an AUDIT_ARCH_* value (include/uapi/linux/audit.h).
func archName(a uint32) string {
	switch a {
	case syscalls.AuditArchI386:
		return "i386"
	case syscalls.AuditArchARM:
		return "arm"
	case syscalls.AuditArchX86_64:
		return "x86_64"
	case syscalls.AuditArchAARCH64:
		return "aarch64"
	}
	return fmt.Sprintf("arch %#x", a)
}
