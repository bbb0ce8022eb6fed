package decode

import (
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// open handles open, openat and creat. The kind comes from the flags:
// any of O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND|__O_TMPFILE is a write
// (O_RDONLY|O_TRUNC truncates!); a create when the file does not exist yet.
func (d *Decoder) open() *policy.Op {
	pa := d.Spec.Paths[0]
	flags := d.flagsArg()
	if d.Spec.FlagsArg < 0 { // creat(2)
		flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	}
	d.OpenFlags, d.HasOpenFlags = flags, true
	if flags&unix.O_PATH != 0 && flags&syscalls.OTmpBit == 0 {
		// O_PATH keeps only O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC: no
		// access mode, no O_CREAT, no O_TRUNC (build_open_flags in 4.18,
		// build_open_how since 5.6), so the open reads. Not with
		// __O_TMPFILE, which 4.18 looks at first (an unnamed file). The
		// flags as given stay in the report (red team, round 45: an
		// O_PATH|O_CREAT of a host directory was refused).
		flags &= unix.O_PATH | unix.O_CLOEXEC | d.Table.Open.Directory | d.Table.Open.NoFollow
	}
	// O_TMPFILE and O_NOFOLLOW differ between the ABIs (Table.Open).
	tmp := syscalls.OTmpBit | d.Table.Open.Directory
	tmpfile := flags&tmp == tmp
	follow := d.Table.OpenFollows(flags)
	p, ok := d.PathArg(pa, follow || tmpfile, false)
	if !ok {
		return nil
	}
	if p.Exists && p.Special == "" && p.Resolved == policy.DevTTY && flags&unix.O_PATH == 0 && !tmpfile {
		// /dev/tty opens the caller's controlling terminal: decided as
		// that terminal (tracer/ctty.go). The tracer runs the open
		// frozen (uncopyable), so that no task of the tree can change
		// that terminal before the kernel's open.
		tm := d.Env.Ctty()
		if tm.None {
			d.Out = KernelFailsWith(syscall.ENXIO) // tty_open_current_tty
			return nil
		}
		setTerminal(&p, tm)
	}
	op := newOp(0, d.Name, p)
	if flags&unix.O_CREAT != 0 || tmpfile {
		// The mode of the file it may create: set-id bits are checked
		// whether or not the file exists now (another task could remove
		// it before the kernel's lookup: a path copied to the path page
		// runs without a freeze).
		d.PermArg(op)
	}
	switch {
	case !syscalls.OpenWrites(flags):
		op.Kind = syscalls.KindRead
	case tmpfile:
		// An unnamed file in directory p: it can only become visible by
		// linkat, which is checked; creating it is a create in p.
		op.Kind = syscalls.KindCreate
	case flags&unix.O_CREAT != 0 && !p.Exists:
		op.Kind = syscalls.KindCreate
	default:
		op.Kind = syscalls.KindWrite
	}
	return op
}

// paths handles the calls whose arguments are paths (mkdir, unlink,
// rename, link, chmod, utimensat, setxattr, ...).
func (d *Decoder) paths() *policy.Op {
	flags := d.flagsArg()
	if d.Spec.FlagsArg >= 0 {
		d.Flags = syscalls.FormatAtFlags(flags)
		if strings.HasPrefix(d.Name, "renameat") {
			d.Flags = syscalls.FormatRenameFlags(flags)
		}
	}
	atEmpty := d.Spec.FlagsArg >= 0 && flags&unix.AT_EMPTY_PATH != 0 && !strings.HasPrefix(d.Name, "rename")
	op := newOp(d.Spec.Kind, d.Name)
	for _, pa := range d.Spec.Paths {
		follow := true
		switch pa.Follow {
		case syscalls.FollowNever:
			follow = false
		case syscalls.FollowUnlessAtNoFollow:
			follow = flags&unix.AT_SYMLINK_NOFOLLOW == 0
		case syscalls.FollowIfAtFollow:
			follow = flags&unix.AT_SYMLINK_FOLLOW != 0
		}
		if d.Name == "inotify_add_watch" && uint32(d.Regs.Arg(2))&unix.IN_DONT_FOLLOW != 0 {
			follow = false
		}
		p, ok := d.PathArg(pa, follow, atEmpty)
		if !ok {
			return nil
		}
		op.Paths = append(op.Paths, p)
	}
	if d.Spec.ModeArg >= 0 {
		switch mode := uint32(d.Regs.Arg(d.Spec.ModeArg)); mode & unix.S_IFMT {
		case unix.S_IFCHR, unix.S_IFBLK:
			// A device node gives whoever opens it the device itself: a
			// block device node of the host's disk in the sandbox is a
			// raw write to every file. Only a privileged tree can make
			// one (CAP_MKNOD); never allowed.
			d.Flags = "S_IFCHR"
			if mode&unix.S_IFMT == unix.S_IFBLK {
				d.Flags = "S_IFBLK"
			}
			op.Kind = syscalls.KindForbidden
		}
	}
	d.PermArg(op)
	if !d.xattrName(op) {
		return nil
	}
	// mkdir/mknod/symlink of an existing entry fail with EEXIST; creating
	// counts as a create either way.
	return op
}

// PermArg records the set-id bits of the call's mode argument
// (Spec.PermArg) in op, and the mode in the report's flags when it has any.
func (d *Decoder) PermArg(op *policy.Op) {
	if d.Spec.PermArg < 0 {
		return
	}
	mode := uint32(d.Regs.Arg(d.Spec.PermArg)) // a umode_t: the kernel keeps the low 16 bits
	op.SetID = mode & (policy.SetUID | policy.SetGID)
	if op.SetID != 0 && !d.HasOpenFlags { // an open's flags are formatted with its event
		m := fmt.Sprintf("mode=%#o", mode&0o7777)
		if d.Flags != "" {
			m = d.Flags + " " + m
		}
		d.Flags = m
	}
}

// xattrName records the attribute name a setxattr sets (Spec.NameArg). It
// returns false, with Out set, when the name cannot be read: the kernel
// fails the call with EFAULT (or ERANGE for a name too long) before
// touching anything.
func (d *Decoder) xattrName(op *policy.Op) bool {
	if d.Spec.NameArg < 0 {
		return true
	}
	// Decided on: run frozen on a copy (ReadArgString).
	name, err := d.Env.ReadArgString(d.Spec.NameArg, uintptr(d.Regs.Arg(d.Spec.NameArg)))
	if err != nil {
		d.Out = KernelFailsWith(errnoOf(err, syscall.EFAULT))
		return false
	}
	op.Xattr = string(name)
	if d.Flags == "" {
		d.Flags = "name=" + op.Xattr
	}
	return true
}

// FdMeta handles calls that change metadata through an fd (fchmod,
// fchown, fsetxattr, fremovexattr): they work on read-only fds, so the open
// check does not cover them. ioctl and fcntl commands decided on their fd
// come here too, with their kind.
func (d *Decoder) FdMeta(fdArg int, kind syscalls.Kind) *policy.Op {
	p, ok := d.FdArgPath(d.Regs.Int32Arg(fdArg))
	if !ok {
		return nil
	}
	op := newOp(kind, d.Name, p)
	if d.Spec.Handler == syscalls.HFdMeta {
		d.PermArg(op)
		if !d.xattrName(op) {
			return nil
		}
	}
	return op
}

// exec handles execve and execveat.
func (d *Decoder) exec() *policy.Op {
	pa := d.Spec.Paths[0]
	flags := d.flagsArg()
	if d.Spec.FlagsArg >= 0 {
		d.Flags = syscalls.FormatAtFlags(flags)
	}
	follow := flags&unix.AT_SYMLINK_NOFOLLOW == 0
	p, ok := d.PathArg(pa, follow, flags&unix.AT_EMPTY_PATH != 0)
	if !ok {
		return nil
	}
	p.Role = "program"
	if p.Deleted {
		// A file with no name any more, reached through its fd
		// (execveat(fd, "", AT_EMPTY_PATH), /proc/self/fd/N): a memfd
		// or an unlinked file. The kernel runs it; no --allow-exec can
		// name it, so it is denied like any other program not allowed,
		// and reported.
		return &policy.Op{Kind: syscalls.KindExec, Syscall: d.Name, Paths: []policy.Path{p}}
	}
	if !p.Exists {
		// execvp searching PATH: the kernel answers ENOENT, nothing to report.
		d.Out = KernelFailsWith(syscall.ENOENT)
		return nil
	}
	_, initial := d.Env.InitialExec()
	if d.Env.ChainExec(p.Resolved) {
		// The root's first exec after the initial one is the start
		// chain's or nothing: one chance, whatever it execs.
		initial = true
	}
	return &policy.Op{Kind: syscalls.KindExec, Syscall: d.Name, Paths: []policy.Path{p}, Initial: initial}
}

// clone passes a new thread or process, but for one over the tree's
// process limit (--max-procs) and a clone flag that leaves the sandbox
// (syscalls.CloneForbiddenMask: namespaces).
func (d *Decoder) clone() *policy.Op {
	var flags uint64
	if d.Name == "clone" {
		flags = d.Regs.Arg(0)
		d.Flags = syscalls.FormatCloneFlags(flags)
		if flags&syscalls.CloneForbiddenMask != 0 {
			return &policy.Op{Kind: syscalls.KindForbidden, Syscall: d.Name}
		}
	}
	if n, max := d.Env.Procs(); flags&unix.CLONE_THREAD == 0 && max > 0 && n >= max {
		d.Out = LimitWith(policy.Decision{Rule: policy.RuleMaxProcs, Errno: syscall.EAGAIN,
			Reason: fmt.Sprintf("the tree already has %d processes (--max-procs %d)", n, max)})
		return &policy.Op{Kind: syscalls.KindProcess, Syscall: d.Name}
	}
	d.Out = PassOutcome()
	return nil
}

// procMem handles process_vm_readv (a process target) and
// process_vm_writev (forbidden).
func (d *Decoder) procMem() *policy.Op {
	if d.Name == "process_vm_writev" {
		return &policy.Op{Kind: syscalls.KindForbidden, Syscall: d.Name}
	}
	pid := int(d.Regs.Int32Arg(0))
	return &policy.Op{Kind: syscalls.KindProcess, Syscall: d.Name, TargetPid: pid, TargetInTree: d.Env.PidInTree(pid)}
}

// schedCore decides prctl(PR_SCHED_CORE, op, pid, type, ...) by the
// process it names: pid 0 is the caller (its thread group, or its process
// group, which lies in the tree's own session); another must be the
// tree's. PR_SCHED_CORE_GET only reads a cookie and passes.
func (d *Decoder) schedCore() *policy.Op {
	if uint32(d.Regs.Arg(1)) == syscalls.PrSchedCoreGet {
		d.Out = PassOutcome()
		return nil
	}
	pid := int(d.Regs.Int32Arg(2))
	d.Flags = "PR_SCHED_CORE"
	return &policy.Op{Kind: syscalls.KindProcess, Syscall: d.Name, TargetPid: pid, TargetInTree: pid == 0 || d.Env.PidInTree(pid)}
}

// forbidden handles the calls never allowed; the report names what they
// name.
func (d *Decoder) forbidden() *policy.Op {
	switch d.Name {
	case "seccomp":
		d.Flags = "SECCOMP_FILTER_FLAG_NEW_LISTENER"
	case "prctl":
		if uint32(d.Regs.Arg(0)) == syscalls.PrSchedCore {
			return d.schedCore()
		}
		if uint32(d.Regs.Arg(0)) == syscalls.PrSetDumpable {
			if d.Regs.Arg(1) == 1 { // SUID_DUMP_USER: dumpable again
				d.Out = PassOutcome()
				return nil
			}
			d.Flags = "PR_SET_DUMPABLE"
			return &policy.Op{Kind: syscalls.KindForbidden, Syscall: d.Name, Option: d.Flags}
		}
		if uint32(d.Regs.Arg(0)) != syscalls.PrSetMM {
			// Not ours to deny: a filter of the program's own
			// returned SECCOMP_RET_TRACE for it.
			d.Out = PassOutcome()
			return nil
		}
		d.Flags = "PR_SET_MM"
	}
	op := &policy.Op{Kind: syscalls.KindForbidden, Syscall: d.Name}
	if d.Name == "prctl" {
		op.Option = d.Flags
	}
	if d.Spec.FdArg >= 0 {
		// mq_timedsend and the like: the report names the queue the
		// descriptor is (a host queue, /dev/mqueue/NAME). Denied
		// whatever the fd is.
		if p, ok := d.FdArgPath(d.Regs.Int32Arg(d.Spec.FdArg)); ok {
			op.Paths = []policy.Path{p}
		}
		d.Out = Outcome{}
	}
	return op
}

// chdir passes chdir and fchdir: a cwd is no permission, so they are
// never denied, and whether they fail is the kernel's business. Every
// remembered cwd is forgotten (a thread sharing the caller's cwd through
// CLONE_FS moves with it: ForgetCwds); the call freezes the tree
// (freezes), so no other check runs before it has finished. The target is
// resolved only for --trace.
func (d *Decoder) chdir() *policy.Op {
	var op *policy.Op
	if d.Env.Tracing() {
		var p policy.Path
		if d.Name == "fchdir" {
			p, _ = d.FdPath(policy.Path{Role: "path"}, d.Regs.Int32Arg(d.Spec.FdArg))
		} else {
			p, _ = d.PathArg(d.Spec.Paths[0], true, false)
		}
		op = newOp(syscalls.KindChdir, d.Name, p)
		d.Out = Outcome{}
	}
	d.ForgetCwds = true
	d.Out = PassOutcome()
	return op
}
