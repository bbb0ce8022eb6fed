package tracer

// /dev/tty, the controlling terminal.
//
// /dev/tty (5, 0) names no terminal of its own: an open of it opens the
// caller's controlling terminal, whatever that is, and the open file acts
// on that terminal from then on. So it is decided by what it names, as
// policy.Path.Ctty: Resolved becomes that terminal (/dev/pts/N, or a
// console's or serial line's node) and OwnPty says whether the tree may
// write it, by the same test as an open of /dev/pts/N by name (pty.go:
// tracecell's own terminal by device numbers, a pty the tree made by index
// and identity). Red team F2: the tree, a session leader without a
// controlling terminal (tracecell setsid()s it), opened another terminal
// of the user's read-only without O_NOCTTY (a read-only open, not checked
// with the default open reads); the kernel made it the controlling
// terminal, and /dev/tty, a default writable device decided by its name,
// then wrote to it and turned its echo off.
//
// Kernel facts this rests on (drivers/tty/tty_io.c, tty_jobctrl.c):
//
//   - tty_open_current_tty: an open of (5, 0) takes current->signal->tty,
//     the calling process's controlling terminal, and fails with ENXIO
//     when there is none. The file then refers to that tty_struct for
//     good (file->private_data), and counts as an open of it (tty_reopen),
//     so that the pty's index is not freed while the file is open.
//   - /proc/<pid>/stat field 7, tty_nr, is that terminal's device number
//     (new_encode_dev(tty_devnum(tty)), fs/proc/array.c), 0 for none. A
//     UNIX98 pty slave's is (136, N) for /dev/pts/N (devpts, pty.c:
//     MKDEV(UNIX98_PTY_SLAVE_MAJOR, 0) + index), which fits the minor for
//     every index; the device number alone does not say which devpts
//     instance, so the pty at /dev/pts/N is taken for it (see the README's
//     known gaps).
//   - A process's controlling terminal is changed only by the process
//     itself (a session leader's open of a terminal without O_NOCTTY, or
//     TIOCSCTTY; TIOCNOTTY; setsid) or taken away (its session leader's
//     TIOCNOTTY or exit, a hangup, a steal by TIOCSCTTY with arg 1). An
//     open of /dev/tty decided with the tree frozen (uncopyable) so opens
//     the terminal that was decided, or fails with ENXIO.
//   - An fd of /dev/tty outlives that: the opener may since have dropped
//     its controlling terminal and taken another (TIOCNOTTY, then an open
//     of its own pty), or passed the fd to a process whose terminal is
//     another (fork, then setsid and login_tty in the child; SCM_RIGHTS).
//     So a terminal change on such an fd is not decided by the caller's
//     controlling terminal but by the fd's own: ioctl(TIOCGDEV) answers
//     tty_devnum of the file's tty (tty_ioctl). The tracer gets the very
//     file with pidfd_getfd (5.6; PTRACE_MODE_ATTACH, which a tracer has),
//     checks with kcmp(KCMP_FILE) that it is the caller's fd (the thread
//     group leader's fd table can differ from the caller's: a thread made
//     without CLONE_FILES) and asks TIOCGDEV of it. A file whose terminal
//     was hung up answers ENOTTY (hung_up_tty_ioctl) to every command but
//     TIOCSPGRP (EIO): the tree's change fails as well, and is let to.
//   - Where pidfd_getfd is missing (before 5.6, RHEL 8) or refused, the
//     fd's terminal cannot be asked: the change is allowed only when the
//     caller's controlling terminal is the tree's own or tracecell's and
//     the tracer has seen no process of the tree with another (it looks at
//     every process then, and at every open of /dev/tty it checks). A
//     foreign terminal held and dropped between two such looks is not
//     seen (README, known gaps); a caller with no controlling terminal is
//     denied.

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/procfs"
)

// pidfdThread is PIDFD_THREAD (include/uapi/linux/pidfd.h, Linux 6.9: a
// pidfd of one thread, not of its thread group); older kernels answer
// EINVAL.
const pidfdThread = unix.O_EXCL

// kcmpFile is KCMP_FILE (include/uapi/linux/kcmp.h): kcmp(2) compares the
// open files behind two fds.
const kcmpFile = 0

// errOtherFile: the fd pidfd_getfd gave is not the caller's (another fd
// table).
var errOtherFile = errors.New("the thread group's fd table is not the caller's")

// errHungUp wraps TIOCGDEV's failure on a /dev/tty file: its terminal was
// hung up.
type errHungUp struct{ err error }

func (e errHungUp) Error() string { return "hung up: " + e.err.Error() }

// cttyNr is the controlling terminal of tid's process, field 7 (tty_nr)
// of /proc/<tid>/stat: a device number, 0 for none; false when it cannot
// be read.
func cttyNr(tid int) (uint64, bool) {
	n, err := strconv.ParseInt(procfs.Field(tid, 7), 10, 64) // printed as an int
	if err != nil {
		return 0, false
	}
	return uint64(uint32(n)), true
}

// terminal names the terminal rdev (a device number as stat and tty_nr
// give it) and says whether the tree may write it: a UNIX98 pty slave is
// /dev/pts/N, the tree's when it is tracecell's own terminal or a pty the
// tree made (by device numbers and identity, as owns); anything else (a
// virtual console, a serial line) only when it is tracecell's own.
func (l *ptyLedger) terminal(rdev uint64) (string, bool) {
	maj, min := unix.Major(rdev), unix.Minor(rdev)
	if ptySlaveMajor(maj) {
		n := uint64(maj-136)<<8 + uint64(min)
		p := "/dev/pts/" + strconv.FormatUint(n, 10)
		id, ok := ptyStat(p)
		if !ok || id.rdev != rdev {
			return p, false // not at /dev/pts/N: another devpts instance's
		}
		for _, s := range l.stdio {
			if s == (devID{id.dev, id.rdev}) {
				return p, true
			}
		}
		for _, r := range l.viaDevTTY {
			if r == rdev {
				return p, true
			}
		}
		own, known := l.own[uint32(n)]
		return p, known && own == id
	}
	p := charDevPath(rdev)
	for _, s := range l.ttys {
		if s.rdev == rdev {
			return p, true
		}
	}
	for _, r := range l.viaDevTTY {
		if r == rdev {
			return p, true
		}
	}
	return p, false
}

// charDevPath is the node of character device rdev under /dev, as sysfs
// names it (/sys/dev/char/M:m links to its class device: tty1, ttyS0;
// a '!' in the name stands for a '/'), else /dev/char/M:m.
func charDevPath(rdev uint64) string {
	mm := fmt.Sprintf("%d:%d", unix.Major(rdev), unix.Minor(rdev))
	if l, err := os.Readlink("/sys/dev/char/" + mm); err == nil {
		if b := path.Base(l); b != "" && b != "." && b != "/" && b != ".." {
			return "/dev/" + strings.ReplaceAll(b, "!", "/")
		}
	}
	return "/dev/char/" + mm
}

// ctty is the controlling terminal of tid's process (decode.Env.Ctty). A
// terminal not the tree's is noted (foreignCtty).
func (t *tracer) ctty(tid int) decode.Terminal {
	nr, ok := cttyNr(tid)
	if !ok {
		return decode.Terminal{Why: fmt.Sprintf("tracecell could not read the controlling terminal of %d (/proc/%d/stat)", tid, tid)}
	}
	if nr == 0 {
		return decode.Terminal{None: true}
	}
	p, own := t.ptys.terminal(nr)
	if !own && t.foreignCtty == "" {
		t.foreignCttyPath = p
		t.foreignCtty = fmt.Sprintf("process %d of the tree had %s, a terminal not its own, as its controlling terminal", tid, p)
	}
	return decode.Terminal{Path: p, Own: own}
}

// fdTerminal is the terminal that fd of task tid (of thread group tgid),
// an open file of /dev/tty, acts on (decode.Env.FdTerminal; see the top of
// the file).
//
// Precondition: the call is frozen (HIoctl freezes), so that no task of
// the tree changes the fd between this look and the kernel's use.
func (t *tracer) fdTerminal(tgid, tid int, fd int32) decode.Terminal {
	rdev, err := fdTTYDev(tgid, tid, fd)
	var hu errHungUp
	switch {
	case err == nil:
		p, own := t.ptys.terminal(rdev)
		return decode.Terminal{Path: p, Own: own}
	case errors.As(err, &hu):
		return decode.Terminal{None: true}
	case !errors.Is(err, unix.ENOSYS):
		// The kernel has pidfd_getfd but the file could not be had
		// through it: the thread group's leader has exited (its files
		// are gone: EBADF), the caller's fd table is not the group's
		// (a thread made without CLONE_FILES, on a kernel without
		// PIDFD_THREAD), or it was refused. The tree can bring the first
		// two about at will, so no fallback: deny (red team, session 25:
		// a leader that exited made the fallback decide, and a foreign
		// terminal held and dropped unseen went through).
		return decode.Terminal{Why: fmt.Sprintf("which terminal fd %d of /dev/tty refers to cannot be asked of the kernel (%v)", fd, err)}
	}
	// pidfd_getfd is missing (before 5.6): the caller's terminal, and only
	// while no process of the tree is seen with a terminal not its own.
	why := fmt.Sprintf("which terminal fd %d of /dev/tty refers to cannot be asked of the kernel (%v)", fd, err)
	caller := t.ctty(tid)
	for pid := range t.tree.procs {
		t.ctty(pid)
	}
	switch {
	case caller.Why != "":
		return caller
	case caller.None:
		return decode.Terminal{Why: why + ", and the caller has no controlling terminal"}
	case !caller.Own:
		return caller // denied, named
	case t.foreignCtty != "":
		// Named as the terminal it may be.
		return decode.Terminal{Path: t.foreignCttyPath, Why: why + ", and " + t.foreignCtty + ": the fd may be one of that terminal"}
	}
	return caller
}

// fdTTYDev asks the kernel which terminal fd of task tid, a /dev/tty file,
// refers to (TIOCGDEV on the very file, got with pidfd_getfd): its device
// number. errHungUp when the file's terminal was hung up.
func fdTTYDev(tgid, tid int, fd int32) (uint64, error) {
	pfd, err := -1, error(unix.EINVAL)
	if tid != tgid {
		// The calling thread's own pidfd (PIDFD_THREAD, 6.9): its fd
		// table even when it is not the group's, and it stays usable
		// after the group leader exits.
		pfd, err = unix.PidfdOpen(tid, pidfdThread)
	}
	if errors.Is(err, unix.EINVAL) {
		pfd, err = unix.PidfdOpen(tgid, 0)
	}
	if err != nil {
		return 0, fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(pfd)
	dup, err := unix.PidfdGetfd(pfd, int(fd), 0)
	if err != nil {
		return 0, fmt.Errorf("pidfd_getfd: %w", err)
	}
	defer unix.Close(dup)
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(tid), uintptr(os.Getpid()), kcmpFile, uintptr(fd), uintptr(dup), 0)
	switch {
	case e != 0:
		return 0, fmt.Errorf("kcmp: %w", e)
	case r != 0:
		return 0, errOtherFile
	}
	n, err := unix.IoctlGetUint32(dup, unix.TIOCGDEV)
	if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EIO) {
		return 0, errHungUp{err}
	}
	if err != nil {
		return 0, fmt.Errorf("TIOCGDEV: %w", err)
	}
	return uint64(n), nil
}
