package syscalls

import (
	"strconv"
	"strings"
)

// Open flags shared by x86_64 and aarch64 (include/uapi/asm-generic/fcntl.h;
// arm64 overrides only O_DIRECTORY, O_NOFOLLOW, O_DIRECT and O_LARGEFILE,
// see OpenFlagBits).
const (
	OAccMode  = 0o3
	ORdOnly   = 0o0
	OWrOnly   = 0o1
	ORdWr     = 0o2
	OCreat    = 0o100
	OExcl     = 0o200
	ONoCtty   = 0o400
	OTrunc    = 0o1000
	OAppend   = 0o2000
	ONonblock = 0o4000
	ODsync    = 0o10000
	OAsync    = 0o20000 // FASYNC
	ONoAtime  = 0o1000000
	OCloexec  = 0o2000000
	OSyncBit  = 0o4000000 // __O_SYNC; O_SYNC is __O_SYNC|O_DSYNC
	OPath     = 0o10000000
	OTmpBit   = 0o20000000 // __O_TMPFILE; O_TMPFILE is __O_TMPFILE|O_DIRECTORY
)

// OpenWriteMask is O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND|__O_TMPFILE: an
// open with none of these bits cannot change the file system. O_RDONLY|O_TRUNC
// truncates, so O_TRUNC is in the mask. The value is the same on both ABIs.
const OpenWriteMask = OWrOnly | ORdWr | OCreat | OTrunc | OAppend | OTmpBit // 0x400643

// OpenWrites reports whether open flags can change the file system. Only the
// low 32 bits count: the kernel takes flags as an int.
func OpenWrites(flags uint64) bool {
	return uint32(flags)&OpenWriteMask != 0
}

// OpenFollows reports whether an open with these flags follows a symlink in
// the last component: not with O_NOFOLLOW, not with O_CREAT|O_EXCL (which
// fails with EEXIST on any existing name, dangling symlinks included).
// O_CREAT alone on a dangling symlink creates its target.
func (t *Table) OpenFollows(flags uint64) bool {
	f := uint64(uint32(flags))
	if f&t.Open.NoFollow != 0 {
		return false
	}
	return f&(OCreat|OExcl) != OCreat|OExcl
}

// FormatOpenFlags formats open flags with the native ABI's values, e.g.
// "O_WRONLY|O_CREAT|O_TRUNC". The tracer only sees native tasks (the filter
// kills the others), so the native layout is the right one for reports.
func FormatOpenFlags(flags uint64) string {
	t := Native()
	if t == nil {
		t = AMD64
	}
	return t.FormatOpenFlags(flags)
}

// FormatOpenFlags formats open flags with this ABI's values: the access mode
// first ("O_RDONLY" for 0), then the flags; unknown bits as hex.
func (t *Table) FormatOpenFlags(flags uint64) string {
	f := uint64(uint32(flags))
	var parts []string
	switch f & OAccMode {
	case ORdOnly:
		parts = append(parts, "O_RDONLY")
	case OWrOnly:
		parts = append(parts, "O_WRONLY")
	case ORdWr:
		parts = append(parts, "O_RDWR")
	default:
		parts = append(parts, "O_ACCMODE")
	}
	f &^= OAccMode
	o := t.Open
	// Composite flags come before their parts.
	names := []flagName{
		{OCreat, "O_CREAT"}, {OExcl, "O_EXCL"}, {ONoCtty, "O_NOCTTY"}, {OTrunc, "O_TRUNC"},
		{OAppend, "O_APPEND"}, {ONonblock, "O_NONBLOCK"},
		{OSyncBit | ODsync, "O_SYNC"}, {ODsync, "O_DSYNC"}, {OAsync, "O_ASYNC"},
		{o.Direct, "O_DIRECT"}, {o.LargeFile, "O_LARGEFILE"},
		{OTmpBit | o.Directory, "O_TMPFILE"}, {o.Directory, "O_DIRECTORY"},
		{o.NoFollow, "O_NOFOLLOW"}, {ONoAtime, "O_NOATIME"}, {OCloexec, "O_CLOEXEC"},
		{OSyncBit, "__O_SYNC"}, {OPath, "O_PATH"}, {OTmpBit, "__O_TMPFILE"},
	}
	parts, f = appendFlags(parts, f, names)
	if f != 0 {
		parts = append(parts, hex(f))
	}
	return strings.Join(parts, "|")
}

type flagName struct {
	mask uint64
	name string
}

// appendFlags appends the name of every entry whose bits are all set in f,
// in table order, and returns the bits no entry claimed.
func appendFlags(parts []string, f uint64, names []flagName) ([]string, uint64) {
	for _, n := range names {
		if n.mask != 0 && f&n.mask == n.mask {
			parts = append(parts, n.name)
			f &^= n.mask
		}
	}
	return parts, f
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// formatBits formats a flag word: "0" when empty, unknown bits as hex.
func formatBits(flags uint64, names []flagName) string {
	if flags == 0 {
		return "0"
	}
	parts, rest := appendFlags(nil, flags, names)
	if rest != 0 {
		parts = append(parts, hex(rest))
	}
	return strings.Join(parts, "|")
}

// AT_* flags (include/uapi/linux/fcntl.h), same on every ABI.
const (
	AtSymlinkNofollow = 0x100
	AtRemoveDir       = 0x200 // unlinkat; the same bit is AT_EACCESS for faccessat
	AtSymlinkFollow   = 0x400
	AtNoAutomount     = 0x800
	AtEmptyPath       = 0x1000
	AtRecursive       = 0x8000
)

var atNames = []flagName{
	{AtSymlinkNofollow, "AT_SYMLINK_NOFOLLOW"}, {AtRemoveDir, "AT_REMOVEDIR"},
	{AtSymlinkFollow, "AT_SYMLINK_FOLLOW"}, {AtNoAutomount, "AT_NO_AUTOMOUNT"},
	{AtEmptyPath, "AT_EMPTY_PATH"}, {AtRecursive, "AT_RECURSIVE"},
}

// FormatAtFlags formats the AT_* flags of the *at calls. Only the low 32
// bits count (the kernel takes an int).
func FormatAtFlags(flags uint64) string { return formatBits(uint64(uint32(flags)), atNames) }

// RENAME_* flags of renameat2 (include/uapi/linux/fs.h).
const (
	RenameNoReplace = 1
	RenameExchange  = 2
	RenameWhiteout  = 4
)

var renameNames = []flagName{
	{RenameNoReplace, "RENAME_NOREPLACE"}, {RenameExchange, "RENAME_EXCHANGE"}, {RenameWhiteout, "RENAME_WHITEOUT"},
}

// FormatRenameFlags formats renameat2 flags.
func FormatRenameFlags(flags uint64) string { return formatBits(uint64(uint32(flags)), renameNames) }

// clone(2) flags (include/uapi/linux/sched.h).
const (
	CloneSignalMask    = 0x000000ff // CSIGNAL: the exit signal, not a flag
	CloneVM            = 0x00000100
	CloneFS            = 0x00000200
	CloneFiles         = 0x00000400
	CloneSighand       = 0x00000800
	ClonePidfd         = 0x00001000
	ClonePtrace        = 0x00002000
	CloneVfork         = 0x00004000
	CloneParent        = 0x00008000
	CloneThread        = 0x00010000
	CloneNewNS         = 0x00020000
	CloneSysvsem       = 0x00040000
	CloneSettls        = 0x00080000
	CloneParentSettid  = 0x00100000
	CloneChildCleartid = 0x00200000
	CloneDetached      = 0x00400000
	CloneUntraced      = 0x00800000
	CloneChildSettid   = 0x01000000
	CloneNewCgroup     = 0x02000000
	CloneNewUTS        = 0x04000000
	CloneNewIPC        = 0x08000000
	CloneNewUser       = 0x10000000
	CloneNewPID        = 0x20000000
	CloneNewNet        = 0x40000000
	CloneIO            = 0x80000000
)

// CloneForbiddenMask are the clone flags the tracer denies: CLONE_UNTRACED
// would start a child the tracer never sees (it suppresses the
// PTRACE_O_TRACECLONE/FORK auto-attach), and the CLONE_NEW* namespaces
// would let the tree remount, hide paths or leave the pid namespace we
// watch. CLONE_NEWTIME (0x80) is left out on purpose: in clone(2) that bit
// is part of the exit signal byte (CSIGNAL), so it can only be requested
// through clone3 (which the filter answers with ENOSYS) or unshare/setns
// (forbidden).
const CloneForbiddenMask = CloneUntraced | CloneNewNS | CloneNewCgroup | CloneNewUTS |
	CloneNewIPC | CloneNewUser | CloneNewPID | CloneNewNet // 0x7e820000

var cloneNames = []flagName{
	{CloneVM, "CLONE_VM"}, {CloneFS, "CLONE_FS"}, {CloneFiles, "CLONE_FILES"},
	{CloneSighand, "CLONE_SIGHAND"}, {ClonePidfd, "CLONE_PIDFD"}, {ClonePtrace, "CLONE_PTRACE"},
	{CloneVfork, "CLONE_VFORK"}, {CloneParent, "CLONE_PARENT"}, {CloneThread, "CLONE_THREAD"},
	{CloneNewNS, "CLONE_NEWNS"}, {CloneSysvsem, "CLONE_SYSVSEM"}, {CloneSettls, "CLONE_SETTLS"},
	{CloneParentSettid, "CLONE_PARENT_SETTID"}, {CloneChildCleartid, "CLONE_CHILD_CLEARTID"},
	{CloneDetached, "CLONE_DETACHED"}, {CloneUntraced, "CLONE_UNTRACED"},
	{CloneChildSettid, "CLONE_CHILD_SETTID"}, {CloneNewCgroup, "CLONE_NEWCGROUP"},
	{CloneNewUTS, "CLONE_NEWUTS"}, {CloneNewIPC, "CLONE_NEWIPC"}, {CloneNewUser, "CLONE_NEWUSER"},
	{CloneNewPID, "CLONE_NEWPID"}, {CloneNewNet, "CLONE_NEWNET"}, {CloneIO, "CLONE_IO"},
}

// FormatCloneFlags formats clone(2) flags like strace:
// "CLONE_VM|CLONE_VFORK|SIGCHLD". The exit signal byte is printed as a
// signal name.
func FormatCloneFlags(flags uint64) string {
	if flags == 0 {
		return "0"
	}
	parts, rest := appendFlags(nil, flags&^CloneSignalMask, cloneNames)
	if rest != 0 {
		parts = append(parts, hex(rest))
	}
	if s := int(flags & CloneSignalMask); s != 0 {
		parts = append(parts, SignalName(s))
	}
	return strings.Join(parts, "|")
}

var signalNames = [...]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
	13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD",
	18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
	23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF",
	28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
}

// SignalName names a signal number of x86_64 and aarch64 (they share the
// asm-generic numbering): "SIGTERM"; real-time signals as strace does,
// "SIGRT_2" for 34 (the kernel's SIGRTMIN is 32; glibc reserves 32 and 33).
// 0 is "0"; anything else "signal(N)".
func SignalName(sig int) string {
	switch {
	case sig == 0:
		return "0"
	case sig > 0 && sig < len(signalNames):
		return signalNames[sig]
	case sig >= 32 && sig <= 64:
		return "SIGRT_" + strconv.Itoa(sig-32)
	}
	return "signal(" + strconv.Itoa(sig) + ")"
}

// fcntl commands the filter traps (include/uapi/asm-generic/fcntl.h, same
// on both ABIs).
const (
	FcntlSetOwn   = 8  // F_SETOWN: arg is a pid, or -pgid
	FcntlSetOwnEx = 15 // F_SETOWN_EX: arg points to struct f_owner_ex
	// F_SETDELEG (F_LINUX_SPECIFIC_BASE+16, Linux 6.19): a user-space file
	// delegation makes link, rename, unlink and create by another task wait
	// interruptibly for its break and then look their paths up again, past
	// the freeze (tracer/freeze.go). Denied as a forbidden call; older
	// kernels answer EINVAL anyway.
	FcntlSetDeleg = 1040
	// F_SETLEASE (F_LINUX_SPECIFIC_BASE+0, 2.4): a read or write lease makes
	// every other process's open of the file for writing (a write lease:
	// any open) wait up to /proc/sys/fs/lease-break-time (45 s) for the
	// holder to let go, and it works on a read-only fd of any file the
	// caller owns. Checked as a lease on what the fd points to (KindLease);
	// F_UNLCK, which drops one, passes.
	FcntlSetLease = 1024
	FcntlUnlck    = 2 // F_UNLCK: the lease type that releases
	// F_SET_RW_HINT (F_LINUX_SPECIFIC_BASE+12, 4.13): sets the write-life
	// hint the kernel keeps on the fd's inode, which the owner's later
	// writes go out with; it works on a read-only fd of any file the
	// caller owns (root: fowner, any file). Checked as a write of what the
	// fd points to (red team, session 23). F_SET_FILE_RW_HINT (+14) set
	// the open file's own hint until 6.2 and touches no inode: not trapped.
	FcntlSetRwHint = 1036
	// F_SETFL with O_ASYNC turns on signal-driven I/O. On a terminal the
	// kernel itself names the terminal's foreground process group as the
	// fd's SIGIO owner (tty_fasync, __tty_fasync): no F_SETOWN is made,
	// and F_SETSIG then picks any signal, SIGKILL included. Trapped so
	// that the tracer sees O_ASYNC go on (FIOASYNC is its ioctl twin).
	FcntlSetFl = 4 // with OAsync (FASYNC; 0x2000 on both ABIs)
)

// FormatLeaseType names an F_SETLEASE lease type.
func FormatLeaseType(typ uint32) string {
	switch typ {
	case 0:
		return "F_RDLCK"
	case 1:
		return "F_WRLCK"
	case FcntlUnlck:
		return "F_UNLCK"
	}
	return strconv.FormatUint(uint64(typ), 10)
}

// SeccompFilterFlagNewListener is SECCOMP_FILTER_FLAG_NEW_LISTENER (5.0):
// the only seccomp(2) use the filter traps (see the forbidden list).
const SeccompFilterFlagNewListener = 8

// PrSetMM is prctl's PR_SET_MM option (3.3), one of the prctls the
// filter traps (PrctlTrapped). Its PR_SET_MM_MAP sub-option needs no capability (only exe_fd
// does) and sets where the kernel takes the heap to be (start_brk, brk):
// brk(2) then unmaps whatever lies between the new and the old break,
// tracecell's path page included (tracer: pathpage.go). The other
// sub-options set the same fields, or argv and the environment that
// /proc/<pid>/cmdline shows, with CAP_SYS_RESOURCE. Only checkpoint/restore
// tools (CRIU) use it.
const PrSetMM = 35

// PrSchedCore is prctl's PR_SCHED_CORE option (5.14): PR_SCHED_CORE_CREATE,
// _SHARE_TO and _SHARE_FROM give a core-scheduling cookie to, or take it
// from, the process (or its thread group or process group) named by the
// third argument, which may be any process the caller may ptrace-read: a
// process outside the tree (red team, session 23). PR_SCHED_CORE_GET only
// reads.
const (
	PrSchedCore    = 62
	PrSchedCoreGet = 0
)

// PrSetDumpable is prctl's PR_SET_DUMPABLE option. A process that is not
// dumpable hides its /proc/<pid>/fd, exe and mem, and process_vm_readv,
// from a tracer without CAP_SYS_PTRACE (__ptrace_may_access checks
// get_dumpable for every caller but the process itself; an attached tracer
// is no exception): tracecell run as an ordinary user could no longer see
// what an fd is or read a path, and a tree that turned it off got listen,
// F_SETFL(O_ASYNC) and an exec through unchecked (red team, session 25).
// Setting it (arg 1, SUID_DUMP_USER) passes; anything else is denied.
const PrSetDumpable = 4

// PrctlTrapped are the prctl options the filter traps.
var PrctlTrapped = []uint32{PrSetDumpable, PrSetMM, PrSchedCore}

// Futex operations (include/uapi/linux/futex.h; the same on every ABI).
// FUTEX_PRIVATE_FLAG in futex(2)'s op, and FUTEX2_PRIVATE in the flags of
// futex_wait, futex_wake (6.7) and each struct futex_waitv (5.16), make the
// futex key mm-local (get_futex_key: key.private.mm): such a word can reach
// no other process, so the filter lets those calls through.
const (
	FutexPrivateFlag = 128 // FUTEX_PRIVATE_FLAG
	Futex2Private    = 128 // FUTEX2_PRIVATE
	FutexClockRT     = 256 // FUTEX_CLOCK_REALTIME
)

// FutexCmd is the command of a futex(2) op: op & FUTEX_CMD_MASK, which is
// ~(FUTEX_PRIVATE_FLAG|FUTEX_CLOCK_REALTIME) (kernel/futex/syscalls.c):
// every other bit stays, and an unknown command fails with ENOSYS.
func FutexCmd(op uint32) uint32 { return op &^ (FutexPrivateFlag | FutexClockRT) }

// futex(2) commands (op & FutexCmdMask).
const (
	FutexWait          = 0
	FutexWake          = 1
	FutexFd            = 2 // removed in 2.6.26: ENOSYS
	FutexRequeue       = 3
	FutexCmpRequeue    = 4
	FutexWakeOp        = 5
	FutexLockPI        = 6
	FutexUnlockPI      = 7
	FutexTrylockPI     = 8
	FutexWaitBitset    = 9
	FutexWakeBitset    = 10
	FutexWaitRequeuePI = 11
	FutexCmpRequeuePI  = 12
	FutexLockPI2       = 13 // 5.14
)

var futexCmdNames = [...]string{"FUTEX_WAIT", "FUTEX_WAKE", "FUTEX_FD", "FUTEX_REQUEUE", "FUTEX_CMP_REQUEUE", "FUTEX_WAKE_OP",
	"FUTEX_LOCK_PI", "FUTEX_UNLOCK_PI", "FUTEX_TRYLOCK_PI", "FUTEX_WAIT_BITSET", "FUTEX_WAKE_BITSET",
	"FUTEX_WAIT_REQUEUE_PI", "FUTEX_CMP_REQUEUE_PI", "FUTEX_LOCK_PI2"}

// FutexCmdName names a futex(2) command, "FUTEX_OP(N)" when unknown.
func FutexCmdName(cmd uint32) string {
	if int(cmd) < len(futexCmdNames) {
		return futexCmdNames[cmd]
	}
	return "FUTEX_OP(" + strconv.Itoa(int(cmd)) + ")"
}

// FutexUsesUaddr2 reports whether a futex(2) command names a second futex
// word in its uaddr2 argument (argument 4): the requeue target, or the
// word FUTEX_WAKE_OP changes. The kernel keys uaddr1 of REQUEUE and
// CMP_REQUEUE with FUTEX_READ: a word in read-only memory is enough to
// move another program's waiters.
func FutexUsesUaddr2(cmd uint32) bool {
	switch cmd {
	case FutexRequeue, FutexCmpRequeue, FutexWakeOp, FutexWaitRequeuePI, FutexCmpRequeuePI:
		return true
	}
	return false
}
