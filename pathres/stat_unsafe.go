package pathres

import (
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stackName is the longest name fstatat copies to its stack (NUL
// included); a longer one goes through x/sys, which allocates its copy.
// Nearly every path a walk stats is shorter.
const stackName = 512

// fstatat is fstatat(2) (newfstatat on x86_64 and aarch64, the same
// number name in x/sys and the same struct stat as unix.Stat_t) without
// the heap copy of the name that unix.Fstatat makes: the walk stats one
// or two names per checked call. The call goes through syscall.Syscall6
// (entersyscall): a stat can sleep on a slow file system, and a raw call
// would hold up the other goroutines' garbage collection meanwhile. The
// error is the bare errno, as unix.Fstatat's.
func fstatat(dirfd int, name string, st *unix.Stat_t, flags int) error {
	if len(name) >= stackName {
		return unix.Fstatat(dirfd, name, st, flags)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return syscall.EINVAL // as unix.BytePtrFromString
	}
	var buf [stackName]byte
	copy(buf[:], name) // the zero after it is the NUL
	_, _, e := syscall.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
