package decode

import (
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// target checks an operation's target.
func target(pid int, inTree bool) func(*testing.T, *policy.Op, *Result, *fakeEnv) {
	return func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
		if op.TargetPid != pid || op.TargetInTree != inTree {
			t.Errorf("target %d in tree %v, want %d %v", op.TargetPid, op.TargetInTree, pid, inTree)
		}
	}
}

func TestDecodeSignal(t *testing.T) {
	neg := func(v int32) uint64 { return uint64(uint32(v)) }
	cases := []tcase{
		{name: "kill in the tree", call: "kill", args: [6]uint64{10, 15}, kind: syscalls.KindSignal, check: target(10, true)},
		{name: "kill outside", call: "kill", args: [6]uint64{1, 9}, kind: syscalls.KindSignal, check: target(1, false)},
		{name: "kill's pid is an int", call: "kill", args: [6]uint64{0xffffffff0000000a, 15}, kind: syscalls.KindSignal, check: target(10, true)},
		{name: "kill -1", call: "kill", args: [6]uint64{neg(-1), 0}, kind: syscalls.KindSignal, check: target(-1, false)},
		{name: "kill of a gone process: ESRCH", call: "kill", args: [6]uint64{4242, 9}, env: func(e *fakeEnv) { e.gone = map[int]bool{4242: true} },
			want: KernelFails, errno: syscall.ESRCH},
		{name: "signal 0 asks only", call: "kill", args: [6]uint64{1, 0}, want: Pass, kind: syscalls.KindSignal},
		{name: "signal 0 to every process is decided", call: "kill", args: [6]uint64{neg(-1), 0}, kind: syscalls.KindSignal},
		{name: "the signal is kept for the report", call: "kill", args: [6]uint64{1, 9}, kind: syscalls.KindSignal,
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if r.Sig != 9 {
					t.Errorf("sig %d", r.Sig)
				}
			}},
		{name: "tkill of 0: EINVAL", call: "tkill", args: [6]uint64{0, 9}, want: KernelFails, errno: syscall.EINVAL},
		{name: "tgkill names the outside tgid", call: "tgkill", args: [6]uint64{1, 10, 9}, kind: syscalls.KindSignal, check: target(1, false)},
		{name: "tgkill in the tree names the tid", call: "tgkill", args: [6]uint64{10, 5, 9}, kind: syscalls.KindSignal, check: target(5, true)},
		{name: "tgkill tid 0: EINVAL", call: "tgkill", args: [6]uint64{10, 0, 9}, want: KernelFails, errno: syscall.EINVAL},
		{name: "pidfd_open of 0: EINVAL", call: "pidfd_open", args: [6]uint64{0}, want: KernelFails, errno: syscall.EINVAL},
		{name: "pidfd_open outside is decided even without a signal", call: "pidfd_open", args: [6]uint64{1}, kind: syscalls.KindSignal, check: target(1, false)},
		{name: "pidfd_send_signal to the tree", call: "pidfd_send_signal", args: [6]uint64{8, 15},
			env: func(e *fakeEnv) { e.pidfds = map[int32]pidfd{8: {pid: 10}} }, kind: syscalls.KindSignal, check: target(10, true)},
		{name: "pidfd_send_signal on no pidfd: EBADF", call: "pidfd_send_signal", args: [6]uint64{8, 15}, want: KernelFails, errno: syscall.EBADF},
		{name: "pidfd_send_signal tracecell cannot place: fail closed", call: "pidfd_send_signal", args: [6]uint64{5, 15},
			env:  func(e *fakeEnv) { e.pidfds = map[int32]pidfd{5: {errno: syscall.EACCES, why: "another pid namespace"}} },
			want: FailClosed, errno: syscall.EACCES,
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if r.Out.Why != "another pid namespace" || r.Out.Path.Given != "fd 5" || r.Out.Path.Resolved != "/etc" {
					t.Errorf("fail closed %+v", r.Out)
				}
			}},
		// A SIGSYS with a siginfo of the caller's making could pose as
		// the kernel's seccomp report (red team, round 44).
		{name: "rt_sigqueueinfo SIGSYS is forbidden", call: "rt_sigqueueinfo", args: [6]uint64{10, 31, 0x1000}, kind: syscalls.KindForbidden, check: target(10, true)},
		{name: "rt_tgsigqueueinfo SIGSYS is forbidden", call: "rt_tgsigqueueinfo", args: [6]uint64{10, 10, 31, 0x1000}, kind: syscalls.KindForbidden},
		{name: "pidfd_send_signal SIGSYS with a siginfo is forbidden", call: "pidfd_send_signal", args: [6]uint64{8, 31, 0x1000},
			env: func(e *fakeEnv) { e.pidfds = map[int32]pidfd{8: {pid: 10}} }, kind: syscalls.KindForbidden},
		{name: "pidfd_send_signal SIGSYS without one is a signal", call: "pidfd_send_signal", args: [6]uint64{8, 31, 0},
			env: func(e *fakeEnv) { e.pidfds = map[int32]pidfd{8: {pid: 10}} }, kind: syscalls.KindSignal, check: target(10, true)},
		{name: "rt_sigqueueinfo of another signal is a signal", call: "rt_sigqueueinfo", args: [6]uint64{10, 10, 0x1000}, kind: syscalls.KindSignal, check: target(10, true)},
		{name: "kill SIGSYS is a signal", call: "kill", args: [6]uint64{10, 31}, kind: syscalls.KindSignal, check: target(10, true)},
	}
	run(t, cases)
}

func TestDecodeProcess(t *testing.T) {
	cases := []tcase{
		{name: "setpriority of a process outside", call: "setpriority", args: [6]uint64{0, 1, 10}, kind: syscalls.KindProcess, check: target(1, false)},
		{name: "setpriority of the caller", call: "setpriority", args: [6]uint64{0, 0, 10}, kind: syscalls.KindProcess, check: target(0, true)},
		{name: "setpriority of the tree's group", call: "setpriority", args: [6]uint64{1, 7, 10},
			env: func(e *fakeEnv) { e.pgrps = map[int]bool{7: true} }, kind: syscalls.KindProcess, check: target(-7, true)},
		{name: "setpriority of a user", call: "setpriority", args: [6]uint64{2, 1000, 10}, kind: syscalls.KindProcess, check: target(-1, false)},
		{name: "ioprio_set numbers its targets from 1", call: "ioprio_set", args: [6]uint64{1, 10, 0}, kind: syscalls.KindProcess, check: target(10, true)},
		{name: "ioprio_set of a group outside", call: "ioprio_set", args: [6]uint64{2, 7, 0}, kind: syscalls.KindProcess, check: target(-7, false)},
		{name: "kcmp of two tree processes", call: "kcmp", args: [6]uint64{5, 10, 0}, kind: syscalls.KindProcess, check: target(10, true)},
		{name: "kcmp of a host process second", call: "kcmp", args: [6]uint64{5, 1, 0}, kind: syscalls.KindProcess, check: target(1, false)},
		{name: "kcmp of a host process first", call: "kcmp", args: [6]uint64{1, 5, 0}, kind: syscalls.KindProcess, check: target(1, false)},
		{name: "prlimit64 reading only passes", call: "prlimit64", args: [6]uint64{1, 7, 0, addr1}, want: Pass, kind: syscalls.KindProcess},
		{name: "prlimit64 setting another's limits", call: "prlimit64", args: [6]uint64{1, 7, addr1}, kind: syscalls.KindProcess, check: target(1, false)},
		{name: "a gone target: ESRCH", call: "prlimit64", args: [6]uint64{4242, 7, addr1}, env: func(e *fakeEnv) { e.gone = map[int]bool{4242: true} },
			want: KernelFails, errno: syscall.ESRCH},
		{name: "sched_setaffinity by its pid argument", call: "sched_setaffinity", args: [6]uint64{1}, kind: syscalls.KindProcess, check: target(1, false)},
	}
	run(t, cases)
}
