package decode

import (
	"syscall"

	"github.com/tracecell/tracecell/arch"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
	"golang.org/x/sys/unix"
)

// Memory reads the stopped task's memory.
type Memory interface {
	// ReadBytes reads exactly n bytes at addr: EFAULT for memory that
	// cannot be read. The kernel reads them again in place: for a frozen
	// call the tracer then lets the call run only where no exit of a
	// killed task could write them (tracer/copyfreeze.go, uncopiedRead).
	ReadBytes(addr uintptr, n int) ([]byte, error)
	// ReadArgString reads the NUL-terminated string (without its NUL) at
	// addr, which argument arg of the call points to: a path or a name
	// the kernel reads too. EFAULT for memory that cannot be read,
	// ENAMETOOLONG when no NUL comes within PATH_MAX bytes: the kernel
	// fails the call the same way. The tracer's implementation makes the
	// copies the kernel is to read instead (its path page); an error that
	// is no errno there fails the call with EFAULT, and the tracer decides
	// it again. The bytes may be the reader's buffer: valid until the next
	// ReadArgString, so a caller that keeps them copies them.
	ReadArgString(arg int, addr uintptr) ([]byte, error)
	// ReadArgBytes reads n bytes at addr, which argument arg points to (a
	// sockaddr, a futex_waitv array): for a frozen call, the tracer copies
	// them where the kernel reads them instead.
	ReadArgBytes(arg int, addr uintptr, n int) ([]byte, error)
	// CopyMsg: for a frozen sendmsg, the kernel is to read the msghdr hdr,
	// its name and control data from a copy (read: every range they were
	// read from).
	CopyMsg(hdr, name, ctl []byte, read []Span)
	// Frozen reports whether the call is decided with the tree frozen.
	Frozen() bool
	// ExitWritable says why the exit of a task the freeze cannot hold
	// could write memory in spans after the check ("" when none).
	//
	// Precondition: the tree is frozen.
	ExitWritable(spans []Span) string
	// Maps is the task's memory map (/proc/<tid>/maps).
	Maps() ([]procfs.Mapping, error)
	// MapAt is the mapping of the task's memory that holds addr (ok
	// false for a hole, where the kernel faults); named asks for the
	// mapped file's name too, for a report. One address costs far less
	// than Maps where the kernel answers PROCMAP_QUERY (6.11).
	MapAt(addr uint64, named bool) (m procfs.Mapping, ok bool, err error)
	// AnonPage reports whether the page at addr is the task's own
	// anonymous page (/proc/<tid>/pagemap): false when unreadable.
	AnonPage(addr uint64) bool
}

// Paths resolves what the stopped task's paths and fds name.
type Paths interface {
	// Base is the directory a relative path of the task starts from: the
	// target of dirfd (when hasDirfd and dirfd is not AT_FDCWD) or the
	// task's cwd. A *BaseError is a directory tracecell cannot name by a
	// path the walk may start from (fail closed); an errno fails the
	// call as the kernel would (EBADF for a bad dirfd, ENOTDIR).
	Base(dirfd int32, hasDirfd bool) (string, error)
	// Resolve walks given from base as the kernel would (pathres), the
	// last component followed when follow is set.
	Resolve(base string, given string, follow bool) (pathres.Result, error)
	// ResolveFd resolves what the task's fd refers to (pathres.ResolveFd).
	ResolveFd(fd int32) (pathres.Result, error)
	// CharDev is the device fd refers to when it is a character device
	// (fstat through /proc/<tid>/fd/N follows the fd, whatever path it
	// was opened by); false for a negative or bad fd and any other file.
	CharDev(fd int32) (DevID, bool)
	// FdLink is the text of the /proc/<tid>/fd/N link of fd.
	FdLink(fd int32) (string, bool)
	// FdFlags is the open file flags (fdinfo "flags:", with O_ACCMODE and
	// O_PATH) of the file descriptor that the resolved magic link
	// /proc/<pid>/fd/N (or /proc/<pid>/task/<tid>/fd/N) is; false when
	// resolved is no such link or its fdinfo cannot be read.
	FdFlags(resolved string) (uint64, bool)
	// Lstat reports whether resolved exists, and is a directory.
	Lstat(resolved string) (exists, isDir bool)
	// MayKnow reports whether the policy lets the tree know what exists
	// at resolved (policy.Policy.MayKnow).
	MayKnow(resolved string) bool
	// DenyLink is the deny-read entry given through a symlink
	// (policy.Config.DenyReadLinks) that, followed now, leads to resolved
	// or a directory above it, and where it leads; "" for none.
	DenyLink(resolved string) (given, now string)
}

// Tree is what decoding asks of the traced tree.
type Tree interface {
	// Tid is the stopped task's thread id, for reports.
	Tid() int
	// FutexRestart is the word of the task's timed shared futex wait
	// that restart_syscall would resume, 0 when none (tracer/futex.go).
	FutexRestart() uint64
	// PidInTree reports whether every process pid (as kill(2) reads it)
	// reaches is in the traced tree.
	PidInTree(pid int) bool
	// OwnsPty reports whether the pty slave path is one the tree made.
	OwnsPty(path string) bool
	// InitialExec returns the program of the command's start, ok when the
	// stopped call is the root's initial exec (tracecell's own start code
	// runs it, whose memory is not read).
	InitialExec() (path string, ok bool)
	// ChainExec reports whether an exec of resolved is the start chain's
	// (Config.InitialChain): asked once, for the root's first exec after
	// the initial one.
	ChainExec(resolved string) bool
	// Tracing reports whether allowed calls are traced too (--trace):
	// chdir's target is resolved only for that.
	Tracing() bool
	// Procs returns the number of processes of the tree and the most it
	// may have (0: no limit).
	Procs() (n, max int)
	// Loopback reports whether the policy lets the tree reach the
	// loopback network only (a send's local address matters).
	Loopback() bool
	// LoopbackIf reports whether network interface index is a loopback
	// one (a pktinfo control message naming it keeps the datagram on the
	// host).
	LoopbackIf(index int32) bool
	// SendFrom is the local address a send on fd goes from
	// (policy.Op.From): "" for a stream socket, "unbound", the bound IP,
	// or a "?..." text when it cannot be told.
	SendFrom(fd int32) string
	// PgrpInTree reports whether process group g is the tree's.
	PgrpInTree(g int) bool
	// PidGone reports whether no process or thread pid exists (the
	// kernel answers ESRCH).
	PidGone(pid int) bool
	// PidfdPid finds the process fd names as the target of
	// pidfd_send_signal: a pidfd or a /proc/<pid> directory. A non-zero
	// errno fails the call; with why set, closed (reported).
	PidfdPid(fd int32) (pid int, errno syscall.Errno, why string)
	// StdioTTY reports whether dev is one of tracecell's own terminals
	// (the command's stdio).
	StdioTTY(dev DevID) bool
	// AsyncOwn reports whether signal-driven I/O on the character device
	// dev, reached as resolved, can signal only the tree (a pty master,
	// or a slave the tree made).
	AsyncOwn(resolved string, dev DevID) bool
	// Ctty is the stopped task's controlling terminal, which an open of
	// /dev/tty opens (tracer/ctty.go).
	Ctty() Terminal
	// FdTerminal is the terminal that fd, an open file of /dev/tty,
	// acts on: the one that was controlling when it was opened.
	FdTerminal(fd int32) Terminal
}

// Terminal is the terminal /dev/tty stands for (policy.Path.Ctty).
type Terminal struct {
	// None: there is none. For an open, the caller has no controlling
	// terminal (the kernel fails it, ENXIO); for an fd, its terminal was
	// hung up (the kernel fails every change on it).
	None bool
	// Path is the terminal's node: /dev/pts/N, or a console's or serial
	// line's.
	Path string
	// Own: the tree's own pty or tracecell's own terminal.
	Own bool
	// Why, when set, says why the terminal cannot be told (denied).
	Why string
}

// DevTTYRdev reports whether rdev is the device of /dev/tty (5, 0:
// TTYAUX_MAJOR, Documentation/admin-guide/devices.txt).
func DevTTYRdev(rdev uint64) bool { return unix.Major(rdev) == 5 && unix.Minor(rdev) == 0 }

// setTerminal makes p, a path of /dev/tty, stand for the terminal tm.
func setTerminal(p *policy.Path, tm Terminal) {
	p.Ctty, p.CttyWhy, p.OwnPty = true, tm.Why, tm.Own
	if tm.Path != "" {
		p.Resolved = tm.Path
	}
}

// DevID is a character device as fstat names it: the device of its node
// and the device it is.
type DevID struct{ Dev, Rdev uint64 }

// Env is everything decoding reads besides the registers.
type Env interface {
	Memory
	Paths
	Tree
}

// Input is one stopped call as decoding sees it.
type Input struct {
	// Name is the syscall's name in the ABI's table.
	Name string
	// Spec says how its arguments are decoded.
	Spec *syscalls.Spec
	// Regs are the task's registers at the stop (the ABI's layout).
	Regs *arch.Regs
	// Table is the ABI's system call table (its open flag values).
	Table *syscalls.Table
	// Env reads the rest.
	Env Env
}

// Result is what decoding finds besides the operation.
type Result struct {
	// Out is the outcome: decide, pass, fail, fail closed or limit.
	Out Outcome
	// Flags are the decoded flags, for reports.
	Flags string
	// OpenFlags are an open's flags (HasOpenFlags), formatted into Flags
	// only when an event is recorded (opens are the hot path).
	OpenFlags    uint64
	HasOpenFlags bool
	// Sig is the signal number of a signal call.
	Sig int
	// Relookup: the kernel may look the call's name up again after an
	// interruptible sleep (an AF_UNIX connect or send to a full queue).
	Relookup bool
	// FollowPty: the call is a TIOCGPTN whose result the tracer reads at
	// its syscall exit (a pty the tree made).
	FollowPty bool
	// ForgetCwds: the call may move a task's cwd (chdir, fchdir; a
	// thread sharing it through CLONE_FS moves with it): every
	// remembered cwd is to be forgotten before it runs.
	ForgetCwds bool
	// Futex is what a futex call leaves the tracer to follow.
	Futex FutexNote
	// Ops, when set, are the operations of a call that acts on several
	// objects (sendmmsg's addresses, FIDEDUPERANGE's files), the first of
	// them returned as the operation: the decide stage picks the one that
	// decides the call (policy.Policy.Worst). Decoding never decides.
	Ops []*policy.Op
}

// FutexNote is what a futex call leaves the tracer to follow to its
// syscall exit and restart (tracer/futex.go).
type FutexNote struct {
	// Passed: the call passed, and Exit replaces the task's word to
	// follow to the syscall exit.
	Passed bool
	// Exit is the word of a timed shared wait, which the kernel may
	// resume with restart_syscall; 0 when none.
	Exit uint64
	// ClearRestart: the saved restart is used, or reset by a signal
	// handler's return.
	ClearRestart bool
}

// Decoder decodes one call into its Result.
type Decoder struct {
	Input
	*Result
}

// opAndPath is an operation with room for one path in the same
// allocation: nearly every checked call decodes to an operation on one
// path (an open, an fd's file), and one allocation a call is measurably
// cheaper than two (issue 21).
type opAndPath struct {
	op   policy.Op
	path [1]policy.Path
}

// newOp returns an operation of kind by call name on paths ps, whose first
// path shares the operation's allocation; more paths, given here or
// appended later, get their own array as append makes it.
func newOp(kind syscalls.Kind, name string, ps ...policy.Path) *policy.Op {
	x := &opAndPath{op: policy.Op{Kind: kind, Syscall: name}}
	x.op.Paths = append(x.path[:0], ps...)
	return &x.op
}

// New returns the decoder of in, writing into r.
func New(in Input, r *Result) *Decoder { return &Decoder{Input: in, Result: r} }

// Decode decodes the call families this package holds. ok is false for a
// handler it does not (the tracer decodes those itself).
func (d *Decoder) Decode() (op *policy.Op, ok bool) {
	switch d.Spec.Handler {
	case syscalls.HOpen:
		return d.open(), true
	case syscalls.HPath:
		return d.paths(), true
	case syscalls.HFdMeta:
		return d.FdMeta(d.Spec.FdArg, d.Spec.Kind), true
	case syscalls.HExec:
		return d.exec(), true
	case syscalls.HClone:
		return d.clone(), true
	case syscalls.HProcMem:
		return d.procMem(), true
	case syscalls.HForbidden:
		return d.forbidden(), true
	case syscalls.HIoctl:
		return d.ioctl(), true
	case syscalls.HFcntl:
		return d.fcntl(), true
	case syscalls.HSignal:
		return d.signal(), true
	case syscalls.HProcess:
		return d.process(), true
	case syscalls.HChdir:
		return d.chdir(), true
	case syscalls.HFutex:
		return d.futex(), true
	case syscalls.HSocket:
		if d.Name == "listen" {
			return nil, false // the tracer's: which sockets were bound (listen.go)
		}
		return d.socket(), true
	}
	return nil, false
}

// flagsArg is the call's int flags argument (low 32 bits, as the kernel
// reads it), 0 when the call has none.
func (d *Decoder) flagsArg() uint64 {
	if d.Spec.FlagsArg < 0 {
		return 0
	}
	return uint64(uint32(d.Regs.Arg(d.Spec.FlagsArg)))
}
