package tracer

// The traced tree's own pseudo-terminals.
//
// Every pty slave of the user, /dev/pts/N, is writable by its mode (620,
// owned by the user): an open for writing of another ssh session's terminal
// lets the tree print there, or change its settings (TIOCSWINSZ signals the
// foreground process with SIGWINCH). So /dev/pts/* is not a default device
// (policy.DefaultDevices), and an open of /dev/pts/N that the tracer checks
// (every open for writing) is allowed only when the target is
//
//   - the terminal of tracecell's own stdio, which the command got as its
//     fds 0-2: the char devices among them with a UNIX98 pty slave major
//     (136-143), recorded at start by device numbers (st_dev of the devpts
//     instance and st_rdev), never by name. tracecell holds these fds open
//     itself for the whole run, so their index cannot pass to another pty
//     meanwhile;
//   - a pty the tree created: opening /dev/ptmx (or /dev/pts/ptmx, both
//     default devices) makes a new pty, and TIOCGPTN on its master gives
//     the index N of the slave. The filter traps TIOCGPTN; the tracer
//     follows it to its syscall-exit stop (ptyDone), where, if it returned
//     0, N is read from the tree's memory and the slave recorded by index
//     and identity (ptyID).
//
// Everything else under /dev/pts but ptmx is denied (rule foreign-pty).
// Decisions stay in the policy: the tracer only sets policy.Path.OwnPty.
//
// Kernel facts this rests on:
//
//   - devpts_pty_new (fs/devpts/inode.c) makes the slave's inode when the
//     master is opened (ptmx_open): i_ino = N+3, rdev MKDEV(136, N), and
//     i_ctime the current time (current_time() since 4.9, CURRENT_TIME
//     before). devpts_pty_kill removes it when the pty goes.
//   - The index is freed once both ends are closed (pty_unix98_remove) and
//     the next ptmx open takes the lowest free one (devpts_new_index), so the
//     next pty anyone makes (a new ssh login) reuses it at once: an index
//     alone says nothing. The identity is the inode's st_dev (the devpts
//     instance), st_rdev and st_ctime, and a new pty at a reused index has a
//     new ctime. Alike only if made within the same tick of the kernel's
//     coarse clock (current_time, 1-10 ms) as the tree's pty at that index
//     was; the tree must have closed its own by then, and it cannot choose
//     when a host process makes one. chmod, chown and utimes of the slave
//     change its ctime; the tracer denies the first two (the slave is outside
//     every root), and a tree that utimes its own slave loses it by name
//     until it asks TIOCGPTN again.
//   - Since 4.7 every devpts mount is an instance of its own (commit
//     eedf265aa003, "devpts: Make each mount of devpts an independent
//     filesystem"), and ptmx_open takes the instance of a master opened
//     through /dev/ptmx from the devpts mounted at "pts" next to it, of one
//     opened through a devpts's own ptmx from that mount (devpts_acquire,
//     devpts_ptmx_path in 4.18). /dev/pts/N names the slave only for the
//     instance at /dev/pts: ptyLedger.learn checks that the master was opened
//     through tracecell's own /dev/ptmx or /dev/pts/ptmx (mount id and
//     inode, ptmxRefs), not a ptmx of another instance (a container's,
//     through /proc/<pid>/root) whose index would name someone else's pty
//     here.
//   - TIOCGPTPEER (4.13) opens the slave of a master fd without any path:
//     nothing to check, the tree holds that master. glibc's openpty uses it
//     where it can; its grantpt asks TIOCGPTN all the same.
//   - /proc/<pid>/fdinfo/<fd> of a pty master shows the kernel's own
//     "tty-index" (pty_show_fdinfo: in 4.19, not in 4.9; RHEL 8's 4.18 may
//     lack it). Where it is shown it must agree with the memory.
//
// The index is read from the tree's memory at the syscall exit. A tree of
// more than one task is frozen for the whole call (freezes: HIoctl), so no
// task of the tree can rewrite it in between; a call that was left to
// finish unfrozen (it blocked, freeze.go: a fault on the argument page) is
// trusted only when fdinfo's tty-index confirms it. A denied or failed
// TIOCGPTN records nothing; nor does one on anything but such a master.
// The slave's open then runs frozen too (uncopyable), so that no other
// task of the tree can close the master and free the index between the
// check and the kernel's open.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"strconv"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/policy"
)

// maxPtys bounds the recorded ptys (by index: a reused index replaces its
// entry, so a tree needs as many as it holds at once). Past it a new pty is
// not recorded and its slave cannot be opened by name (TIOCGPTPEER still
// works).
const maxPtys = 4096

// ptyID identifies one pty slave inode: its devpts instance, its device
// number and the time devpts made it.
type ptyID struct {
	dev, rdev uint64
	ctime     unix.Timespec
}

// devID is a device file by device numbers: st_dev of the file system it
// lies on and its st_rdev.
type devID struct{ dev, rdev uint64 }

// ptmxRef is tracecell's own view of a ptmx: its mount and inode.
type ptmxRef struct {
	mnt      int
	dev, ino uint64
}

// ptyLedger knows the ptys the tree may open by name: tracecell's own
// terminals among the command's stdio (addStdio, at start) and the ptys
// the tree made (learn, at a TIOCGPTN's syscall exit). Invariant: own
// holds at most maxPtys entries, each the identity the slave had when it
// was learnt; an index that devpts gives to someone else since has
// another identity and is not the tree's (slave).
type ptyLedger struct {
	stdio []devID // tracecell's own terminals, given to the command
	// ttys are all the character devices among the command's stdio (a
	// virtual console or serial line too, not only ptys): terminal
	// changes (TCSETS, TIOCSWINSZ, ...) on them pass without a decision.
	ttys []devID
	// viaDevTTY are the terminals (device numbers) that /dev/tty files
	// among the command's stdio refer to (TIOCGDEV): tracecell's own too.
	// /dev/tty itself is not in ttys: any fd of it the tree opens is
	// decided by the terminal it refers to (ctty.go).
	viaDevTTY []uint64
	own       map[uint32]ptyID // the tree's own, by index
	refs      []ptmxRef        // /dev/ptmx and /dev/pts/ptmx
}

func newPtyLedger() *ptyLedger {
	return &ptyLedger{own: map[uint32]ptyID{}, refs: ptmxRefs()}
}

// ptySlaveMajor reports whether major is a UNIX98 pty slave's
// (Documentation/admin-guide/devices.txt: 136-143).
func ptySlaveMajor(major uint32) bool { return major >= 136 && major <= 143 }

// addStdio records the files among the command's stdio that are pty
// slaves, and every character device among them.
func (l *ptyLedger) addStdio(files []*os.File) {
	for _, f := range files {
		if f == nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if decode.DevTTYRdev(st.Rdev) {
			// tracecell's own fd: the terminal it refers to is ours.
			if n, err := unix.IoctlGetUint32(int(f.Fd()), unix.TIOCGDEV); err == nil {
				l.viaDevTTY = append(l.viaDevTTY, uint64(n))
			}
			continue
		}
		id := devID{st.Dev, st.Rdev}
		if !l.stdioTTY(id) {
			l.ttys = append(l.ttys, id)
		}
		if !ptySlaveMajor(unix.Major(st.Rdev)) {
			continue
		}
		known := false
		for _, s := range l.stdio {
			known = known || s == id
		}
		if !known {
			l.stdio = append(l.stdio, id)
		}
	}
}

// stdioTTY reports whether id is a character device of the command's stdio.
func (l *ptyLedger) stdioTTY(id devID) bool {
	for _, s := range l.ttys {
		if s == id {
			return true
		}
	}
	return false
}

// ptmxRefs looks at /dev/ptmx and /dev/pts/ptmx (following a symlink, as
// an open does) without opening the device: O_PATH (2.6.39) needs no
// permission on it, and fstat and fdinfo's mnt_id (3.15) work on such fds.
func ptmxRefs() []ptmxRef {
	var refs []ptmxRef
	for _, name := range []string{"/dev/ptmx", "/dev/pts/ptmx"} {
		fd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd)); err == nil {
				if mnt, ok := fdinfoField(b, "mnt_id:"); ok {
					refs = append(refs, ptmxRef{mnt, st.Dev, st.Ino})
				}
			}
		}
		unix.Close(fd)
	}
	return refs
}

// fdinfoField is the integer after key ("mnt_id:", "tty-index:") at the
// start of a line of a /proc/<pid>/fdinfo/<fd> text.
func fdinfoField(b []byte, key string) (int, bool) {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			return n, err == nil
		}
	}
	return 0, false
}

// ptyStarts notes, at the seccomp stop of ioctl(fd, TIOCGPTN, p), the fd
// and the pointer (on arm64 x0 is the return value at the exit): the call
// is then resumed to its syscall-exit stop (release), where callDone hands
// it to ptyDone.
func (t *tracer) ptyStarts(c *call) {
	c.tk.ptyPending, c.tk.ptyFd, c.tk.ptyArg = true, t.regs.Int32Arg(0), t.regs.Arg(2)
}

// ptyDone records the pty whose index tk's TIOCGPTN returned (see the top
// of the file). unfrozen: the call was left to finish while the rest of the
// tree ran.
//
// Precondition: tk is stopped at the syscall exit of a TIOCGPTN that
// returned 0.
func (t *tracer) ptyDone(tk *task, unfrozen bool) {
	fd := tk.ptyFd
	if fd < 0 {
		return
	}
	b, err := t.mem.readBytes(tk.tid, uintptr(tk.ptyArg), 4)
	if err != nil {
		return
	}
	t.ptys.learn(tk.tgid, tk.tid, fd, binary.LittleEndian.Uint32(b), unfrozen, t.cfg.Log)
}

// learn records pty n as the tree's own, n being the index that a TIOCGPTN
// on fd of task tid (of thread group tgid) wrote to the tree's memory,
// when the kernel agrees: fd is a master opened through tracecell's own
// /dev/ptmx or /dev/pts/ptmx (refs), fdinfo's tty-index (where shown)
// names n — and is shown at all when the call ran unfrozen (its memory
// then proves nothing) — and /dev/pts/n is a pty slave. A pty past maxPtys
// is not recorded (and logged to log).
func (l *ptyLedger) learn(tgid, tid int, fd int32, n uint32, unfrozen bool, log zerolog.Logger) {
	fdPath := fmt.Sprintf("/proc/%d/task/%d/fd/%d", tgid, tid, fd)
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/fdinfo/%d", tgid, tid, fd))
	if err != nil {
		return
	}
	idx, shown := fdinfoField(info, "tty-index:")
	if shown && uint32(idx) != n || !shown && unfrozen {
		return
	}
	mnt, ok := fdinfoField(info, "mnt_id:")
	var st unix.Stat_t
	if !ok || unix.Stat(fdPath, &st) != nil {
		return
	}
	ours := false
	for _, r := range l.refs {
		ours = ours || (r.mnt == mnt && r.dev == st.Dev && r.ino == st.Ino)
	}
	if !ours {
		return
	}
	id, ok := ptyStat("/dev/pts/" + strconv.FormatUint(uint64(n), 10))
	if !ok {
		return
	}
	if _, known := l.own[n]; !known && len(l.own) >= maxPtys {
		log.Warn().Uint32("index", n).Int("max", maxPtys).
			Msg("tracecell stopped recording the tree's own ptys: this one cannot be opened by name")
		return
	}
	l.own[n] = id
}

// ptyStat is the identity of the pty slave at p (a resolved path: lstat),
// false when p is none.
func ptyStat(p string) (ptyID, bool) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || !ptySlaveMajor(unix.Major(st.Rdev)) {
		return ptyID{}, false
	}
	return ptyID{st.Dev, st.Rdev, st.Ctim}, true
}

// owns reports whether res, a resolved path under /dev/pts, is a pty slave
// the tree may open: tracecell's own terminal (by device numbers) or a pty
// the tree created, still the same inode (index and identity).
func (l *ptyLedger) owns(res string) bool {
	id, made, ok := l.slave(res)
	if !ok {
		return false
	}
	for _, s := range l.stdio {
		if s == (devID{id.dev, id.rdev}) {
			return true
		}
	}
	return made
}

// slave looks res up as a pty slave: its identity, and whether the tree
// made it (the same index and identity as a pty it created).
func (l *ptyLedger) slave(res string) (id ptyID, made, ok bool) {
	if !policy.PtySlave(res) {
		return id, false, false
	}
	if id, ok = ptyStat(res); !ok {
		return id, false, false
	}
	n, err := strconv.ParseUint(path.Base(res), 10, 32)
	if err != nil {
		return id, false, true
	}
	own, known := l.own[uint32(n)]
	return id, known && own == id, true
}

// asyncOwn reports whether signal-driven I/O on the character device st
// (reached as res) can signal only the tree: a pty master (each open of a
// ptmx makes a new one, which nobody outside has as a controlling
// terminal) or a pty slave the tree made itself, whose foreground group
// can only be one of the tree's own session. Never a terminal among the
// command's stdio, tracecell's own, whose foreground group is the shell's
// job.
func (l *ptyLedger) asyncOwn(res string, st *unix.Stat_t) bool {
	if l.stdioTTY(devID{st.Dev, st.Rdev}) {
		return false
	}
	if unix.Major(st.Rdev) == 5 && unix.Minor(st.Rdev) == 2 {
		return true // a master, through /dev/ptmx or /dev/pts/ptmx
	}
	_, made, _ := l.slave(res)
	return made
}
