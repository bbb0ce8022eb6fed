package tracer

// All unsafe code of the tracer lives in this file.

import (
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// loadFilter installs the filter on every thread of the calling process.
// TSYNC (since 3.17) because the Go runtime has several threads; the call
// fails if any thread cannot be synchronised.
func loadFilter(prog []bpf.RawInstruction) error {
	if len(prog) == 0 {
		return fmt.Errorf("empty filter")
	}
	f := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		f[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	r, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return e
	}
	if r != 0 {
		// With TSYNC a positive return is the id of a thread that could not sync.
		return fmt.Errorf("thread %d could not be synchronised", r)
	}
	return nil
}

// ptraceRegset calls PTRACE_GETREGSET or PTRACE_SETREGSET with an iovec over
// buf and returns how many bytes the kernel used.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func ptraceRegset(req int, tid int, note int, buf []byte) (int, error) {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), uintptr(note),
		uintptr(unsafe.Pointer(&iov)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(iov.Len), nil
}

// ptraceGetsiginfo reports whether tid is in a signal-delivery stop
// (PTRACE_GETSIGINFO succeeds) rather than a group-stop (EINVAL).
//
// Precondition: the calling goroutine is locked to the tracer thread.
func ptraceGetsiginfo(tid int) error {
	var si [128]byte // sizeof(siginfo_t)
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(tid), 0,
		uintptr(unsafe.Pointer(&si[0])), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// spinPolls is how many non-blocking wait4 calls the tracer makes before it
// blocks (a few tens of microseconds).
var spinPolls = 64

// pollWait4 calls wait4(-1, WNOHANG|__WALL) up to n times and returns the
// first stop; (0, nil) when none came. RawSyscall: wait4 with WNOHANG never
// blocks, so the scheduler need not be told.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func pollWait4(ws *unix.WaitStatus, rus *unix.Rusage, n int) (int, error) {
	for i := 0; i < n; i++ {
		r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(ws)),
			unix.WNOHANG|unix.WALL, uintptr(unsafe.Pointer(rus)), 0, 0)
		if e != 0 {
			return 0, e
		}
		if r != 0 {
			return int(r), nil
		}
	}
	return 0, nil
}
