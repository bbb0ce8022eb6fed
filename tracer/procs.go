package tracer

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/tracecell/tracecell/internal/procfs"
	"golang.org/x/sys/unix"
)

// What decode asks of the tree's processes: whether a pid or group is
// the tree's, whether a process is gone, which process a pidfd names.

// pidInTree reports whether every process pid (as kill(2) reads it) reaches
// is in the traced tree.
func (t *tracer) pidInTree(pid int) bool {
	switch {
	case pid == 0:
		// The caller's own process group: the tree runs in its own session,
		// so every group in it belongs to the tree.
		return true
	case pid == -1:
		return false // every process the user may signal
	case pid < -1:
		return t.pgrpInTree(-pid)
	}
	if t.tree.tracked(pid) {
		return true
	}
	// An exited tree process its parent has not reaped yet (a zombie):
	// signalling it does nothing, and multiprocessing does exactly that
	// when it terminates a pool. The parent must be in the tree: a child
	// of a tree process is one (traced from its fork), whatever pid it
	// has; tree.ever only spares a read for pids the tree never had.
	if t.tree.everHad(pid) {
		if st, ok := procfs.ReadStat(pid); ok && st.State == 'Z' && t.tree.hasProc(st.Ppid) {
			return true
		}
	}
	return false
}

// pgrpInTree reports whether process group g is the tree's: a live process
// of the tree is a member of it now, or its leader is a zombie of the tree.
// That a tree process once had the pid g says nothing: the pid may since
// have been given to a host process that leads a group of its own.
//
// A member makes the whole group the tree's: a process joins only a group
// of its own session (setpgid(2)), and every session a tree process is in
// was made by a tree process (the root's setsid at start, or a later one
// of the tree's), so every member is a process of the tree. The kernel
// does not give the number g to another process while it is the pgid of
// any process, zombies included, so the answer holds until the tree itself
// empties the group.
//
// Only the tree's own processes are looked at (getpgid(2) of each, leader
// first), never every process of the machine. A tracked process keeps its
// pid until the tracer has waited for it (a traced zombie cannot be reaped
// before), so getpgid names the right process.
func (t *tracer) pgrpInTree(g int) bool {
	if g <= 0 {
		return false
	}
	if t.tree.hasProc(g) {
		if pg, err := unix.Getpgid(g); err == nil && pg == g {
			return true // the leader, alive
		}
	}
	for tgid := range t.tree.procs {
		if pg, err := unix.Getpgid(tgid); err == nil && pg == g {
			return true // a member; the leader may be gone
		}
	}
	// Every member has exited. A leader that is a zombie of the tree (its
	// parent in the tree) keeps the group, in the tree's session: kill(2)
	// reaches only zombies, as Python's os.killpg of a child it started
	// with start_new_session and has not waited for yet does.
	if st, ok := procfs.ReadStat(g); ok && st.State == 'Z' && st.Pgrp == g && t.tree.hasProc(st.Ppid) {
		return true
	}
	return false
}

// pidGone reports whether no process or thread pid exists: the kernel
// answers ESRCH, and there is nothing to report.
func pidGone(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return errors.Is(err, os.ErrNotExist)
}

// pidfdPid finds the process that fd of task tid names as the target of
// pidfd_send_signal: a pidfd (its fdinfo has a Pid: line), or a /proc/<pid>
// directory, which the kernel takes as a pidfd too (5.1+).
//
// A non-zero errno fails the call: EBADF is what the kernel answers for an
// fd that is neither (nothing to report), ESRCH for a process that is gone
// (nothing happens); with why set, the fd names a process tracecell cannot
// put a pid on, and the call is denied, reported.
//
// A task cannot change its fd table under this: pidfd_send_signal runs with
// the tree frozen (freezes). The process named is bound to the fd: should it
// exit and its pid be reused, the kernel fails the call with ESRCH.
func pidfdPid(tid int, fd int32) (pid int, errno syscall.Errno, why string) {
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", tid, fd))
	if err != nil {
		return 0, syscall.EBADF, "" // not open
	}
	switch v := procfs.StatusInt(info, "Pid:", -2); {
	case v > 0:
		return v, 0, ""
	case v == -1:
		return 0, syscall.ESRCH, "" // the process has exited and been reaped (5.19+)
	case v == 0:
		return 0, syscall.EACCES, "the pidfd names a process outside tracecell's pid namespace"
	}
	return procDirPid(tid, fd, info)
}

// procDirPid is pidfdPid for an fd that is not a pidfd: the pid of a
// /proc/<pid> directory of the proc file system tracecell's /proc is. Text
// alone is not trusted: the fd's file must be on that proc file system (its
// type and device), be a directory, be named /proc/<pid> (not
// /proc/<pid>/task/<tid>, which the kernel refuses, nor another numbered
// directory of /proc), and its own stat file, read through the fd, must name
// the same pid. That read also fails once the process is gone.
func procDirPid(tid int, fd int32, info []byte) (int, syscall.Errno, string) {
	if flags, err := strconv.ParseUint(strings.TrimSpace(procfs.StatusField(info, "flags:")), 8, 64); err != nil ||
		flags&unix.O_PATH != 0 {
		return 0, syscall.EBADF, "" // the kernel takes no O_PATH fd
	}
	link := fmt.Sprintf("/proc/%d/fd/%d", tid, fd)
	var fs unix.Statfs_t
	if err := unix.Statfs(link, &fs); err != nil || fs.Type != unix.PROC_SUPER_MAGIC {
		return 0, syscall.EBADF, "" // not of /proc: not a pidfd to the kernel
	}
	var st, proc unix.Stat_t
	if err := unix.Stat(link, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, syscall.EBADF, ""
	}
	name, err := os.Readlink(link)
	if err != nil {
		return 0, syscall.EBADF, ""
	}
	if n, ok := strings.CutSuffix(name, " (deleted)"); ok {
		if _, ok := procDirName(n); ok {
			return 0, syscall.ESRCH, "" // the process is gone
		}
	}
	pid, ok := procDirName(name)
	if !ok {
		return 0, syscall.EBADF, "" // another directory of /proc
	}
	why := fmt.Sprintf("tracecell could not tell which process the fd of %s names", name)
	if err := unix.Stat("/proc", &proc); err != nil || proc.Dev != st.Dev {
		// Another proc file system: its pids may be another namespace's.
		return 0, syscall.EACCES, why
	}
	b, err := os.ReadFile(link + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, syscall.ESRCH, "" // the process is gone
	}
	if ps, ok := procfs.ParseStat(b); err != nil || !ok || ps.Pid != pid {
		return 0, syscall.EACCES, why
	}
	return pid, 0, ""
}

// procDirName parses a path /proc/<pid>.
func procDirName(p string) (int, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || rest[0] == '0' {
		return 0, false
	}
	pid, err := strconv.Atoi(rest)
	return pid, err == nil && pid > 0
}
