package tracer

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestNewProgram: which statuses under the leader's tid end the freeze
// around a thread's exec. Before the thread has left its group only the
// exec event and the group's end do: a stop of the old leader (an
// interrupt, a call's exit, a signal) must not, or the loop would answer
// it on the new program (a red team: a seccomp stop of the leader queued
// before the exec ended the wait early, and the loop read the dead
// leader's call from the new program's registers).
func TestNewProgram(t *testing.T) {
	stop := func(sig, ev int) unix.WaitStatus { return unix.WaitStatus(0x7f | sig<<8 | ev<<16) }
	trap := int(unix.SIGTRAP)
	cases := []struct {
		name    string
		ws      unix.WaitStatus
		through bool
		want    bool
	}{
		{"exec event", stop(trap, unix.PTRACE_EVENT_EXEC), false, true},
		{"exec event, through", stop(trap, unix.PTRACE_EVENT_EXEC), true, true},
		{"group exited", unix.WaitStatus(3 << 8), false, true},
		{"group killed", unix.WaitStatus(unix.SIGSEGV), false, true},
		{"old leader's seccomp stop", stop(trap, unix.PTRACE_EVENT_SECCOMP), false, false},
		{"old leader's interrupt stop", stop(trap, unix.PTRACE_EVENT_STOP), false, false},
		{"old leader's call exit", stop(trap|0x80, 0), false, false},
		{"old leader's signal", stop(int(unix.SIGUSR1), 0), false, false},
		{"failed exec's syscall exit, through", stop(trap|0x80, 0), true, true},
		{"SIGSEGV stop, through (4.18)", stop(int(unix.SIGSEGV), 0), true, true},
		{"seccomp stop, through: not the new program's first", stop(trap, unix.PTRACE_EVENT_SECCOMP), true, false},
		{"interrupt stop, through: the old leader's", stop(trap, unix.PTRACE_EVENT_STOP), true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := newProgram(c.ws, c.through); got != c.want {
				t.Errorf("newProgram(%#x, through=%v) = %v, want %v", uint32(c.ws), c.through, got, c.want)
			}
		})
	}
}
