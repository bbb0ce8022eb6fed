package tracer

// Calls of a foreign ABI: i386 through int 0x80 (and AArch32 on arm64),
// and x32 on x86_64. The tracer checks native calls only, so none may run.
//
//   - x32 (a native-arch call whose number has __X32_SYSCALL_BIT,
//     0x40000000): the filter traps it (SECCOMP_RET_TRACE). At the stop the
//     number in orig_rax carries the bit (seccomp_data.nr is regs->orig_ax
//     on every kernel since seccomp filters, 3.5), and no filter can change
//     a register: a filter the tree installs can only turn the trap into a
//     kill, an errno or the same trap (SECCOMP_RET_TRACE outranks
//     SECCOMP_RET_ALLOW), never let the call through. So the tracer knows
//     the ABI and the number for sure: it reports the call, fails it
//     (ENOSYS) and kills the process.
//   - i386 through int 0x80: seccomp_data.arch is AUDIT_ARCH_I386, and the
//     filter kills the process (SECCOMP_RET_KILL_PROCESS, 4.14) at once.
//     It cannot trap it instead: at a trace stop nothing a 4.18 tracer can
//     read tells the ABI (PTRACE_GET_SYSCALL_INFO is 5.3), RET_DATA can be
//     forged by a filter the tree installs later (for equal actions the
//     newest filter's data wins, kernel/seccomp.c seccomp_run_filters), and
//     the i386 number would be taken for a native one. So the kill stays in
//     the filter and the tracer reports the death: a process that dies of
//     SIGSYS without the tracer having seen a SIGSYS signal for it (every
//     signal but SIGKILL passes a signal-delivery stop) was killed by a
//     seccomp filter at a system call, with no stop before: the number is
//     not known. A filter of the program's own that kills looks the same,
//     and the report says so.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
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
	native := uint32(nr) &^ t.table.X32Bit
	name := t.table.Name(int(native))
	what := "a system call of a foreign ABI, x32: number " + strconv.Itoa(int(native))
	if name != "" && native < 512 { // 512 and up are x32's own compat calls
		what += " (" + name + ")"
	} else {
		name = "x32_" + strconv.Itoa(int(native))
	}
	c := &call{tk: tk, nr: nr, name: name}
	op := &policy.Op{Kind: syscalls.KindForbidden, Syscall: name}
	d := policy.Decision{Rule: policy.RuleForeignABI, Errno: syscall.ENOSYS,
		Reason: what + ": tracecell checks only native " + t.table.ABI + " calls, so the process is killed"}
	ev := t.newEvent(c, op, d)
	ev.ABI = "x32"
	t.counts.Checked++
	t.record(ev, false)
	if err := t.deny(tk.tid, syscall.ENOSYS); err != nil {
		return err
	}
	unix.Kill(tk.tgid, unix.SIGKILL)
	return t.resume(tk.tid, 0)
}

// sawSignal notes a signal-delivery stop: a SIGSYS that kills the process
// (neither caught nor ignored, /proc/<tid>/status SigCgt, SigIgn) is that
// signal, not a seccomp kill.
func (t *tracer) sawSignal(tk *task, sig unix.Signal) {
	if sig != unix.SIGSYS {
		return
	}
	p := t.procs[tk.tgid]
	if p == nil {
		return
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tk.tid))
	if err != nil {
		p.sigsys = true // gone: it may well be dying of it
		return
	}
	bit := uint64(1) << (uint(sig) - 1)
	for _, key := range []string{"SigCgt:", "SigIgn:"} {
		if m, err := strconv.ParseUint(strings.TrimSpace(statusField(b, key)), 16, 64); err == nil && m&bit != 0 {
			return // handled or ignored: it kills nobody
		}
	}
	p.sigsys = true
}

// seccompKill reports, at the first exit status of a thread of a process
// that died of SIGSYS with no SIGSYS signal seen, that a seccomp filter
// killed it: tracecell's for a foreign-ABI call (int 0x80), or the
// program's own.
func (t *tracer) seccompKill(tid int, ws unix.WaitStatus) {
	if !ws.Signaled() || ws.Signal() != unix.SIGSYS {
		return
	}
	tk := t.tasks[tid]
	if tk == nil {
		return
	}
	p := t.procs[tk.tgid]
	if p == nil || p.sigsys || p.sigsysReported {
		return
	}
	p.sigsysReported = true
	exe, argv := t.procInfo(tk.tgid)
	foreign := "i386 through int 0x80"
	if t.table.ABI == "aarch64" {
		foreign = "AArch32"
	}
	ev := &report.Event{
		Time: time.Now().UTC(), Decision: report.Deny, Pid: tk.tgid, Tid: tid,
		Exe: exe, Argv: argv, Program: programName(exe, argv),
		Syscall: "unknown", ABI: "foreign", Nr: -1, Kind: syscalls.KindForbidden,
		Rule: policy.RuleForeignABI, Signal: "SIGSYS",
		Reason: fmt.Sprintf("killed by SIGSYS: a system call of a foreign ABI (%s), which tracecell's filter kills since it checks only native %s calls (a seccomp filter of the program's own that kills would look the same; the number is not known)",
			foreign, t.table.ABI),
	}
	t.record(ev, false)
}
