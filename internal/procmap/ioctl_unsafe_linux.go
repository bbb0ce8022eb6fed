package procmap

// All unsafe code of the package lives in this file.

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The struct must be the kernel's size: a negative array length fails the
// build otherwise.
var (
	_ [sizeofProcmapQuery - unsafe.Sizeof(procmapQuery{})]byte
	_ [unsafe.Sizeof(procmapQuery{}) - sizeofProcmapQuery]byte
)

// ioctlQuery issues PROCMAP_QUERY on fd, an fd of /proc/<pid>/maps, for q;
// with a non-empty name it asks for the VMA's name into it (q.vmaNameSize
// says how much of it the kernel wrote, NUL included). The error is the
// raw errno.
//
// name must be heap memory (a slice the caller made): the kernel gets its
// address inside q, where the Go runtime does not see it as a pointer, and
// only heap objects never move.
func ioctlQuery(fd int, q *procmapQuery, name []byte) error {
	q.size = sizeofProcmapQuery
	if len(name) > 0 {
		q.vmaNameAddr = uint64(uintptr(unsafe.Pointer(&name[0])))
		q.vmaNameSize = uint32(len(name))
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), procmapQueryIoctl, uintptr(unsafe.Pointer(q)))
	runtime.KeepAlive(name)
	if e != 0 {
		return e
	}
	return nil
}
