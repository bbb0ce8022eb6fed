package tracer

// All unsafe code of the tracer lives in this file.

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ptrace requests of every checked call (read the registers, set one,
// resume) are made with RawSyscall: they touch no memory of the task and
// wait for nothing but its stop, so the Go scheduler need not be told,
// which saves its entersyscall/exitsyscall pair around each (0.2 to 0.6
// µs a checked call with the allocation-free path read below,
// bench/results/2026-11-26-gaps.md). The longest one takes is
// wait_task_inactive's wait for a task that has just stopped to leave its
// CPU (kernel/sched/core.c: a short spin, a tick's sleep at worst while it
// is still queued). Reading the task's memory (processVMReadv) keeps
// syscall.Syscall: it may page in swap or a file on a slow or remote file
// system, and under RawSyscall that wait would hold up every goroutine of
// the process once a garbage collection stops the world (and everything
// at GOMAXPROCS=1), the killer of a timed-out tree included.

// ptraceRegset calls PTRACE_GETREGSET or PTRACE_SETREGSET with an iovec over
// buf and returns how many bytes the kernel used.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func ptraceRegset(req int, tid int, note int, buf []byte) (int, error) {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), uintptr(note),
		uintptr(unsafe.Pointer(&iov)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(iov.Len), nil
}

// ptraceResume is PTRACE_CONT (or PTRACE_SYSCALL with req) of tid with
// signal sig.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func ptraceResume(req int, tid int, sig int) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), 0, uintptr(sig), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// processVMReadv reads len(p) bytes at addr of tid into p with one
// process_vm_readv (3.2) and returns how many it read; unlike
// unix.ProcessVMReadv it allocates nothing. p must not be empty.
func processVMReadv(tid int, addr uintptr, p []byte) (int, error) {
	local := unix.Iovec{Base: &p[0]}
	local.SetLen(len(p))
	remote := unix.RemoteIovec{Base: addr, Len: len(p)}
	n, _, e := unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(tid),
		uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// ptracePokeUser writes v at offset off of tid's struct user
// (PTRACE_POKEUSER; one register, see arch.Layout.ArgUserOffset). Unlike
// unix.PtracePokeUser, which peeks before every word it writes, this is one
// system call.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func ptracePokeUser(tid int, off uintptr, v uint64) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_POKEUSR, uintptr(tid), off, uintptr(v), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ptraceGetsiginfo reports whether tid is in a signal-delivery stop
// (PTRACE_GETSIGINFO succeeds) rather than a group-stop (EINVAL).
//
// Precondition: the calling goroutine is locked to the tracer thread.
func ptraceGetsiginfo(tid int) error {
	_, err := ptraceSiginfo(tid)
	return err
}

// ptraceSiginfo is PTRACE_GETSIGINFO: the siginfo_t of tid's signal.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func ptraceSiginfo(tid int) ([128]byte, error) {
	var si [128]byte // sizeof(siginfo_t)
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(tid), 0,
		uintptr(unsafe.Pointer(&si[0])), 0, 0)
	if e != 0 {
		return si, e
	}
	return si, nil
}

// pollWait4 calls wait4(-1, WNOHANG|__WALL) until a stop comes or d has
// passed; (0, nil) when none came. RawSyscall: wait4 with WNOHANG never
// blocks, so the scheduler need not be told.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func pollWait4(ws *unix.WaitStatus, d time.Duration) (int, error) {
	start := time.Now()
	for i := 0; ; i++ {
		r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(ws)),
			unix.WNOHANG|unix.WALL, 0, 0, 0)
		if e != 0 {
			return 0, e
		}
		if r != 0 {
			return int(r), nil
		}
		if i&7 == 7 && time.Since(start) > d {
			return 0, nil
		}
	}
}

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on amd64
// and arm64 (both define SA_RESTORER, so both have sa_restorer).
type kernelSigaction struct {
	Handler  uintptr
	Flags    uint64
	Restorer uintptr
	Mask     uint64
}

// rtSigaction calls rt_sigaction(sig, act, old) with an 8-byte sigset.
func rtSigaction(sig int, act, old *kernelSigaction) error {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ptraceSyscallArch is PTRACE_GET_SYSCALL_INFO (Linux 5.3) of tid: the
// AUDIT_ARCH_* of the system call tid last entered, as the kernel keeps it
// (syscall_get_arch: on x86_64 the i386 ABI while TS_COMPAT is set, from an
// int 0x80 entry to the return to user mode; a 32-bit task's always). The
// struct begins u8 op, u8 pad[3], u32 arch. EIO before 5.3.
//
// Precondition: tid is in a ptrace stop; the calling goroutine is locked
// to the tracer thread.
func ptraceSyscallArch(tid int) (uint32, error) {
	var info [88]byte // sizeof(struct ptrace_syscall_info), 5.3
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(tid),
		uintptr(len(info)), uintptr(unsafe.Pointer(&info[0])), 0, 0)
	if e != 0 {
		return 0, e
	}
	return uint32(info[4]) | uint32(info[5])<<8 | uint32(info[6])<<16 | uint32(info[7])<<24, nil
}
