package tracer

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
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
	// once frozen, before any memory is read (mmSharedWhy); mmJudged once
	// it has been (judgeMM).
	mmShared string
	mmJudged bool
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
		t.page.put(c.slot)
		if allowed {
			// Every copyable call reads its path before it can be allowed.
			return fmt.Errorf("%s by pid %d: allowed without its path copied (tracecell bug)", c.name, tid)
		}
	}
	if len(c.copies) > 0 {
		if !allowed || f == nil || f.gone || t.tree.dying.Load() {
			t.page.dropCopies(c)
		} else if err := t.setCopies(c); err != nil {
			if err != unix.ESRCH {
				t.thaw()
				return err
			}
			return t.thawIfDue() // killed meanwhile: wait4 reports it
		}
	}
	if f == nil && allowed && c.spec.Handler == syscalls.HExec && c.tk.tid != c.tk.tgid && !t.cfg.NoFreeze {
		return t.runExec(c.tk) // execrun.go
	}
	if f == nil {
		if c.tk.bindIno != 0 || len(c.tk.pendingScratch) > 0 || c.tk.pendingMove != nil || c.tk.ptyPending || c.tk.futexExit != 0 {
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
	exe, argv, cut := t.tree.procInfo(c.tk.tgid)
	if c.HasOpenFlags {
		c.Flags = syscalls.FormatOpenFlags(c.OpenFlags)
	}
	ev := &report.Event{
		Time: time.Now().UTC(), Decision: report.Deny, Pid: c.tk.tgid, Tid: c.tk.tid,
		Exe: exe, Argv: argv, ArgvTruncated: cut, Program: programName(exe),
		Syscall: c.name, ABI: t.layout.Name, Nr: c.nr, Flags: c.Flags,
		Rule: d.Rule, Reason: d.Reason,
	}
	ev.KeepBytes()
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
		for i := range ev.Paths {
			if !utf8.ValidString(ev.Paths[i].Given) || !utf8.ValidString(ev.Paths[i].Resolved) || !utf8.ValidString(ev.Paths[i].Base) {
				// The report keeps the exact bytes beside the strings
				// (a red team's "\xff\xfe" read as U+FFFD twice).
				ev.Paths = slices.Clone(op.Paths)
				for j := range ev.Paths {
					ev.Paths[j].KeepBytes()
				}
				break
			}
		}
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
	t.rec.add(ev)
}

// programName is the short name that notices and summaries give a process.
// It is the base name of exe, what the kernel says the process runs
// (/proc/<pid>/exe), never of argv[0]: the program chooses that at exec
// (execv("/usr/bin/python3", ["sshd", ...]), `exec -a`), and the notices
// and the model's summaries would name whatever it chose (red team, round
// 44). "?" when exe could not be read; argv stays in the event.
func programName(exe string) string {
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
	case syscalls.HSocket: // listen
		return t.decodeListen(c)
	case syscalls.HMem:
		return t.decodeMem(c)
	}
	return &policy.Op{Kind: syscalls.KindForbidden, Syscall: c.name}
}

// flagsArg is the call's int flags argument (low 32 bits, as the kernel
// reads it), 0 when the call has none.
func (t *tracer) flagsArg(c *call) uint64 {
	if c.spec.FlagsArg < 0 {
		return 0
	}
	return uint64(uint32(t.regs.Arg(c.spec.FlagsArg)))
}

// openFails is kernelFails for an open of p (resolved at this stop, the
// policy letting the tree know what exists) with flags. The kernel's order
// (fs/namei.c, the same in 4.18's do_last and in open_last_lookups and
// do_open since 5.7):
//   - O_CREAT of a name written with a trailing slash ("dir/new/") fails
//     with EISDIR right after the parent's lookup, before the name is
//     looked up, so even with O_EXCL and whether the name exists or not.
//     A last component "." or ".." skips that test (handle_dots).
//   - O_CREAT|O_EXCL of a name that exists: EEXIST.
//   - O_CREAT (no O_EXCL) of an existing directory: EISDIR (do_open), and
//     so for a last component "." or "..", which is always one.
//   - An existing directory opened for writing (O_WRONLY, O_RDWR, or
//     O_TRUNC, which build_open_flags turns into MAY_WRITE): EISDIR from
//     may_open, before inode_permission.
//   - A name that does not exist, without O_CREAT: ENOENT.
//
// O_TMPFILE (a directory by design) and O_CREAT|O_DIRECTORY (EINVAL
// since 6.4, different before) are left to the denial.
func openFails(flags uint64, p0 *policy.Path) syscall.Errno {
	create := flags&unix.O_CREAT != 0
	excl := create && flags&unix.O_EXCL != 0
	switch {
	case flags&unix.O_TMPFILE == unix.O_TMPFILE, create && flags&unix.O_DIRECTORY != 0:
		return 0
	case create && trailingSlash(p0.Given):
		return syscall.EISDIR
	case excl && p0.Exists:
		if dotLast(p0.Given) {
			return 0 // 4.18: EISDIR (do_last's finish_open); 5.7 on: EEXIST
		}
		return syscall.EEXIST
	case create && p0.Exists && p0.IsDir:
		return syscall.EISDIR
	case !create && p0.Exists && p0.IsDir &&
		(flags&unix.O_ACCMODE == unix.O_WRONLY || flags&unix.O_ACCMODE == unix.O_RDWR || flags&unix.O_TRUNC != 0):
		return syscall.EISDIR
	case !create && !p0.Exists:
		return syscall.ENOENT
	}
	return 0
}

// trailingSlash reports whether path's last component is followed by a
// slash and is not "." or "..": the kernel's nd->last.name[nd->last.len]
// != 0 for a LAST_NORM component.
func trailingSlash(path string) bool {
	t := strings.TrimRight(path, "/")
	return len(t) < len(path) && t != "" && !dotLast(t)
}

// dotLast reports whether path's last component (trailing slashes aside)
// is "." or "..".
func dotLast(path string) bool {
	t := strings.TrimRight(path, "/")
	if i := strings.LastIndexByte(t, '/'); i >= 0 {
		t = t[i+1:]
	}
	return t == "." || t == ".."
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
		return openFails(c.OpenFlags, p0)
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
