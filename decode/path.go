package decode

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// BaseError is a base directory that tracecell cannot name by a path the
// walk may start from (see the tracer's readBase): the call is denied to be
// safe, and reported.
type BaseError struct {
	// Link is the /proc magic link read (a cwd or a dirfd).
	Link string
	// Text is what it read as.
	Text string
	// Why the text cannot be trusted.
	Why string
}

func (e *BaseError) Error() string {
	return fmt.Sprintf("the directory %s refers to (%q) %s", e.Link, e.Text, e.Why)
}

// baseFail sets the outcome for a base that could not be read.
func (d *Decoder) baseFail(p policy.Path, err error) {
	var be *BaseError
	if errors.As(err, &be) {
		d.Out = FailClosedWith(syscall.EACCES, "tracecell could not verify the directory the path is relative to ("+be.Error()+")", p)
		return
	}
	d.Out = KernelFailsWith(errnoOf(err, syscall.EBADF))
}

// PathArg reads and resolves one path argument. It returns a zero Path and
// sets Out when the kernel would fail the call before touching anything.
func (d *Decoder) PathArg(pa syscalls.PathArg, follow bool, atEmpty bool) (policy.Path, bool) {
	var dirfd int32 = unix.AT_FDCWD
	if pa.Dirfd >= 0 {
		dirfd = d.Regs.Int32Arg(pa.Dirfd)
	}
	addr := uintptr(d.Regs.Arg(pa.Arg))
	var given []byte
	start, initial := "", false
	if d.Spec.Handler == syscalls.HExec {
		start, initial = d.Env.InitialExec()
	}
	if addr == 0 && pa.EmptyPathOK {
		given = nil
	} else if initial {
		// The command's start: before its exec the root runs only
		// tracecell's own start code (fork_unsafe_linux.go), whose one
		// execve names Config.Path. That process is not dumpable then,
		// so an unprivileged tracer could not read its memory anyway.
		given = []byte(start)
	} else {
		// Decided on: the kernel reads a copy of these very bytes
		// (the tracer's path page).
		s, err := d.Env.ReadArgString(pa.Arg, addr)
		if err != nil {
			d.Out = KernelFailsWith(errnoOf(err, syscall.EFAULT))
			return policy.Path{}, false
		}
		given = s
	}
	p := policy.Path{Role: pa.Role, Given: string(given), Null: addr == 0 && pa.EmptyPathOK && !initial}
	if len(given) == 0 {
		if !(pa.EmptyPathOK && (addr == 0 || atEmpty)) {
			d.Out = KernelFailsWith(syscall.ENOENT)
			return p, false
		}
		// The call acts on the dirfd itself (AT_EMPTY_PATH, or a NULL path
		// for utimensat): check what the fd points to, even a read-only fd.
		return d.FdPath(p, dirfd)
	}
	if given[0] == '/' {
		if pa.Dirfd >= 0 {
			v := int(dirfd)
			p.Dirfd = &v
		}
		return d.resolved(p, "/", p.Given, follow)
	}
	if pa.Dirfd >= 0 {
		v := int(dirfd)
		p.Dirfd = &v
	}
	b, err := d.Env.Base(dirfd, pa.Dirfd >= 0)
	if err != nil {
		d.baseFail(p, err)
		return p, false
	}
	p.Base = b
	return d.resolved(p, b, p.Given, follow)
}

// PathArgBytes resolves a path that is not a syscall argument (an AF_UNIX
// socket path) against the thread's cwd.
func (d *Decoder) PathArgBytes(given []byte, follow bool) (policy.Path, bool) {
	p := policy.Path{Role: "path", Given: string(given)}
	base := "/"
	if len(given) > 0 && given[0] != '/' {
		b, err := d.Env.Base(unix.AT_FDCWD, false)
		if err != nil {
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EBADF) {
				err = syscall.ENOENT
			}
			d.baseFail(p, err)
			return p, false
		}
		base = b
		p.Base = b
	}
	return d.resolved(p, base, p.Given, follow)
}

func (d *Decoder) resolved(p policy.Path, base string, given string, follow bool) (policy.Path, bool) {
	r, err := d.Env.Resolve(base, given, follow)
	return d.fill(p, r, err)
}

// fill copies a resolution into p. When the kernel's own walk would fail
// (a missing or non-directory component, a loop, a too long path) the call
// is failed with that errno without asking the policy: nothing can happen.
func (d *Decoder) fill(p policy.Path, r pathres.Result, err error) (policy.Path, bool) {
	if err != nil {
		var en syscall.Errno
		if errors.As(err, &en) && en != syscall.EINVAL {
			d.Out = KernelFailsWith(en)
			return p, false
		}
		// Unresolvable for another reason: fail closed (reported).
		d.Out = FailClosedWith(syscall.EACCES, fmt.Sprintf("tracecell could not resolve the path (%v)", err), p)
		return p, false
	}
	if r.WalkErr != 0 && d.Env.MayKnow(r.Path) {
		d.Out = KernelFailsWith(r.WalkErr)
		return p, false
	}
	// A walk that fails in a deny-read tree (or outside the readable
	// roots) goes to the policy, which denies it with EACCES and reports
	// it: the kernel's ENOENT or ENOTDIR would tell the tree what exists
	// there (F9).
	p.Resolved, p.Exists, p.IsDir, p.Special, p.Deleted = r.Path, r.Exists, r.IsDir, r.Special, r.Deleted
	// A pipe or socket reached through /proc/<pid>/fd/N may be reopened
	// only when that process is in the tree.
	p.SpecialInTree = r.Special != "" && d.Env.PidInTree(r.ProcPid)
	// And for writing only when that very fd is open for writing: a pipe
	// the tree got read-only (a host process's, reached through its
	// /proc/<pid>/fd/N, or a read end) is no write end it holds.
	p.SpecialWritable = p.SpecialInTree && d.fdWritable(r.Path)
	// Likewise a file with no name: the tree may change it only through
	// an fd of its own that is open for writing.
	p.DeletedWritable = r.Deleted && r.ProcPid != 0 && d.Env.PidInTree(r.ProcPid) && d.fdWritable(r.Link)
	if pid, ok := ProcPid(r.Path); ok {
		p.ProcOutside = !d.Env.PidInTree(pid)
	}
	// An unlinked file or memfd of another process (another session's
	// worker) reached through its /proc/<pid>/fd/N.
	p.HeldOutside = r.Special == "" && r.ProcPid != 0 && !d.Env.PidInTree(r.ProcPid)
	p.Dev, p.Ino = r.Dev, r.Ino
	p.DenyLink, p.DenyLinkAt = d.Env.DenyLink(r.Path)
	p.BlockDevice = r.Exists && r.Special == "" && r.Mode&fs.ModeDevice != 0 && r.Mode&fs.ModeCharDevice == 0
	if r.Exists && r.Special == "" && policy.PtySlave(r.Path) {
		p.OwnPty = d.Env.OwnsPty(r.Path)
	}
	return p, true
}

// fdWritable reports whether the magic link res (/proc/<pid>/fd/N) is a
// file descriptor open for writing: access mode O_WRONLY or O_RDWR, not
// O_PATH (whose access mode bits the kernel clears). Mode 3 opens for
// neither (OPEN_FMODE).
func (d *Decoder) fdWritable(res string) bool {
	flags, ok := d.Env.FdFlags(res)
	if !ok || flags&unix.O_PATH != 0 {
		return false
	}
	acc := flags & unix.O_ACCMODE
	return acc == unix.O_WRONLY || acc == unix.O_RDWR
}

// FdPath resolves what fd of the stopped thread refers to.
func (d *Decoder) FdPath(p policy.Path, fd int32) (policy.Path, bool) {
	v := int(fd)
	p.Dirfd = &v
	if fd < 0 {
		d.Out = KernelFailsWith(syscall.EBADF)
		return p, false
	}
	r, err := d.Env.ResolveFd(fd)
	return d.fill(p, r, err)
}

// FdArgPath is FdPath of fd, named "fd N" as given.
func (d *Decoder) FdArgPath(fd int32) (policy.Path, bool) {
	return d.FdPath(policy.Path{Role: "path", Given: "fd " + strconv.Itoa(int(fd))}, fd)
}

// ProcPid is the pid of a /proc/<pid>/... path (resolved: /proc/self has
// become the caller's tgid).
func ProcPid(res string) (int, bool) {
	rest, ok := strings.CutPrefix(res, "/proc/")
	if !ok {
		return 0, false
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	pid, err := strconv.Atoi(rest)
	return pid, err == nil && pid > 0
}

// errnoOf is err's errno, def when it has none.
func errnoOf(err error, def syscall.Errno) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return def
}
