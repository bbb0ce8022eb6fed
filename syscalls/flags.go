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

// PrSetMM is prctl's PR_SET_MM option (3.3), the only prctl the filter
// traps. Its PR_SET_MM_MAP sub-option needs no capability (only exe_fd
// does) and sets where the kernel takes the heap to be (start_brk, brk):
// brk(2) then unmaps whatever lies between the new and the old break,
// tracecell's path page included (tracer: pathpage.go). The other
// sub-options set the same fields, or argv and the environment that
// /proc/<pid>/cmdline shows, with CAP_SYS_RESOURCE. Only checkpoint/restore
// tools (CRIU) use it.
const PrSetMM = 35

// IoctlSpec describes a trapped ioctl command.
type IoctlSpec struct {
	Cmd  uint32
	Name string
	// Kind: KindChmod for inode attribute changes (check what fd points
	// to, even read-only), KindWrite for terminal changes (decided as a
	// write of what fd points to), KindForbidden for terminal input injection and
	// for changes to a whole file system (the report still names what fd
	// points to), KindSignal for SIGIO owner changes (the pid or -pgid is
	// an int behind the arg pointer). KindNone: never decided nor denied;
	// the tracer follows the call to its syscall-exit stop and notes its
	// result there (TIOCGPTN: the tree's own pseudo-terminals,
	// tracer/pty.go).
	Kind Kind
}

// TIOCGPTN on a pty master writes the index N of its slave, /dev/pts/N, to
// the unsigned int at arg: _IOR('T', 0x30, unsigned int) in
// asm-generic/ioctls.h, which x86_64 and arm64 both use.
const TIOCGPTN = 0x80045430

// Ioctls are the ioctl commands the filter traps; every other command is
// allowed without a stop. The cmd argument is an unsigned int: the kernel
// ignores the high half of the register, and so does the filter. Encodings
// are asm-generic _IOC, identical on x86_64 and aarch64.
//
// The file-changing commands listed are those that work on an fd opened
// read-only, which any file the tree may read gives it. Commands that need
// the fd (or every fd they name) opened for writing are left out: that
// open was checked, and write(2) on such an fd is not trapped either —
// FICLONE, FICLONERANGE, EXT4_IOC_MOVE_EXT, FS_IOC_RESVSP* and
// FS_IOC_ZERO_RANGE (vfs_fallocate). FIDEDUPERANGE only shares extents
// whose bytes are equal and leaves contents and times alone. btrfs, XFS
// and f2fs have dozens of their own commands; only those sharing a
// generic number are covered here.
//
// The *32 commands are the 32-bit ABI's numbers, which native handlers do
// not accept (fs/ioctl.c and ext4_compat_ioctl translate them for 32-bit
// callers only, whom the filter kills); they are listed anyway as a
// second line of defence.
var Ioctls = []IoctlSpec{
	// chattr: immutable, append-only, ... work on a read-only fd of a file
	// the user owns.
	{0x40086602, "FS_IOC_SETFLAGS", KindChmod},   // _IOW('f', 2, long), linux/fs.h
	{0x40046602, "FS_IOC32_SETFLAGS", KindChmod}, // _IOW('f', 2, int), linux/fs.h
	{0x401c5820, "FS_IOC_FSSETXATTR", KindChmod}, // _IOW('X', 32, struct fsxattr), linux/fs.h
	// The inode generation (NFS file handles); owner only, read-only fd.
	{0x40087602, "FS_IOC_SETVERSION", KindChmod},     // _IOW('v', 2, long), linux/fs.h; = EXT4_IOC_SETVERSION_OLD
	{0x40047602, "FS_IOC32_SETVERSION", KindChmod},   // _IOW('v', 2, int), linux/fs.h
	{0x40086604, "EXT4_IOC_SETVERSION", KindChmod},   // _IOW('f', 4, long), linux/ext4.h
	{0x40046604, "EXT4_IOC32_SETVERSION", KindChmod}, // _IOW('f', 4, int), fs/ext4/ext4.h
	// Rewrites a block-mapped inode as an extent-mapped one (sets the
	// extents flag); owner only, read-only fd.
	{0x6609, "EXT4_IOC_MIGRATE", KindChmod}, // _IO('f', 9), linux/ext4.h
	// fs-verity makes a file permanently read-only; it needs write
	// permission on the inode but a read-only fd (fs/verity/enable.c).
	{0x40806685, "FS_IOC_ENABLE_VERITY", KindChmod}, // _IOW('f', 133, struct fsverity_enable_arg)
	// Sets an encryption policy on an empty directory the user owns.
	{0x800c6613, "FS_IOC_SET_ENCRYPTION_POLICY", KindChmod}, // _IOR('f', 19, struct fscrypt_policy_v1)
	// Whole file system: any fd on it will do, read-only or a directory,
	// so a writable root says nothing about them (it is a subtree of a
	// file system the host shares). Forbidden; all need CAP_SYS_ADMIN or
	// CAP_SYS_RESOURCE, which a tree run as root has.
	{0xc0045877, "FIFREEZE", KindForbidden},          // _IOWR('X', 119, int), linux/fs.h: blocks every write to the fs
	{0xc0045878, "FITHAW", KindForbidden},            // _IOWR('X', 120, int), linux/fs.h: thaws a host freeze
	{0x41009432, "FS_IOC_SETFSLABEL", KindForbidden}, // _IOW(0x94, 50, char[256]), linux/fs.h: the fs label (/dev/disk/by-label, fstab LABEL=)
	// The fs goes read-only/errors out for everyone; the same number is
	// XFS_IOC_GOINGDOWN (xfs_fs.h) and F2FS_IOC_SHUTDOWN (linux/f2fs.h).
	{0x8004587d, "EXT4_IOC_SHUTDOWN", KindForbidden},          // _IOR('X', 125, __u32), linux/ext4.h
	{0x40086607, "EXT4_IOC_GROUP_EXTEND", KindForbidden},      // _IOW('f', 7, unsigned long), linux/ext4.h: online resize
	{0x40286608, "EXT4_IOC_GROUP_ADD", KindForbidden},         // _IOW('f', 8, struct ext4_new_group_input), linux/ext4.h: online resize
	{0x40086610, "EXT4_IOC_RESIZE_FS", KindForbidden},         // _IOW('f', 16, __u64), linux/ext4.h: online resize
	{0x4008662c, "EXT4_IOC_SETFSUUID", KindForbidden},         // _IOW('f', 44, struct fsuuid), linux/ext4.h: the fs UUID (6.2)
	{0x40e8662e, "EXT4_IOC_SET_TUNE_SB_PARAM", KindForbidden}, // _IOW('f', 46, struct ext4_tune_sb_params), linux/ext4.h: tune2fs settings and features (6.18)
	// Swaps the fd's blocks with the boot loader inode (#5), which no
	// path names. The fd must be writable, but the other side is outside
	// every root.
	{0x6611, "EXT4_IOC_SWAP_BOOT", KindForbidden}, // _IO('f', 17), linux/ext4.h
	// /dev/userfaultfd (6.1) hands out a userfaultfd without the
	// userfaultfd call, which is forbidden (spec.go: a fault handler of
	// the tree's own could stall the tracer's reads of its memory). The
	// device is root's, mode 0600, by default: this matters to a root
	// tree, or where a host opens it to users.
	{0xaa00, "USERFAULTFD_IOC_NEW", KindForbidden}, // _IO(0xAA, 0x00), linux/userfaultfd.h
	// TIOCSTI pushes bytes into a terminal's input queue: the shell that
	// started tracecell would run them after we exit. Restricted only
	// since 6.2 (dev.tty.legacy_tiocsti). TIOCLINUX's selection paste does
	// the same on a virtual console.
	{0x5412, "TIOCSTI", KindForbidden},
	{0x541c, "TIOCLINUX", KindForbidden},
	// The index of a pty master's slave: a pty the tree created, whose
	// slave /dev/pts/N it may then open by name (policy.PtySlave). Always
	// allowed; where it succeeded the tracer records the slave
	// (tracer/pty.go). glibc's grantpt, ptsname and openpty make it.
	{TIOCGPTN, "TIOCGPTN", KindNone},
	// Terminal changes that work on an fd opened read-only (tty_ioctl
	// checks no file mode): settings (termios; TCSETS2 and friends take a
	// struct termios2, 44 bytes on both ABIs), the window size (SIGWINCH
	// to its foreground process group), flushing its input, stopping its
	// output, exclusive mode, becoming its controlling process, line
	// discipline, modem and serial lines, breaks. Decided as a write of
	// what the fd points to: the tree's own ptys, tracecell's terminal and
	// the default devices (/dev/tty, a master through /dev/ptmx) pass,
	// another terminal of the user (a read-only open, which the filter lets
	// through, of another ssh session's /dev/pts/N) is foreign-pty. TCSBRK
	// with a nonzero argument is tcdrain, a wait: trapped all the same.
	// Numbers from asm-generic/ioctls.h, which x86_64 and arm64 share.
	{0x5402, "TCSETS", KindWrite},
	{0x5403, "TCSETSW", KindWrite},
	{0x5404, "TCSETSF", KindWrite},
	{0x5406, "TCSETA", KindWrite},
	{0x5407, "TCSETAW", KindWrite},
	{0x5408, "TCSETAF", KindWrite},
	{0x402c542b, "TCSETS2", KindWrite},  // _IOW('T', 0x2B, struct termios2)
	{0x402c542c, "TCSETSW2", KindWrite}, // _IOW('T', 0x2C, struct termios2)
	{0x402c542d, "TCSETSF2", KindWrite}, // _IOW('T', 0x2D, struct termios2)
	{0x5433, "TCSETX", KindWrite},       // termiox, removed in 5.12
	{0x5434, "TCSETXF", KindWrite},
	{0x5435, "TCSETXW", KindWrite},
	{0x5409, "TCSBRK", KindWrite},
	{0x5425, "TCSBRKP", KindWrite},
	{0x5427, "TIOCSBRK", KindWrite},
	{0x5428, "TIOCCBRK", KindWrite},
	{0x540a, "TCXONC", KindWrite},
	{0x540b, "TCFLSH", KindWrite},
	{0x540c, "TIOCEXCL", KindWrite},
	{0x540d, "TIOCNXCL", KindWrite},
	{0x540e, "TIOCSCTTY", KindWrite},
	{0x5410, "TIOCSPGRP", KindWrite},
	{0x5414, "TIOCSWINSZ", KindWrite},
	{0x5416, "TIOCMBIS", KindWrite},
	{0x5417, "TIOCMBIC", KindWrite},
	{0x5418, "TIOCMSET", KindWrite},
	{0x541a, "TIOCSSOFTCAR", KindWrite},
	{0x541d, "TIOCCONS", KindWrite}, // console output to this tty; CAP_SYS_ADMIN
	{0x541f, "TIOCSSERIAL", KindWrite},
	{0x5423, "TIOCSETD", KindWrite},
	{0x542f, "TIOCSRS485", KindWrite},
	{0x5437, "TIOCVHANGUP", KindWrite},    // CAP_SYS_ADMIN
	{0x5457, "TIOCSLCKTRMIOS", KindWrite}, // CAP_SYS_ADMIN
	// Socket SIGIO owner, like fcntl(F_SETOWN).
	{0x8901, "FIOSETOWN", KindSignal},
	{0x8902, "SIOCSPGRP", KindSignal},
	// Signal-driven I/O on or off, like F_SETFL's O_ASYNC (see OAsync).
	{0x5452, "FIOASYNC", KindSignal},
}

// LookupIoctl returns the spec of a trapped ioctl command.
func LookupIoctl(cmd uint32) (IoctlSpec, bool) {
	for _, s := range Ioctls {
		if s.Cmd == cmd {
			return s, true
		}
	}
	return IoctlSpec{}, false
}

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
