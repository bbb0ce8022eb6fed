package decode

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// devTTYEnv adds /dev/tty, open as fd 8, to the fake.
func devTTYEnv(e *fakeEnv) {
	e.files["/dev"] = fakeFile{dir: true}
	e.files["/dev/tty"] = fakeFile{}
	e.fds[8] = "/dev/tty"
	e.chr = map[int32]DevID{8: {Dev: 6, Rdev: unix.Mkdev(5, 0)}}
}

// cttyIs checks that the operation's path stands for terminal res (own or
// not, why) and says /dev/tty as given.
func cttyIs(given, res string, own bool, why string) func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
	return func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
		t.Helper()
		p := op.Paths[0]
		if !p.Ctty || p.Given != given || p.Resolved != res || p.OwnPty != own || p.CttyWhy != why {
			t.Errorf("path %+v, want /dev/tty as %q standing for %s (own %v, why %q)", p, given, res, own, why)
		}
		if e.cttyN != 1 {
			t.Errorf("terminal asked %d times", e.cttyN)
		}
	}
}

// TestDecodeDevTTY: /dev/tty is decided as the terminal it names (the
// tracer's fact): an open as the caller's controlling terminal, a
// terminal change on an fd of it as the fd's terminal.
func TestDecodeDevTTY(t *testing.T) {
	foreign := Terminal{Path: "/dev/pts/0"}
	own := Terminal{Path: "/dev/pts/4", Own: true}
	with := func(ctty Terminal) func(*fakeEnv) {
		return func(e *fakeEnv) { devTTYEnv(e); e.ctty = ctty }
	}
	withFd := func(tm Terminal) func(*fakeEnv) {
		return func(e *fakeEnv) { devTTYEnv(e); e.fdTerm = map[int32]Terminal{8: tm} }
	}
	open := func(flags uint64) [6]uint64 { return [6]uint64{atFdcwd, addr1, flags} }
	tty := map[uintptr]string{addr1: "/dev/tty"}
	cases := []tcase{
		{name: "open for writing: the caller's foreign terminal", call: "openat", args: open(unix.O_RDWR), mem: tty, env: with(foreign),
			kind: syscalls.KindWrite, check: cttyIs("/dev/tty", "/dev/pts/0", false, "")},
		{name: "open for writing: its own pty", call: "openat", args: open(unix.O_WRONLY), mem: tty, env: with(own),
			kind: syscalls.KindWrite, check: cttyIs("/dev/tty", "/dev/pts/4", true, "")},
		{name: "a checked read-only open too", call: "openat", args: open(unix.O_RDONLY), mem: tty, env: with(foreign),
			kind: syscalls.KindRead, check: cttyIs("/dev/tty", "/dev/pts/0", false, "")},
		{name: "no controlling terminal: the kernel's ENXIO", call: "openat", args: open(unix.O_RDWR), mem: tty, env: with(Terminal{None: true}),
			want: KernelFails, errno: syscall.ENXIO},
		{name: "cannot be read: denied with why", call: "openat", args: open(unix.O_RDWR), mem: tty, env: with(Terminal{Why: "no stat"}),
			kind: syscalls.KindWrite, check: cttyIs("/dev/tty", "/dev/tty", false, "no stat")},
		{name: "O_PATH opens no terminal", call: "openat", args: open(unix.O_PATH), mem: tty, env: with(foreign),
			kind: syscalls.KindRead, check: func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
				if op.Paths[0].Ctty || e.cttyN != 0 {
					t.Errorf("O_PATH: %+v", op.Paths[0])
				}
			}},
		{name: "TCSETS on an fd of /dev/tty: the fd's foreign terminal", call: "ioctl", args: [6]uint64{8, 0x5402}, env: withFd(foreign),
			kind: syscalls.KindWrite, check: cttyIs("fd 8", "/dev/pts/0", false, "")},
		{name: "TIOCSWINSZ on an fd of /dev/tty: its own pty", call: "ioctl", args: [6]uint64{8, 0x5414}, env: withFd(own),
			kind: syscalls.KindWrite, check: cttyIs("fd 8", "/dev/pts/4", true, "")},
		{name: "TIOCSCTTY on an fd of /dev/tty", call: "ioctl", args: [6]uint64{8, 0x540e}, env: withFd(Terminal{Path: "/dev/pts/4", Why: "cannot be asked"}),
			kind: syscalls.KindWrite, check: cttyIs("fd 8", "/dev/pts/4", false, "cannot be asked")},
		// Never the stdio pass, even were /dev/tty's numbers among them.
		{name: "an fd of /dev/tty is no stdio terminal", call: "ioctl", args: [6]uint64{8, 0x5402},
			env: func(e *fakeEnv) {
				withFd(foreign)(e)
				e.stdio = map[DevID]bool{e.chr[8]: true}
			},
			kind: syscalls.KindWrite, check: cttyIs("fd 8", "/dev/pts/0", false, "")},
		{name: "hung up: the kernel fails the change", call: "ioctl", args: [6]uint64{8, 0x5402}, env: withFd(Terminal{None: true}), want: Pass},
		{name: "TIOCNOTTY: the terminal that goes is looked at", call: "ioctl", args: [6]uint64{8, syscalls.TIOCNOTTY}, env: with(foreign),
			kind: syscalls.KindIoctl, check: func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
				if e.cttyN != 1 || op.Paths[0].Ctty {
					t.Errorf("asked %d times; path %+v", e.cttyN, op.Paths[0])
				}
			}},
	}
	run(t, cases)
}
