package tracer

// Futex calls on shared words are decoded in package decode (futex.go
// there: the rule); what the tracer keeps is how long a frozen one may
// sleep, and how a timed wait is followed to its restart.

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/procfs"
)

// futexBlocked is how long a frozen futex call may sleep before the tree is
// let go (freezer.blockAfter), instead of freezeBlocked: every futex call
// takes the keys of its words (get_futex_key) before it sleeps
// (futex_wait_setup, futex_wait_multiple_setup, the rt_mutex of the PI
// calls), so once it sleeps no mapping change can reach it, and a
// contended process-shared semaphore must not hold the tree for 10 ms.
const futexBlocked = 200 * time.Microsecond

// errRestartBlock is ERESTART_RESTARTBLOCK (include/linux/errno.h): a
// syscall-exit stop shows it when the call will be resumed by
// restart_syscall.
const errRestartBlock = 516

// mapping is one line of /proc/<pid>/maps.
type mapping = procfs.Mapping

// memMaps is a task's memory map, by address.
type memMaps []mapping

// readMaps reads and parses /proc/<tid>/maps.
func readMaps(tid int) (memMaps, error) { return procfs.ReadMaps(tid) }

// kcmpVM is KCMP_VM (include/uapi/linux/kcmp.h): kcmp(2) compares the mm of
// two tasks (3.5, CONFIG_CHECKPOINT_RESTORE; RHEL 8 has it).
const kcmpVM = 1

// mmAlone reports whether no task of the tree but tk can change tk's memory
// map: its process has one thread, and no task of another process shares
// its mm (a clone(CLONE_VM) child, a vfork child before its exec), as
// kcmp(KCMP_VM) tells. A futex check of such a task needs no freeze: only
// tasks sharing the mm can map something over a checked word. When kcmp
// fails (ENOSYS without CONFIG_CHECKPOINT_RESTORE, a task gone) the answer
// is false: freeze.
//
// A pair once found apart stays apart (task.mmApartBelow), so only the
// tasks registered since tk's last yes are compared: a worker of a
// multiprocessing pool pays its kcmp calls once, not on every futex call.
func (t *tracer) mmAlone(tk *task) bool {
	if p := t.tree.procs[tk.tgid]; p == nil || p.threads != 1 {
		return false
	}
	for _, o := range t.tree.tasks {
		if o.tgid == tk.tgid || o.seq < tk.mmApartBelow {
			continue
		}
		r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(tk.tid), uintptr(o.tid), kcmpVM, 0, 0, 0)
		if e != 0 || r == 0 {
			return false
		}
	}
	tk.mmApartBelow = t.tree.seq + 1
	return true
}
