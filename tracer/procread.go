package tracer

import (
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/procfs"
)

// Reading the tracees' /proc files and thread groups from the tracer thread.

// tgidOf is the Tgid of /proc/<tid>/status, tid itself when it cannot be
// read (gone): cloneTgid answers for the new tasks of a clone event without
// it.
func tgidOf(tid int) int { return procfs.Tgid(tid) }

// groupProbe is the answer of tgkill(tgid, tid, 0): nil when tid is a
// thread of group tgid. A variable for tests.
var groupProbe = func(tgid, tid int) error { return unix.Tgkill(tgid, tid, 0) }

// cloneTgid is the thread group of nt, the task that a task of group
// parentTgid has just created (nt from PTRACE_GETEVENTMSG at the parent's
// PTRACE_EVENT_CLONE, _FORK or _VFORK stop: a thread made with exit signal
// SIGCHLD or CLONE_VFORK comes as a fork or vfork event). The kernel's
// facts it rests on:
//
//   - copy_process gives a CLONE_THREAD child its parent's tgid and any
//     other child its own pid as tgid; CLONE_THREAD needs CLONE_SIGHAND,
//     which needs CLONE_VM (EINVAL otherwise), so a thread always shares
//     the mm. Which of the two nt got is therefore all there is to learn.
//   - tgkill(tgid, tid, 0) (2.5.75; do_send_specific) finds tid and fails
//     with ESRCH unless task_tgid_vnr(tid) == tgid; signal 0 sends
//     nothing, it only checks existence and permission.
//   - nt cannot be gone or its tid reused: a traced task stays a zombie,
//     its tid taken, until its tracer reaps it, and the tracer has not
//     seen nt's end.
//
// So tgkill(parentTgid, nt, 0) succeeding means a thread; ESRCH, with
// tgkill(nt, nt, 0) succeeding, a process leading its own group. Anything
// else (EPERM from an LSM, a parent group the tracer got wrong) falls back
// to /proc/<nt>/status. One or two system calls of 0.2 µs each replace the
// status read (7 µs raw, 17.6 µs through os.ReadFile: timed in a loop on
// the 2-vCPU VM, 2026-11-26). No register or memory is read, so it is the
// same on every ABI, for clone and clone3 alike (the flags of clone3 are
// in the tracee's memory, which another task could rewrite after the
// kernel copied them: not a source a decision may rest on).
func cloneTgid(parentTgid, nt int) int {
	switch err := groupProbe(parentTgid, nt); err {
	case nil:
		return parentTgid
	case unix.ESRCH:
		if groupProbe(nt, nt) == nil {
			return nt
		}
	}
	return tgidOf(nt)
}

// firstStopTgid is the thread group of tid, a new task whose first stop
// came before its parent's clone, fork or vfork event (so the parent is
// not known yet): tid itself when it leads its group (tgkill(tid, tid, 0)
// succeeds, see cloneTgid), else read from /proc/<tid>/status.
func firstStopTgid(tid int) int {
	if groupProbe(tid, tid) == nil {
		return tid
	}
	return tgidOf(tid)
}
