package hideproc

import (
	"runtime"
	"syscall"
	"unsafe"
)

// getAuxv is the runtime's copy of the auxiliary vector (pairs of key and
// value). The runtime exports it for golang.org/x/sys by a push linkname
// (runtime/runtime.go, "golang.org/x/sys/cpu and golang.org/x/sys/unix use
// getAuxv via linkname", Go 1.21); importing x/sys/unix for its Auxv
// instead would run this package's initializer some fifty packages later.
//
//go:linkname getAuxv runtime.getAuxv
func getAuxv() []uintptr

// atExecfn is AT_EXECFN (include/uapi/linux/auxvec.h, Linux 2.6.26): the
// address of the file name execve(2) was given, as copied onto the stack.
const atExecfn = 31

// execfn is the auxiliary vector's AT_EXECFN, 0 when it has none.
func execfn() uintptr {
	a := getAuxv()
	for i := 0; i+1 < len(a); i += 2 {
		if a[i] == atExecfn {
			return a[i+1]
		}
	}
	return 0
}

// iovec is struct iovec.
type iovec struct {
	base uintptr
	len  uint64
}

// selfVM copies between b and this process's memory at addr with
// process_vm_readv (write false) or process_vm_writev (write true), and
// reports whether all of b was copied. Unlike a plain load or store it
// cannot fault: memory that is not mapped, or (writing) not writable,
// fails with EFAULT. On the calling process it needs no permission
// (ptrace_may_access passes the same thread group) and works whether or
// not the process is dumpable.
func selfVM(addr uintptr, b []byte, write bool) bool {
	if len(b) == 0 {
		return true
	}
	nr := uintptr(sysProcessVMReadv)
	if write {
		nr = sysProcessVMWritev
	}
	pid := syscall.Getpid()
	local := iovec{uintptr(unsafe.Pointer(&b[0])), uint64(len(b))}
	remote := iovec{addr, uint64(len(b))}
	n, _, e := syscall.RawSyscall6(nr, uintptr(pid),
		uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	runtime.KeepAlive(b)
	return e == 0 && int(n) == len(b)
}
