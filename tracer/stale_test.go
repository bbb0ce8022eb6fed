package tracer

import (
	"os"
	"testing"
)

// TestStaleExecer walks the records of a thread that stopped at an execve
// through what stale.go does with them, on this process's own tids: a
// thread of its group is not stale; a tid that is not (noTid) is, once
// marked execing; retired, its record waits in departed for the group's
// exec event, which also finds a record still in the table, but never one
// of another group under the tid; the group's end drops what is left.
func TestStaleExecer(t *testing.T) {
	pid, tid := os.Getpid(), otherThread(t)
	g := noTid + 100 // a group whose records name tids that do not exist
	for _, tc := range []struct {
		name  string
		tk    task
		stale bool
	}{
		{"a live thread of its group, execing", task{tid: tid, tgid: pid, execing: true}, false},
		{"a gone thread, not execing", task{tid: noTid, tgid: pid}, false},
		{"a gone thread, execing", task{tid: noTid, tgid: pid, execing: true}, true},
		{"a leader, execing", task{tid: pid, tgid: pid, execing: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleExecer(&tc.tk); got != tc.stale {
				t.Errorf("staleExecer = %v, want %v", got, tc.stale)
			}
		})
	}

	tr := &tracer{cfg: &Config{}}
	tr.tree.init()
	tr.tree.add(g, g)              // the leader, exec'ing under another tid
	old := tr.tree.add(noTid+1, g) // the thread that exec'd
	old.execing, old.approvedExec = true, "/bin/true"
	if !staleExecer(old) {
		t.Fatal("a gone execing thread is not stale")
	}
	tr.retireStale(old)
	if tr.tree.tasks[noTid+1] != nil || tr.tree.departed[noTid+1] != old {
		t.Fatal("retireStale did not move the record aside")
	}
	newTask := tr.tree.add(noTid+1, noTid+1) // the new task with the tid
	if newTask == old || newTask.seq <= old.seq {
		t.Fatal("the new task did not get a record of its own")
	}
	if got := tr.formerRecord(noTid+1, g); got != old {
		t.Fatalf("formerRecord = %p, want the retired record %p", got, old)
	}
	if tr.tree.tasks[noTid+1] != newTask {
		t.Fatal("the exec event dropped the new task's record")
	}
	if tr.formerRecord(noTid+1, g) != nil {
		t.Fatal("formerRecord found a record twice")
	}

	// A thread killed inside its exec: its record stays until the group's
	// end, which drops it and any retired one of the group.
	left := tr.tree.add(noTid+2, g)
	left.execing = true
	tr.tree.departed[noTid+3] = &task{tid: noTid + 3, tgid: g}
	keep := tr.tree.add(noTid+4, noTid+4)
	keep.execing = true // another group's: not dropped
	tr.dropExecers(g)
	if tr.tree.tasks[noTid+2] != nil || len(tr.tree.departed) != 0 {
		t.Error("dropExecers left the group's execing records")
	}
	if tr.tree.tasks[g] == nil || tr.tree.tasks[noTid+4] != keep || tr.tree.tasks[noTid+1] != newTask {
		t.Error("dropExecers dropped a record it must keep")
	}
	checkTree(t, &tr.tree)
}
