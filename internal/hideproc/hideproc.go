// Package hideproc makes the process not dumpable (prctl(PR_SET_DUMPABLE,
// 0)) from a package initializer, before nearly every other package of
// tracecell is initialized. Import it for its effect, first thing:
//
//	import _ "github.com/tracecell/tracecell/internal/hideproc"
//
// Why so early: tracecell's environment is the operator's, and until the
// process is not dumpable a tree of another tracecell of the same user,
// watching /proc for new processes with the default open reads, can read
// it through /proc/<pid>/environ and mem (see tracer.HideProc). Go
// initializes a package as soon as its imports are: this one imports only
// syscall, so it runs right after the runtime and syscall's own
// dependencies, not after the MCP SDK, gob, yaml and the rest (about a
// millisecond). What precedes it cannot be moved earlier without cgo.
package hideproc

import "syscall"

// prSetDumpable is PR_SET_DUMPABLE (include/uapi/linux/prctl.h); the
// syscall package does not name it.
const prSetDumpable = 4

// Errno is the prctl call's error (0 when it succeeded); the caller
// reports it, since a package initializer has nowhere to.
var Errno syscall.Errno

func init() {
	_, _, Errno = syscall.RawSyscall6(syscall.SYS_PRCTL, prSetDumpable, 0, 0, 0, 0, 0)
}
