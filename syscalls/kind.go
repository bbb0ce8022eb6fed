package syscalls

import "fmt"

// Kind says what an operation does to the world, for policy and reports.
// The string forms are part of the report format: do not rename them.
type Kind uint8

const (
	KindNone      Kind = iota // not classified
	KindRead                  // open for reading (only trapped when reads are restricted or traced)
	KindWrite                 // open for writing, truncate, utime, mknod of a device
	KindCreate                // create a new entry: O_CREAT, mkdir, mknod, symlink, bind(AF_UNIX)
	KindDelete                // unlink, rmdir
	KindRename                // rename*, both paths
	KindLink                  // link*, both paths
	KindChmod                 // chmod family, FS_IOC_SETFLAGS
	KindChown                 // chown family
	KindXattr                 // set/remove extended attributes
	KindExec                  // execve, execveat
	KindConnect               // connect, sendto/sendmsg with an address
	KindBind                  // bind (inet: a listening port; AF_UNIX: also a file)
	KindSignal                // kill, tkill, tgkill, rt_*sigqueueinfo, pidfd_send_signal
	KindProcess               // prlimit64, setpriority, sched_* and other calls aimed at a pid
	KindForbidden             // a syscall that is never allowed (ptrace, mount, bpf, ...)
	KindChdir                 // chdir, fchdir: always allowed; trapped so that the tracer knows the cwd
	KindMemory                // mmap, munmap, mprotect, ... on tracecell's path page (tracer: pathpage.go)
	KindLease                 // fcntl(F_SETLEASE): a lease holds back other processes' opens of the file for writing
	KindIoctl                 // an ioctl command off the allow-list with no rule of its own: decided on what its fd points to
	KindFutex                 // a futex operation on a shared (not FUTEX_PRIVATE_FLAG) futex word: its memory must be the tree's own
	kindCount
)

var kindNames = [kindCount]string{
	KindNone:      "none",
	KindRead:      "read",
	KindWrite:     "write",
	KindCreate:    "create",
	KindDelete:    "delete",
	KindRename:    "rename",
	KindLink:      "link",
	KindChmod:     "chmod",
	KindChown:     "chown",
	KindXattr:     "xattr",
	KindExec:      "exec",
	KindConnect:   "connect",
	KindBind:      "bind",
	KindSignal:    "signal",
	KindProcess:   "process",
	KindForbidden: "forbidden-syscall",
	KindChdir:     "chdir",
	KindMemory:    "memory",
	KindLease:     "lease",
	KindIoctl:     "ioctl",
	KindFutex:     "futex",
}

// String returns the report name of the kind.
func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MarshalText encodes the kind by its report name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a report name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown operation kind %q", b)
}

// ChecksAsWrite reports whether the kind is decided like a change of its
// paths: only inside the writable roots (and the tree's own scratch
// entries). A lease changes nothing, but it lets its holder hold back the
// writers of the file, so it is allowed only where the tree may write.
func (k Kind) ChecksAsWrite() bool { return k.ModifiesFS() || k == KindLease }

// ModifiesFS reports whether the kind changes the file system.
func (k Kind) ModifiesFS() bool {
	switch k {
	case KindWrite, KindCreate, KindDelete, KindRename, KindLink, KindChmod, KindChown, KindXattr:
		return true
	}
	return false
}
