package tracer

import (
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkTree fails t unless tr keeps its invariants (tree): every task's
// process is there and counts it, every process is in ever, live is the
// set of tids, inFlightN counts the tasks in flight.
func checkTree(t *testing.T, tr *tree) {
	t.Helper()
	threads := map[int]int{}
	inFlight := 0
	for tid, tk := range tr.tasks {
		if tk.tid != tid {
			t.Errorf("tasks[%d] is task %d", tid, tk.tid)
		}
		if tr.procs[tk.tgid] == nil {
			t.Errorf("task %d: no proc %d", tid, tk.tgid)
		}
		threads[tk.tgid]++
		if tk.inFlight {
			inFlight++
		}
		if _, ok := tr.live[tid]; !ok {
			t.Errorf("task %d not live", tid)
		}
	}
	for tgid, p := range tr.procs {
		if p.threads != threads[tgid] {
			t.Errorf("proc %d: threads %d, tasks %d", tgid, p.threads, threads[tgid])
		}
		if !tr.ever[tgid] {
			t.Errorf("proc %d not in ever", tgid)
		}
	}
	if len(tr.live) != len(tr.tasks) {
		t.Errorf("%d live, %d tasks", len(tr.live), len(tr.tasks))
	}
	if tr.inFlightN != inFlight {
		t.Errorf("inFlightN %d, %d tasks in flight", tr.inFlightN, inFlight)
	}
}

func sortedKeys[V any](m map[int]V) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// TestTreeRegistry: adding and removing tasks keeps the registry's
// invariants, a process goes with its last thread and stays in ever.
func TestTreeRegistry(t *testing.T) {
	const l, m = noTid, noTid + 10 // two processes; no such pids exist
	var tr tree
	tr.init()
	steps := []struct {
		name   string
		do     func()
		procs  []int
		groups int // liveGroups
	}{
		{"leader", func() { tr.add(l, l) }, []int{l}, 1},
		{"thread", func() { tr.add(l+1, l) }, []int{l}, 1},
		{"child process", func() { tr.add(m, m) }, []int{l, m}, 2},
		{"thread in flight", func() { tr.setInFlight(tr.tasks[l+1], true) }, []int{l, m}, 2},
		{"in flight twice", func() { tr.setInFlight(tr.tasks[l+1], true) }, []int{l, m}, 2},
		{"in flight ends", func() { tr.setInFlight(tr.tasks[l+1], false) }, []int{l, m}, 2},
		{"in flight again", func() { tr.setInFlight(tr.tasks[l+1], true) }, []int{l, m}, 2},
		{"unknown tid removed", func() {
			if tr.remove(noTid+99) != nil {
				t.Error("remove of an unknown tid returned a task")
			}
		}, []int{l, m}, 2},
		{"leader's thread removed", func() { tr.remove(l + 1) }, []int{l, m}, 2},
		{"child's last thread removed", func() { tr.remove(m) }, []int{l}, 1},
		{"leader removed", func() { tr.remove(l) }, nil, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			checkTree(t, &tr)
			if got := sortedKeys(tr.procs); !slices.Equal(got, s.procs) {
				t.Errorf("procs %v, want %v", got, s.procs)
			}
			if got := tr.liveGroups(); got != s.groups {
				t.Errorf("liveGroups = %d, want %d", got, s.groups)
			}
		})
	}
	// Gone, but once the tree's: a hint, never proof.
	for _, pid := range []int{l, m} {
		if tr.tracked(pid) || tr.hasProc(pid) || !tr.everHad(pid) {
			t.Errorf("pid %d: tracked %v hasProc %v everHad %v, want false false true", pid, tr.tracked(pid), tr.hasProc(pid), tr.everHad(pid))
		}
	}
}

// TestTreeQueries: tracked sees tasks and processes, hasProc processes
// only (a thread's tid is no process).
func TestTreeQueries(t *testing.T) {
	var tr tree
	tr.init()
	tr.add(noTid, noTid)
	tr.add(noTid+1, noTid)
	cases := []struct {
		pid                       int
		tracked, hasProc, hadEver bool
	}{
		{noTid, true, true, true},
		{noTid + 1, true, false, false},
		{noTid + 2, false, false, false},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.pid-noTid), func(t *testing.T) {
			got := [3]bool{tr.tracked(c.pid), tr.hasProc(c.pid), tr.everHad(c.pid)}
			if want := [3]bool{c.tracked, c.hasProc, c.hadEver}; got != want {
				t.Errorf("pid %d: tracked, hasProc, everHad = %v, want %v", c.pid, got, want)
			}
		})
	}
}

// TestTreeRemoveDropsPage: a process's path page state and memory file
// go with its last thread, not before.
func TestTreeRemoveDropsPage(t *testing.T) {
	var tr tree
	tr.init()
	tr.add(noTid, noTid)
	tr.add(noTid+1, noTid)
	p := tr.procs[noTid]
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	p.page, p.mem = pageMapped, f
	tr.remove(noTid + 1)
	if p.page != pageMapped || p.mem == nil {
		t.Fatalf("page dropped with a thread left: %v %v", p.page, p.mem)
	}
	tr.remove(noTid)
	if p.page != pageUnknown || p.mem != nil {
		t.Fatalf("page kept after the last thread: %v %v", p.page, p.mem)
	}
	if err := f.Close(); err == nil {
		t.Fatal("the memory file was not closed")
	}
}

// TestTreeRemoveForgetsVforkParent: a vfork child whose parent's record
// goes has no sleeping parent left, so a new task that gets the parent's
// tid is not taken for one (a freeze would not wait for it); other
// children keep theirs.
func TestTreeRemoveForgetsVforkParent(t *testing.T) {
	var tr tree
	tr.init()
	tr.add(noTid, noTid)
	other := tr.add(noTid+1, noTid+1)
	child := tr.add(noTid+2, noTid+2)
	otherChild := tr.add(noTid+3, noTid+3)
	child.vforkParent, otherChild.vforkParent = noTid, other.tid
	tr.remove(noTid)
	if child.vforkParent != 0 {
		t.Errorf("vfork child keeps removed parent %d", child.vforkParent)
	}
	if otherChild.vforkParent != other.tid {
		t.Errorf("another vfork child's parent changed to %d", otherChild.vforkParent)
	}
	checkTree(t, &tr)
}

// TestTreeKillAll: the tree is marked dying whatever is left to kill,
// and the killer's reason is kept.
func TestTreeKillAll(t *testing.T) {
	for _, c := range []struct {
		name     string
		timedOut bool
	}{{"timeout", true}, {"context", false}} {
		t.Run(c.name, func(t *testing.T) {
			var tr tree
			tr.init()
			tr.add(noTid, noTid) // no such process: the kill fails
			tr.stopBy(c.timedOut)
			if n := tr.killAll(); n != 0 {
				t.Errorf("killAll = %d signals sent to tids that do not exist", n)
			}
			if !tr.dying.Load() {
				t.Error("not dying after killAll")
			}
			if to, in := tr.stopReason(); to != c.timedOut || in == c.timedOut {
				t.Errorf("stopReason = %v, %v after stopBy(%v)", to, in, c.timedOut)
			}
		})
	}
}

// TestTreeProcInfo: a process's exe and argv are read from /proc once and
// kept until its next exec (which clears them, execEvent).
func TestTreeProcInfo(t *testing.T) {
	var tr tree
	tr.init()
	self := os.Getpid()
	tr.add(self, self)
	exe, argv, cut := tr.procInfo(self)
	want, _ := os.Readlink("/proc/self/exe")
	if exe != want || !reflect.DeepEqual(argv, os.Args) || cut {
		t.Fatalf("procInfo = %q %q %v, want %q %q", exe, argv, cut, want, os.Args)
	}
	tr.procs[self].exe, tr.procs[self].argv = "/kept", []string{"kept"}
	if exe, argv, _ := tr.procInfo(self); exe != "/kept" || len(argv) != 1 {
		t.Fatalf("read again: %q %q", exe, argv)
	}
}

// TestReadCmdlineBounded: a process's argv is kept up to maxArgvBytes and
// marked cut beyond (a red team's tree made every denial carry megabytes).
func TestReadCmdlineBounded(t *testing.T) {
	long := strings.Repeat("x", 3*maxArgvBytes)
	// A shell that waits, its argv kept: sleep itself would take the long
	// argument for a duration and exit at once.
	cmd := exec.Command("/bin/sh", "-c", "sleep 10; true", "sh", long)
	if err := cmd.Start(); err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var argv []string
	var cut bool
	// Until the exec is done: before it, the child shows the test binary's
	// argv (a busy machine may take a while).
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if argv, cut = readCmdline(cmd.Process.Pid); len(argv) == 5 && argv[0] == "/bin/sh" {
			break
		}
	}
	if !cut || len(argv) != 5 || argv[0] != "/bin/sh" || argv[3] != "sh" {
		t.Fatalf("argv %d args %.80q, cut %v", len(argv), argv, cut)
	}
	if n := len(strings.Join(argv, "\x00")); n != maxArgvBytes {
		t.Errorf("kept %d bytes, want %d", n, maxArgvBytes)
	}
	short, cut := readCmdline(os.Getpid())
	if cut || !reflect.DeepEqual(short, os.Args) {
		t.Errorf("own argv %q cut %v", short, cut)
	}
}

// TestRemoveTaskFrees: a task that goes frees what it held outside the
// registry: its path page slots and its place in the frozen set (its tid
// may be reused by a task the thaw must not resume).
func TestRemoveTaskFrees(t *testing.T) {
	tr := newTracer(&Config{Policy: mustPolicy(t)}, 0)
	if !tr.page.on {
		t.Fatal("path page off in an enforcing run")
	}
	tr.tree.add(noTid, noTid)
	tk := tr.tree.add(noTid+1, noTid)
	tk.slot = tr.page.take() + 1
	tk.copies = []argCopy{{slot: tr.page.take()}}
	tr.fz.hold(tk.tid)
	tr.removeTask(tk.tid)
	if got := freeSorted(&tr.page); !slices.Equal(got, allSlots()) {
		t.Errorf("free slots %v, want every slot", got)
	}
	if tr.fz.isHeld(tk.tid) || tr.tree.tracked(tk.tid) {
		t.Errorf("held %v tracked %v after removeTask", tr.fz.isHeld(tk.tid), tr.tree.tracked(tk.tid))
	}
	checkTree(t, &tr.tree)
}
