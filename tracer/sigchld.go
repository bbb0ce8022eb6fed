package tracer

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// saNoCldStop is SA_NOCLDSTOP (include/uapi/asm-generic/signal.h; the same
// value on x86 and arm64).
const saNoCldStop = 0x1

var quietStops struct {
	once sync.Once
	err  error
}

// quietChildStops sets SA_NOCLDSTOP on the process's SIGCHLD action,
// keeping the handler the Go runtime installed.
//
// Every ptrace stop of a tracee (each seccomp stop, each PTRACE_INTERRUPT
// stop of a freeze, each syscall-exit stop) makes the kernel send SIGCHLD
// to the tracer unless the tracer's SIGCHLD action has SA_NOCLDSTOP
// (kernel/signal.c do_notify_parent_cldstop, unchanged since 2.6 and so in
// 4.18; wait4 is woken either way). The runtime's handler for it does
// nothing useful here, but its delivery interrupts the tracer thread: a
// signal frame, the handler and rt_sigreturn, measured at 1 to 4 of them per
// checked call. Children that exit still raise SIGCHLD (do_notify_parent
// does not look at SA_NOCLDSTOP), so nothing that waits for an exit changes.
// os/signal resets the action only for a program that calls Notify, Ignore
// or Reset for SIGCHLD itself, which tracecell does not.
func quietChildStops() error {
	quietStops.once.Do(func() {
		var old kernelSigaction
		if err := rtSigaction(int(unix.SIGCHLD), nil, &old); err != nil {
			quietStops.err = os.NewSyscallError("rt_sigaction(SIGCHLD)", err)
			return
		}
		if old.Flags&saNoCldStop != 0 {
			return
		}
		act := old
		act.Flags |= saNoCldStop
		if err := rtSigaction(int(unix.SIGCHLD), &act, nil); err != nil {
			quietStops.err = os.NewSyscallError("rt_sigaction(SIGCHLD)", err)
		}
	})
	return quietStops.err
}
