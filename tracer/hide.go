package tracer

import (
	"os"

	"golang.org/x/sys/unix"
)

// HideProc makes the calling process not dumpable (prctl(PR_SET_DUMPABLE,
// 0)), so that the trees it traces cannot read it through /proc.
//
// Why: tracecell starts the command with a clean environment, but its own
// environment is the operator's (API keys, tokens), and with the default
// open reads of `tracecell run` a read-only open never stops at the tracer:
// the tree could read /proc/<tracecell pid>/environ, its command line, its
// open files through /proc/<pid>/fd/N, and, where kernel.yama.ptrace_scope
// is 0 (the default of RHEL 8), its memory through /proc/<pid>/mem. For a
// process that is not dumpable, the kernel answers all of these only to a
// caller with CAP_SYS_PTRACE (__ptrace_may_access, every kernel tracecell
// runs on), which the tree never has: a root tree is started without it
// (internal/caps).
//
// What it costs: core dumps of tracecell are off, and attaching a debugger
// or strace to tracecell needs root. The process reads its own /proc/self
// entries as before (proc_fd_permission and __ptrace_may_access let a
// thread group in). A child forked from it inherits the setting; the
// command's start makes itself dumpable for the seize alone and not
// dumpable again once seized (fork_unsafe_linux.go), and the exec sets
// the command's own. cmd/tracecell calls the same prctl earlier still, in
// internal/hideproc's package initializer; this call is for the library's
// other users (tests) and costs nothing twice.
func HideProc() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_DUMPABLE, 0)", err)
	}
	return nil
}
