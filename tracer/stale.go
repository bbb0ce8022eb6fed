package tracer

import "golang.org/x/sys/unix"

// Stale task records. A traced thread disappears without an exit status
// in one case only: a thread other than the leader whose execve goes
// through. de_thread (fs/exec.c) gives it the leader's tid and releases
// the old leader under the thread's former tid, so that tid is free
// before PTRACE_EVENT_EXEC is even reported (ptrace(2), "execve(2) under
// ptrace"), and a new task of the tree can get it meanwhile. Were the new
// task's fork or clone event (or its first stop) to find the old record
// under its tid and take it over, it would run with another thread's
// group, registration order and state, and the exec event, dropping the
// former tid's record, would drop the new task's: a traced task that no
// freeze stops and no kcmp sees (a red-team finding: a clone(CLONE_VM|
// CLONE_FILES) child flipping a dirfd with dup2 while its parent's
// openat(dirfd, O_CREAT) was checked "frozen" created files outside the
// sandbox; the same took the mmAlone answers past the child). A second
// red team found two more ways in: a freeze that reaped the new task's
// first stop took it, under the old record, for a freeze stop and held it
// (freezer.take now leaves such a stop to the loop), and the killer, which
// signalled bare tids, killed a process outside the tree that got the tid
// (tree.killAll now uses tgkill with the task's group).

// staleExecer reports whether tk is the record of such a thread that is
// gone: it stopped at an execve (task.execing) and its tid is no longer a
// thread of its group (tgkill(tgid, tid, 0): ESRCH). No other thread can
// have joined that group under the tid meanwhile: the exec'ing thread is
// its group's only one until the tracer answers its exec event, where the
// record is taken out (formerRecord).
func staleExecer(tk *task) bool {
	return tk.execing && tk.tid != tk.tgid && unix.Tgkill(tk.tgid, tk.tid, 0) == unix.ESRCH
}

// retireStale takes stale record tk out of the table, so that the new task
// with its tid gets a record of its own. The exec's details go to
// tree.departed for the group's exec event. Unlike removeTask, the
// statuses waiting under the tid are kept: they are the new task's, and
// held, their count, is for the caller to give the new record.
func (t *tracer) retireStale(tk *task) (held int) {
	t.tree.remove(tk.tid)
	t.page.release(tk)
	t.tree.departed[tk.tid] = tk
	held, tk.held = tk.held, 0
	return held
}

// formerRecord takes out and returns the record of the thread of group
// tgid that exec'd under tid former: in the table if no new task took the
// tid, else where retireStale put it; nil when neither has it.
func (t *tracer) formerRecord(former, tgid int) *task {
	if o := t.tree.tasks[former]; o != nil && o.tgid == tgid {
		t.removeTask(former)
		return o
	}
	if o := t.tree.departed[former]; o != nil && o.tgid == tgid {
		delete(t.tree.departed, former)
		return o
	}
	return nil
}

// dropExecers forgets the records of group tgid's threads that stopped at
// an execve, once the group is gone (its leader's exit is reported only
// after every other thread's, __WALL): one killed inside its exec left no
// status of its own. Their statuses are not forgotten, as in retireStale.
func (t *tracer) dropExecers(tgid int) {
	for tid, o := range t.tree.tasks {
		if o.tgid == tgid && o.execing && tid != tgid {
			t.tree.remove(tid)
			t.page.release(o)
		}
	}
	for tid, o := range t.tree.departed {
		if o.tgid == tgid {
			delete(t.tree.departed, tid)
		}
	}
}
