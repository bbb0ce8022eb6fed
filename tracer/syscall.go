package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// call is the syscall a thread is stopped in.
type call struct {
	tk   *task
	nr   int
	name string
	spec *syscalls.Spec
	// Result is what the decode stage found besides the operation: its
	// outcome (decide, pass, fail, fail closed, limit), the flags for
	// reports, the signal, and Relookup: the kernel may look the call's
	// name up again after an interruptible sleep (an AF_UNIX connect or
	// send to a full queue), so a frozen run of it must never be left to
	// finish unfrozen (freeze.go).
	decode.Result
	// copying: the call runs with its path copied into path page slot
	// slot (argument copyArg) instead of a freeze (pathpage.go); copied
	// once the copy is written, copyFail when it could not be.
	copying, copied, copyFail bool
	slot, copyArg             int
	// copyUnsafe: the path's resolution is one a walk the kernel makes
	// while the tree runs on cannot rely on (uncopyable): the call must be
	// decided again, frozen.
	copyUnsafe bool
	// frozen: the call is decided with the tree frozen. fcopy: its checked
	// memory is copied into path page slots as it is read (copies;
	// pathpage.go, copyFrozen); uncopied when some could not be, spans
	// being every range read for the check (exitWritable).
	frozen, fcopy, uncopied bool
	noCopy                  string // why not, for the denial
	// mmShared: why a task of another process may share the mm, judged
	// once frozen, before any memory is read (mmSharedWhy).
	mmShared string
	// exitDeny: uncopied memory an exit could write (exitWritable); an
	// allowed call is denied so.
	exitDeny *policy.Decision
	copies   []argCopy
	spans    []span
}

// freezeCaller freezes the tree for tk's call (freeze.go). done says that
// the stop is over and err is seccompStop's answer: the freeze failed, or
// tk was killed while the tree was being frozen.
func (t *tracer) freezeCaller(tk *task) (f *freezer, done bool, err error) {
	f, err = t.freeze(tk)
	if err != nil {
		t.thaw()
		return nil, true, err
	}
	if f.gone {
		return nil, true, t.thawIfDue()
	}
	return f, false, nil
}

// release resumes c's task from its seccomp stop. With a freeze, an allowed
// call runs to its end before the tree is thawed; a denied one never runs,
// so the tree may be thawed at once. A copied call runs on its copy.
func (t *tracer) release(c *call, f *freezer, allowed bool) error {
	tid := c.tk.tid
	if c.copying {
		c.copying = false
		if allowed && c.copied {
			return t.runCopied(c)
		}
		t.putSlot(c.slot)
		if allowed {
			// Every copyable call reads its path before it can be allowed.
			return fmt.Errorf("%s by pid %d: allowed without its path copied (tracecell bug)", c.name, tid)
		}
	}
	if len(c.copies) > 0 {
		if !allowed || f == nil || f.gone || t.dying.Load() {
			t.dropCopies(c)
		} else if err := t.setCopies(c); err != nil {
			if err != unix.ESRCH {
				t.thaw()
				return err
			}
			return t.thawIfDue() // killed meanwhile: wait4 reports it
		}
	}
	if f == nil {
		if c.tk.bindIno != 0 || len(c.tk.pendingScratch) > 0 || c.tk.ptyPending || c.tk.futexExit != 0 {
			return t.resumeToExit(c.tk)
		}
		return t.resume(tid, 0)
	}
	if allowed {
		return t.runFrozen(f)
	}
	if err := t.resume(tid, 0); err != nil {
		return err
	}
	return t.thawIfDue()
}

// newEvent builds the report entry of a decision.
func (t *tracer) newEvent(c *call, op *policy.Op, d policy.Decision) *report.Event {
	exe, argv := t.procInfo(c.tk.tgid)
	if c.HasOpenFlags {
		c.Flags = syscalls.FormatOpenFlags(c.OpenFlags)
	}
	ev := &report.Event{
		Time: time.Now().UTC(), Decision: report.Deny, Pid: c.tk.tgid, Tid: c.tk.tid,
		Exe: exe, Argv: argv, Program: programName(exe, argv),
		Syscall: c.name, ABI: t.layout.Name, Nr: c.nr, Flags: c.Flags,
		Rule: d.Rule, Reason: d.Reason,
	}
	if d.Allow {
		ev.Decision = report.Allow
	} else {
		errno := d.Errno
		if errno == 0 {
			errno = syscall.EACCES
		}
		ev.Errno = errnoName(errno)
	}
	if op != nil {
		ev.Kind = op.Kind
		ev.Paths = op.Paths
		ev.Family, ev.Address, ev.Port, ev.Abstract = op.Family, op.Addr, op.Port, op.Abstract
		if op.Kind == syscalls.KindSignal || op.Kind == syscalls.KindProcess {
			p := op.TargetPid
			ev.TargetPid = &p
			ev.TargetInTree = op.TargetInTree
		}
	}
	if c.Sig > 0 {
		ev.Signal = syscalls.SignalName(c.Sig)
	}
	return ev
}

// record counts an event and hands it to the notice printer, the report and
// the trace. allowed is true for audits and traced allows.
func (t *tracer) record(ev *report.Event, allowed bool) {
	switch ev.Decision {
	case report.Deny:
		t.counts.Denied++
	case report.Audit:
		t.counts.Audited++
	}
	if ev.Decision != report.Allow {
		max := t.cfg.MaxDenials
		if max == 0 {
			max = 10000
		}
		if len(t.denials) < max {
			t.denials = append(t.denials, *ev)
		} else {
			t.dropped++
		}
	}
	if t.cfg.OnEvent != nil {
		t.cfg.OnEvent(ev)
	}
}

func programName(exe string, argv []string) string {
	if len(argv) > 0 && argv[0] != "" {
		return filepath.Base(argv[0])
	}
	if exe != "" {
		return filepath.Base(exe)
	}
	return "?"
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EACCES:
		return "EACCES"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EAGAIN:
		return "EAGAIN"
	case syscall.ENOSYS:
		return "ENOSYS"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return strconv.Itoa(int(e))
}

// decode turns the stopped call into a policy operation. It sets c.Out
// when the call must fail without a decision or is harmless. The families
// of package decode are decoded there; the others here, until they move.
func (t *tracer) decode(c *call) *policy.Op {
	if op, ok := t.decoder(c).Decode(); ok {
		return op
	}
	switch c.spec.Handler {
	case syscalls.HSocket:
		return t.decodeSocket(c)
	case syscalls.HChdir:
		return t.decodeChdir(c)
	case syscalls.HMem:
		return t.decodeMem(c)
	case syscalls.HFutex:
		return t.decodeFutex(c)
	}
	return &policy.Op{Kind: syscalls.KindForbidden, Syscall: c.name}
}

// decodeChdir passes chdir and fchdir: a cwd is no permission, so they are
// never denied, and whether they fail is the kernel's business. Every
// remembered cwd is forgotten (a thread sharing the caller's cwd through
// CLONE_FS moves with it); the call freezes the tree (freezes), so no other
// check runs before it has finished. The target is resolved only for
// --trace.
func (t *tracer) decodeChdir(c *call) *policy.Op {
	var op *policy.Op
	if t.cfg.TraceAll {
		var p policy.Path
		if c.name == "fchdir" {
			p, _ = t.decoder(c).FdPath(policy.Path{Role: "path"}, t.regs.Int32Arg(c.spec.FdArg))
		} else {
			p, _ = t.decoder(c).PathArg(c.spec.Paths[0], true, false)
		}
		op = &policy.Op{Kind: syscalls.KindChdir, Syscall: c.name, Paths: []policy.Path{p}}
		c.Out = decode.Outcome{}
	}
	t.forgetCwds()
	c.Out = decode.PassOutcome()
	return op
}

// base returns the directory a relative path of tk starts from: the dirfd's
// target, read now, or the thread's cwd. The cwd is read from
// /proc/<tid>/cwd and remembered while the walk cache may be used
// (dirCache): every way the tree has to move a cwd is a call the tracer
// sees first (chdir and fchdir, also a sibling's sharing the cwd through
// CLONE_FS; a rename or rmdir of a directory; an exec) and makes it forget
// every remembered cwd (forgetCwds) before that call runs, with the tree
// frozen. unshare, setns, chroot and pivot_root are denied to the tree.
func (t *tracer) base(c *call, dirfd int32, hasDirfd bool) (string, error) {
	if !hasDirfd || dirfd == unix.AT_FDCWD {
		cache := t.dirCache() != nil
		d := c.tk.cwd
		if !cache || d == "" {
			link := fmt.Sprintf("/proc/%d/cwd", c.tk.tid)
			var err error
			if d, err = readBase(link); err != nil {
				return "", err
			}
			if cache {
				c.tk.cwd = d
			}
		}
		return d, nil
	}
	if dirfd < 0 {
		return "", syscall.EBADF
	}
	d, err := readBase(fmt.Sprintf("/proc/%d/fd/%d", c.tk.tid, dirfd))
	if errors.Is(err, syscall.ENOENT) {
		err = syscall.EBADF // no such fd
	}
	return d, err
}

// readBase reads link, a /proc magic link to the directory a relative walk
// starts from (a cwd or a dirfd), and checks that its text names that very
// directory by a path without symlinks, as the walk assumes of its start
// (pathres.Resolve; the walk cache records what it finds under that name).
// The text need not: an O_PATH fd of a symlink reads as the symlink's own
// path, an unlinked directory as its old path plus " (deleted)", a name the
// tree may then give to a symlink of its own, and a directory in another
// mount namespace (reached through /proc/<pid>/root of a process there) as
// its path in that namespace, where other file systems are mounted. So the
// object the link leads to (stat follows it) must be a directory (else the
// kernel fails the lookup with ENOTDIR), and lstat of the text must find
// that same directory on the same mount (pathres.CheckLink). With the tree
// frozen nothing can change in between.
func readBase(link string) (string, error) {
	text, err := os.Readlink(link)
	if errors.Is(err, syscall.ENAMETOOLONG) {
		// A directory PATH_MAX bytes or more deep: /proc cannot show its
		// name (d_path into one page), the kernel walks from it all the
		// same. Name it by going up from it (pathres.DirPath); the checks
		// below hold the name to the object as for any text.
		if text, err = pathres.DirPath(link); err != nil {
			return "", &decode.BaseError{Link: link, Text: "", Why: "has a path too long for /proc to show, and tracecell could not name it otherwise: " + err.Error()}
		}
	}
	if err != nil {
		return "", err
	}
	obj, err := pathres.StatID(link, true)
	if err != nil {
		return "", os.NewSyscallError("stat "+link, err)
	}
	if !obj.IsDir() {
		return "", syscall.ENOTDIR
	}
	if _, err := pathres.CheckLink(link, text, obj); err != nil {
		var le *pathres.LinkError
		if errors.As(err, &le) {
			return "", &decode.BaseError{Link: link, Text: text, Why: le.Why}
		}
		return "", &decode.BaseError{Link: link, Text: text, Why: err.Error()}
	}
	return text, nil
}

// resolvePath is pathres.ResolveCached; tests replace it to reach the
// fail-closed path.
var resolvePath = pathres.ResolveCached

// dirCache is the cache of directories already walked, for this check, or
// nil when it must not be used: in audit and --no-freeze runs (t.dirs is
// nil, see newDirCache), and while a call left to finish unfrozen (a blocked
// call, see freeze.go) may still rename or remove a directory behind the
// tracer's back; after such a call the cache starts over. Otherwise every
// rename and rmdir empties it before it runs (movesDirs), and with the tree
// frozen no other check can come in between.
func (t *tracer) dirCache() *pathres.DirCache {
	if t.dirs == nil {
		return nil
	}
	if t.inFlightN > 0 {
		t.forgetDirs()
		return nil
	}
	return t.dirs
}

// forgetDirs empties the walk cache and forgets every remembered cwd.
func (t *tracer) forgetDirs() {
	if t.dirs == nil {
		return
	}
	t.dirs.Reset()
	t.forgetCwds()
}

// forgetCwds forgets every task's remembered cwd (base).
func (t *tracer) forgetCwds() {
	for _, tk := range t.tasks {
		tk.cwd = ""
	}
}

// movesDirs reports whether op may rename or remove a directory: a rename
// of anything, or a delete whose target is a directory (rmdir,
// unlinkat(AT_REMOVEDIR); an unlink of a directory fails).
func movesDirs(op *policy.Op) bool {
	switch op.Kind {
	case syscalls.KindRename:
		return true
	case syscalls.KindDelete:
		for _, p := range op.Paths {
			if p.IsDir {
				return true
			}
		}
	}
	return false
}

// flagsArg is the call's int flags argument (low 32 bits, as the kernel
// reads it), 0 when the call has none.
func (t *tracer) flagsArg(c *call) uint64 {
	if c.spec.FlagsArg < 0 {
		return 0
	}
	return uint64(uint32(t.regs.Arg(c.spec.FlagsArg)))
}

func errnoOf(err error, def syscall.Errno) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return def
}

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
	if t.tasks[pid] != nil || t.procs[pid] != nil {
		return true
	}
	// An exited tree process its parent has not reaped yet (a zombie):
	// signalling it does nothing, and multiprocessing does exactly that
	// when it terminates a pool. The parent must be in the tree: a child
	// of a tree process is one (traced from its fork), whatever pid it
	// has; t.ever only spares a read for pids the tree never had.
	if t.ever[pid] {
		if st, ok := readProcStat(pid); ok && st.state == 'Z' && t.procs[st.ppid] != nil {
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
	if t.procs[g] != nil {
		if pg, err := unix.Getpgid(g); err == nil && pg == g {
			return true // the leader, alive
		}
	}
	for tgid := range t.procs {
		if pg, err := unix.Getpgid(tgid); err == nil && pg == g {
			return true // a member; the leader may be gone
		}
	}
	// Every member has exited. A leader that is a zombie of the tree (its
	// parent in the tree) keeps the group, in the tree's session: kill(2)
	// reaches only zombies, as Python's os.killpg of a child it started
	// with start_new_session and has not waited for yet does.
	if st, ok := readProcStat(g); ok && st.state == 'Z' && st.pgrp == g && t.procs[st.ppid] != nil {
		return true
	}
	return false
}

// procStat holds the fields of /proc/<pid>/stat the tracer uses.
type procStat struct {
	pid   int
	state byte
	ppid  int
	pgrp  int
}

// readProcStat reads /proc/<pid>/stat (fields 1, 3, 4 and 5).
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	return parseProcStat(b)
}

// parseProcStat parses the text of a /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may hold spaces and parentheses itself:
// the fields after it start after the last ')'.
func parseProcStat(b []byte) (procStat, bool) {
	var st procStat
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return st, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return st, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return st, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return st, false
	}
	return procStat{pid: pid, state: f[0][0], ppid: ppid, pgrp: pgrp}, true
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
	switch v := parseStatusInt(info, "Pid:", -2); {
	case v > 0:
		return v, 0, ""
	case v == -1:
		return 0, syscall.ESRCH, "" // the process has exited and been reaped (5.19+)
	case v == 0:
		return 0, syscall.EACCES, "the pidfd names a process outside tracecell's pid namespace, so the call is denied to be safe"
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
	if flags, err := strconv.ParseUint(strings.TrimSpace(statusField(info, "flags:")), 8, 64); err != nil ||
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
	why := fmt.Sprintf("tracecell could not tell which process the fd of %s names, so the call is denied to be safe", name)
	if err := unix.Stat("/proc", &proc); err != nil || proc.Dev != st.Dev {
		// Another proc file system: its pids may be another namespace's.
		return 0, syscall.EACCES, why
	}
	b, err := os.ReadFile(link + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, syscall.ESRCH, "" // the process is gone
	}
	if ps, ok := parseProcStat(b); err != nil || !ok || ps.pid != pid {
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

// statusField returns the rest of the line of b that starts with key.
func statusField(b []byte, key string) string {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			return string(rest)
		}
	}
	return ""
}

// sockaddr families.
const (
	afUnspec  = 0
	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16
)

// decodeSocket handles connect, bind, sendto, sendmsg and sendmmsg.
func (t *tracer) decodeSocket(c *call) *policy.Op {
	switch c.name {
	case "listen":
		return t.decodeListen(c)
	case "setsockopt":
		level, name := t.regs.Int32Arg(1), t.regs.Int32Arg(2)
		if !syscalls.SourceRoute(level, name, false) || t.regs.Arg(4) == 0 {
			c.Out = decode.PassOutcome() // another level's option, or options cleared
			return nil
		}
		return sourceRouteOp(c, level)
	}
	kind := syscalls.KindConnect
	if c.name == "bind" {
		kind = syscalls.KindBind
	}
	type dest struct {
		ptr, n    uint64 // the sockaddr; ptr 0: none (a connected socket, checked at connect)
		arg       int    // the argument holding ptr (copied when frozen), -1: in a msghdr
		raw       []byte // the sockaddr's bytes, read already (a msghdr's name)
		rewritten string // why the kernel will not read what is checked (readMsgs)
	}
	var dests []dest
	switch c.name {
	case "connect", "bind":
		dests = append(dests, dest{ptr: t.regs.Arg(1), n: uint64(uint32(t.regs.Arg(2))), arg: 1})
	case "sendto":
		dests = append(dests, dest{ptr: t.regs.Arg(4), n: uint64(uint32(t.regs.Arg(5))), arg: 4})
	case "sendmsg", "sendmmsg":
		msgs, bad, why, err := t.readMsgs(c)
		if err != nil {
			c.Out = decode.KernelFailsWith(errnoOf(err, syscall.EFAULT))
			return nil
		}
		if c.name == "sendmsg" && c.frozen {
			// The kernel reads the msghdr, the name and the control data
			// from a copy of what is checked here (pathpage.go).
			m := msgs[0]
			t.copyFrozen(c, 1, func(addr uint64) []byte { return msgCopy(m.hdr, m.nameb, m.ctlb, addr) }, m.read...)
		}
		if c.name == "sendmmsg" && bad < 0 && c.frozen {
			bad, why = t.exitRewritten(c, msgs)
		}
		for i, m := range msgs {
			if i == bad {
				// The kernel overwrites this entry before it reads it:
				// nothing decoded from it holds. Denied (policy
				// RuleKernelRewritten) with what it looked like.
				dests = append(dests[:0], dest{ptr: m.name, n: m.namelen, arg: -1, raw: m.nameb, rewritten: why})
				break
			}
			if m.sr {
				return sourceRouteOp(c, m.srLevel)
			}
			dests = append(dests, dest{ptr: m.name, n: m.namelen, arg: -1, raw: m.nameb})
		}
	}
	var ops []*policy.Op
	from := "-" // the sending socket's local address, looked up once
	for _, a := range dests {
		var op *policy.Op
		if a.ptr != 0 {
			op = t.sockaddrOp(c, kind, uintptr(a.ptr), int(a.n), a.arg, a.raw)
		}
		if a.rewritten != "" {
			c.Out, c.Relookup = decode.Outcome{}, false
			if op == nil {
				op = &policy.Op{Kind: kind, Syscall: c.name}
			}
			op.Rewritten = a.rewritten
			return op
		}
		if c.Out.Fails() {
			return nil
		}
		if op == nil {
			continue
		}
		if kind == syscalls.KindConnect && c.name != "connect" && (op.Family == "inet" || op.Family == "inet6") && t.loopback {
			// A datagram from an unbound socket binds it to every
			// interface (policy.decideFrom).
			if from == "-" {
				from = t.sendFrom(c, t.regs.Int32Arg(0))
			}
			op.From = from
		}
		ops = append(ops, op)
	}
	if len(ops) > 0 {
		// The policy picks the address that decides the call (decodeOp).
		c.Ops = ops
		return ops[0]
	}
	c.Out = decode.PassOutcome()
	return &policy.Op{Kind: kind, Syscall: c.name}
}

// sourceRouteOp is the check of IP options or an IPv6 routing header set on
// a socket or sent with a datagram (syscalls.SourceRoute): the kernel then
// sends the packet to the first hop they name, whatever the destination
// address the policy saw.
func sourceRouteOp(c *call, level int32) *policy.Op {
	op := &policy.Op{Kind: syscalls.KindConnect, Syscall: c.name, Family: "source-route", Addr: "IP options"}
	if level == syscalls.SolIPv6 {
		op.Addr = "IPv6 routing header"
	}
	return op
}

// sockaddrOp decodes one socket address, n bytes at addr; raw, when not
// nil, are those bytes read already (a msghdr's name, copied with it).
// Otherwise they are read here and, for a frozen call, copied into a path
// page slot for argument arg, which the kernel then reads instead (copy and
// freeze, pathpage.go). nil means nothing to check.
func (t *tracer) sockaddrOp(c *call, kind syscalls.Kind, addr uintptr, n int, arg int, raw []byte) *policy.Op {
	if n < 2 {
		c.Out = decode.KernelFailsWith(syscall.EINVAL)
		return nil
	}
	if n > 128 { // sizeof(struct sockaddr_storage)
		n = 128
	}
	b := raw
	if b == nil {
		var err error
		if b, err = t.mem.readBytes(c.tk.tid, addr, n); err != nil {
			c.Out = decode.KernelFailsWith(syscall.EFAULT)
			return nil
		}
		if arg >= 0 && c.frozen {
			t.copyFrozen(c, arg, func(uint64) []byte { return b }, mkSpan(uint64(addr), uint64(n)))
		}
	}
	if len(b) < n {
		c.Out = decode.KernelFailsWith(syscall.EFAULT)
		return nil
	}
	fam := int(binary.LittleEndian.Uint16(b))
	op := &policy.Op{Kind: kind, Syscall: c.name}
	switch fam {
	case afUnspec:
		if c.name == "connect" {
			return nil // connect(AF_UNSPEC) dissolves an association
		}
		// bind(AF_UNSPEC) binds INADDR_ANY: a public port; a send to
		// AF_UNSPEC goes where the same bytes as a sockaddr_in say
		// (policy.decideNet). Decode them so for the report.
		op.Family = "unspec"
		if kind != syscalls.KindBind && n >= 8 {
			op.Port = int(binary.BigEndian.Uint16(b[2:]))
			op.Addr = net.IP(b[4:8]).String()
		}
	case afInet:
		if n < 8 {
			c.Out = decode.KernelFailsWith(syscall.EINVAL)
			return nil
		}
		op.Family = "inet"
		op.Port = int(binary.BigEndian.Uint16(b[2:]))
		op.Addr = net.IP(b[4:8]).String()
	case afInet6:
		if n < 24 {
			c.Out = decode.KernelFailsWith(syscall.EINVAL)
			return nil
		}
		op.Family = "inet6"
		op.Port = int(binary.BigEndian.Uint16(b[2:]))
		op.Addr = net.IP(b[8:24]).String()
	case afUnix:
		op.Family = "unix"
		sp := b[2:n]
		if len(sp) == 0 {
			return nil // unnamed: autobind
		}
		if kind != syscalls.KindBind {
			// unix_stream_connect and unix_dgram_sendmsg wait for room
			// in the peer's queue (unix_wait_for_peer, interruptible),
			// then "goto restart": the name is resolved again.
			c.Relookup = true
		}
		if sp[0] == 0 {
			op.Abstract = true
			op.Addr = "@" + strings.TrimRight(string(sp[1:]), "\x00")
			return op
		}
		if i := indexNul(sp); i >= 0 {
			sp = sp[:i]
		}
		op.Addr = string(sp)
		// connect follows a symlink to the socket; bind creates the
		// last component and does not.
		p, ok := t.decoder(c).PathArgBytes(sp, kind != syscalls.KindBind)
		if !ok {
			return nil
		}
		p.Role = "socket"
		op.Paths = []policy.Path{p}
	case afNetlink:
		// struct sockaddr_nl (linux/netlink.h): nl_family, nl_pad, __u32
		// nl_pid (the port: 0 is the kernel), __u32 nl_groups (multicast
		// groups). netlink_connect and netlink_sendmsg take 12 bytes or
		// fail EINVAL.
		op.Family = "netlink"
		if n < 12 {
			c.Out = decode.KernelFailsWith(syscall.EINVAL)
			return nil
		}
		op.Port = int(binary.LittleEndian.Uint32(b[4:]))
		op.Addr = "groups " + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[8:])), 16)
	default:
		op.Family = "family(" + strconv.Itoa(fam) + ")"
	}
	return op
}

func indexNul(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return -1
}

// kernelFails returns the errno the kernel fails a denied file system call
// with before it looks at permissions (0 when it would not fail it, or when
// saying so would tell the tree more than it may know): a create of a name
// that exists gets EEXIST (filename_create and open's O_CREAT|O_EXCL look
// the name up before any permission or read-only check: mkdir of /etc is
// EEXIST for everyone), and a call on a name that does not exist gets
// ENOENT (unlink, rmdir, rename's and link's source, chmod, chown,
// setxattr, truncate, utimes, an open without O_CREAT). shm_unlink of a
// name that is gone, which multiprocessing's resource tracker does at
// exit, so gets ENOENT as on a bare system.
//
// Only path arguments resolved at this stop count (not an fd, not a /proc
// magic link), and only where the policy lets the tree know what exists
// (Policy.MayKnow: never a deny-read path; stat would tell the rest). The
// tracer returns the errno itself and the call never runs: a racing task
// that creates or removes the name in between cannot turn it into a real
// change.
func (t *tracer) kernelFails(c *call, op *policy.Op) syscall.Errno {
	if op == nil || !op.Kind.ModifiesFS() || len(op.Paths) == 0 {
		return 0
	}
	h := c.spec.Handler
	if h != syscalls.HPath && h != syscalls.HOpen {
		return 0
	}
	for i := range op.Paths {
		p := &op.Paths[i]
		if p.Given == "" || p.Special != "" || p.Deleted || !t.pol.MayKnow(p.Resolved) {
			// A file with no name, reached through a /proc magic link:
			// the kernel jumps to it (nd_jump_link) and would not fail
			// with ENOENT; a denial is reported (F1).
			return 0
		}
	}
	p0 := &op.Paths[0]
	if h == syscalls.HOpen {
		flags := c.OpenFlags
		switch {
		case flags&unix.O_TMPFILE == unix.O_TMPFILE:
			return 0
		case flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL && p0.Exists:
			return syscall.EEXIST
		case flags&unix.O_CREAT == 0 && !p0.Exists:
			return syscall.ENOENT
		}
		return 0
	}
	switch op.Kind {
	case syscalls.KindCreate:
		if p0.Exists {
			return syscall.EEXIST
		}
	case syscalls.KindDelete, syscalls.KindChmod, syscalls.KindChown, syscalls.KindXattr, syscalls.KindWrite:
		if !p0.Exists {
			return syscall.ENOENT
		}
	case syscalls.KindRename:
		if !p0.Exists {
			return syscall.ENOENT
		}
	case syscalls.KindLink:
		if !p0.Exists {
			return syscall.ENOENT
		}
		if len(op.Paths) > 1 && op.Paths[1].Exists {
			return syscall.EEXIST
		}
	}
	return 0
}
