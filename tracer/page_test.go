package tracer

import (
	"runtime"
	"slices"
	"sort"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/syscalls"
)

// freeSorted is pg's free slots in order.
func freeSorted(pg *pathPage) []int {
	s := append([]int(nil), pg.freeSlots...)
	sort.Ints(s)
	return s
}

func allSlots() []int {
	s := make([]int, syscalls.PathSlots)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestPathPageSlots: every slot is handed out once until it is put back,
// whichever way the call holding it ends.
func TestPathPageSlots(t *testing.T) {
	t.Run("off: no slot", func(t *testing.T) {
		var pg pathPage
		pg.init(false)
		if pg.usable() || pg.take() != -1 || pg.seccompBase != -1 {
			t.Fatalf("page off: usable %v, a slot, or seccompBase %d", pg.usable(), pg.seccompBase)
		}
	})
	t.Run("taken once each, then none", func(t *testing.T) {
		var pg pathPage
		pg.init(true)
		seen := map[int]bool{}
		for range syscalls.PathSlots {
			i := pg.take()
			if i < 0 || i >= syscalls.PathSlots || seen[i] {
				t.Fatalf("slot %d (seen %v)", i, seen[i])
			}
			seen[i] = true
		}
		if i := pg.take(); i != -1 {
			t.Fatalf("slot %d with every slot taken", i)
		}
		pg.put(3)
		if i := pg.take(); i != 3 {
			t.Fatalf("slot %d, want the one put back (3)", i)
		}
	})
	cases := []struct {
		name string
		end  func(pg *pathPage, tk *task, c *call)
	}{
		{"task released (died or exec'd)", func(pg *pathPage, tk *task, c *call) {
			pg.dropCopies(c)
			pg.release(tk)
		}},
		{"copies freed, then the copied call's slot", func(pg *pathPage, tk *task, c *call) {
			pg.dropCopies(c)
			pg.freeCopies(tk)
			pg.put(tk.slot - 1)
			tk.slot = 0
			pg.release(tk) // nothing left: frees nothing twice
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pg pathPage
			pg.init(true)
			tk := &task{tid: noTid, tgid: noTid}
			tk.slot = pg.take() + 1
			tk.copies = []argCopy{{arg: 0, slot: pg.take()}, {arg: 1, slot: pg.take()}}
			cl := &call{tk: tk, copies: []argCopy{{arg: 2, slot: pg.take()}}}
			c.end(&pg, tk, cl)
			if got := freeSorted(&pg); !slices.Equal(got, allSlots()) {
				t.Errorf("free slots %v, want every slot once", got)
			}
			if tk.slot != 0 || tk.copies != nil || cl.copies != nil {
				t.Errorf("still held: slot %d, copies %v, call copies %v", tk.slot, tk.copies, cl.copies)
			}
		})
	}
}

// TestPathPageOff: a page that is off is not usable, and says why.
func TestPathPageOff(t *testing.T) {
	var pg pathPage
	pg.init(true)
	if !pg.usable() {
		t.Fatal("not usable when on")
	}
	pg.off = true
	if pg.usable() {
		t.Fatal("usable when off")
	}
	if why := pg.noPageWhy(&task{tid: noTid}); why == "" {
		t.Fatal("no reason")
	}
}

// TestOwnFilter: with the root's filter count unknown (-1) no process is
// taken to run under its own filter; a process that cannot be read has
// none more than the root.
func TestOwnFilter(t *testing.T) {
	cases := []struct {
		name string
		base int
		tid  int
		want bool
	}{
		{"base unknown", -1, noTid, false},
		{"gone", 0, noTid, false},
		{"self, base above its count", 1 << 20, unix.Gettid(), false},
	}
	t.Run("base read at the first need", func(t *testing.T) {
		// This test process runs under no filter of its own making: the
		// root of a tree it started would have this thread's count and
		// the one filter the root loads.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		own := seccompFiltersAt("/proc/thread-self/status")
		if own < 0 {
			t.Skip("no Seccomp_filters in /proc (Linux 5.9)")
		}
		pg := pathPage{seccompBase: -1}
		if pg.ownFilter(unix.Gettid()) || pg.seccompBase != own+1 {
			t.Fatalf("ownFilter of a thread with the tracer's filters: base %d, want %d", pg.seccompBase, own+1)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pg := pathPage{seccompBase: c.base, baseRead: true}
			if got := pg.ownFilter(c.tid); got != c.want {
				t.Errorf("ownFilter = %v, want %v", got, c.want)
			}
		})
	}
}
