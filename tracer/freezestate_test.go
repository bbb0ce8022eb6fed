package tracer

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newFreezeState is a freeze state over a tree of tasks noTid (leader,
// attached) and noTid+1 (the caller), none of which exists.
func newFreezeState() (*freezeState, *task, *task) {
	tr := &tree{}
	tr.init()
	other := tr.add(noTid, noTid)
	other.attached = true
	caller := tr.add(noTid+1, noTid)
	caller.attached = true
	return &freezeState{tree: tr}, other, caller
}

// TestFreezeStateDue: frozen tasks are let go when nothing is queued, the
// tree dies, or freezeHold has passed; never when none is held.
func TestFreezeStateDue(t *testing.T) {
	cases := []struct {
		name   string
		held   bool
		queued bool
		age    time.Duration
		dying  bool
		want   bool
	}{
		{"nothing held", false, false, 0, false, false},
		{"nothing held, dying", false, true, 0, true, false},
		{"held, nothing queued", true, false, 0, false, true},
		{"held, stops queued, recent", true, true, 0, false, false},
		{"held, stops queued, past freezeHold", true, true, 2 * freezeHold, false, true},
		{"held, stops queued, dying", true, true, 0, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, other, _ := newFreezeState()
			if c.held {
				s.hold(other.tid)
				// Recent: in the future, so that a slow machine cannot
				// make the set older than freezeHold.
				s.frozen.since = time.Now().Add(time.Minute)
				if c.age > 0 {
					s.frozen.since = time.Now().Add(-c.age)
				}
			}
			if c.queued {
				s.queue(noTid+5, unix.WaitStatus(unix.SIGKILL))
			}
			s.tree.dying.Store(c.dying)
			if got := s.due(); got != c.want {
				t.Errorf("due = %v, want %v", got, c.want)
			}
		})
	}
}

// TestFreezeStateTake: how a status reaped during a freeze is filed.
func TestFreezeStateTake(t *testing.T) {
	interrupt := unix.WaitStatus(0x7f | int(unix.SIGTRAP)<<8 | unix.PTRACE_EVENT_STOP<<16)
	seccomp := unix.WaitStatus(0x7f | int(unix.SIGTRAP)<<8 | unix.PTRACE_EVENT_SECCOMP<<16)
	killed := unix.WaitStatus(unix.SIGKILL)
	cases := []struct {
		name       string
		tid        int
		ws         unix.WaitStatus
		prep       func(s *freezeState, other *task)
		held, gone bool
		queued     int
	}{
		{"the freeze's interrupt: held", noTid, interrupt, nil, true, false, 0},
		{"another stop: queued", noTid, seccomp, nil, false, false, 1},
		{"an exit: queued", noTid, killed, nil, false, false, 1},
		{"interrupt of a task with a stop queued: queued", noTid, interrupt,
			func(s *freezeState, _ *task) { s.queue(noTid, seccomp) }, false, false, 2},
		{"interrupt of a task not attached yet: queued", noTid, interrupt,
			func(_ *freezeState, o *task) { o.attached = false }, false, false, 1},
		{"a new child's first stop: queued", noTid + 7, interrupt, nil, false, false, 1},
		{"the caller killed: gone", noTid + 1, killed, nil, false, true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, other, caller := newFreezeState()
			if c.prep != nil {
				c.prep(s, other)
			}
			f := &freezer{tk: caller, waiting: map[int]bool{c.tid: true}}
			f.take(s, c.tid, c.ws)
			if s.isHeld(c.tid) != c.held || f.gone != c.gone || len(s.backlog) != c.queued {
				t.Errorf("held %v gone %v queued %d, want %v %v %d", s.isHeld(c.tid), f.gone, len(s.backlog), c.held, c.gone, c.queued)
			}
			if !c.gone && f.waiting[c.tid] {
				t.Errorf("tid %d still waited for", c.tid)
			}
		})
	}
}

// TestFreezeStateRelease: the thaw takes the whole set once; a task gone
// meanwhile (forget) is not resumed.
func TestFreezeStateRelease(t *testing.T) {
	s, other, caller := newFreezeState()
	if s.release() != nil {
		t.Fatal("release of nothing held returned a set")
	}
	s.hold(other.tid)
	s.hold(caller.tid)
	s.forget(caller.tid)
	if !s.isHeld(other.tid) || s.isHeld(caller.tid) {
		t.Fatalf("isHeld %v %v after forget, want true false", s.isHeld(other.tid), s.isHeld(caller.tid))
	}
	fs := s.release()
	if fs == nil || !slices.Equal(fs.tids, []int{other.tid, caller.tid}) || !fs.in[other.tid] || fs.in[caller.tid] {
		t.Fatalf("released %+v", fs)
	}
	if s.frozen != nil || s.isHeld(other.tid) {
		t.Fatal("the set is still held after release")
	}
	s.forget(other.tid) // nothing held: no effect
}
