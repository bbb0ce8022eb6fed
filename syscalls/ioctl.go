package syscalls

import (
	"slices"
	"strconv"
)

// IoctlSpec describes an ioctl command the tracer decides in its own way.
type IoctlSpec struct {
	Cmd  uint32
	Name string
	// Kind: KindChmod for inode attribute changes (check what fd points
	// to, even read-only), KindWrite for terminal changes (decided as a
	// write of what fd points to), KindForbidden for terminal input injection and
	// for changes to a whole file system (the report still names what fd
	// points to), KindSignal for SIGIO owner changes (the pid or -pgid is
	// an int behind the arg pointer), KindCreate for the btrfs subvolume
	// and snapshot creations (a new directory named in the argument
	// struct, inside the directory fd points to). KindNone: never decided
	// nor denied; the tracer follows the call to its syscall-exit stop and
	// notes its result there (TIOCGPTN: the tree's own pseudo-terminals,
	// tracer/pty.go).
	Kind Kind
}

// TIOCGPTN on a pty master writes the index N of its slave, /dev/pts/N, to
// the unsigned int at arg: _IOR('T', 0x30, unsigned int) in
// asm-generic/ioctls.h, which x86_64 and arm64 both use.
const TIOCGPTN = 0x80045430

// TIOCNOTTY gives up the caller's controlling terminal (_IO('T', 0x22),
// asm-generic/ioctls.h); decided on what its fd points to.
const TIOCNOTTY = 0x5422

// btrfs subvolume commands (include/uapi/linux/btrfs.h, magic 0x94). The
// argument of the creations is struct btrfs_ioctl_vol_args {__s64 fd; char
// name[4088]} (v1) or struct btrfs_ioctl_vol_args_v2 {__s64 fd; __u64
// transid; __u64 flags; __u64 unused[4]; char name[4040]} (v2), 4096 bytes
// either way; fd is the snapshot's source subvolume, name the new entry in
// the directory the ioctl's own fd points to. None of them looks at the
// fd's open mode (fs/btrfs/ioctl.c btrfs_ioctl_snap_create*,
// btrfs_ioctl_subvol_setflags: a read-only directory fd will do): the
// kernel checks write and search permission on the directory
// (btrfs_may_create), as mkdir would, and ownership of the source for a
// snapshot or of the subvolume for its flags.
const (
	BtrfsIocSnapCreate     = 0x50009401 // _IOW(0x94, 1, struct btrfs_ioctl_vol_args)
	BtrfsIocSubvolCreate   = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
	BtrfsIocSnapCreateV2   = 0x50009417 // _IOW(0x94, 23, struct btrfs_ioctl_vol_args_v2)
	BtrfsIocSubvolCreateV2 = 0x50009418 // _IOW(0x94, 24, struct btrfs_ioctl_vol_args_v2)
	BtrfsIocSubvolSetflags = 0x4008941a // _IOW(0x94, 26, __u64)

	// BtrfsVolArgsSize is sizeof both vol_args structs (BTRFS_PATH_NAME_MAX
	// 4087 + NUL + the 8-byte fd; v2: 4040-byte name after 56 bytes).
	BtrfsVolArgsSize = 4096
	// BtrfsNameOffV1 and BtrfsNameOffV2 are where the name starts.
	BtrfsNameOffV1 = 8
	BtrfsNameOffV2 = 56
	// BtrfsFlagsOffV2 is the offset of v2's flags; of its bits only
	// BTRFS_SUBVOL_RDONLY (1<<1) is accepted here: QGROUP_INHERIT (1<<2)
	// reads a struct btrfs_qgroup_inherit that assigns the new subvolume
	// to quota groups of the whole file system, and SPEC_BY_ID (1<<4)
	// names a subvolume by number, not by name.
	BtrfsFlagsOffV2   = 16
	BtrfsSubvolRdonly = 1 << 1
)

// Ioctls are the commands the tracer decides by their own rule. The
// filter traps every command not in IoctlAllowed (these included); a
// trapped command that is in neither list is decided by IoctlFamily or as
// an ioctl on what its fd points to (decode: ioctl). The cmd
// argument is an unsigned int: the kernel ignores the high half of the
// register, and so do the filter and the tracer. Encodings are
// asm-generic _IOC, identical on x86_64 and aarch64.
//
// The file-changing commands listed are those that work on an fd opened
// read-only, which any file the tree may read gives it: they are decided
// on what the fd points to whatever its open mode (KindChmod), or never
// allowed when they change a whole file system (KindForbidden), which any
// fd on it reaches, one inside a writable root included.
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
	// The rest of the whole-file-system class (issue 16): fs-wide discard,
	// the journal, the superblock's salt, the file system's keyring (a
	// key removed locks every user's files out), and a copy made by
	// pathname (OCFS2's reflink takes two paths, not fds). btrfs, XFS,
	// f2fs and OCFS2 commands not listed anywhere fall under IoctlFamily.
	{0xc0185879, "FITRIM", KindForbidden},                                 // _IOWR('X', 121, struct fstrim_range), linux/fs.h
	{0x4004662b, "EXT4_IOC_CHECKPOINT", KindForbidden},                    // _IOW('f', 43, __u32), linux/ext4.h: journal checkpoint, discard or zero-out of its blocks (5.13)
	{0x40106614, "FS_IOC_GET_ENCRYPTION_PWSALT", KindForbidden},           // _IOW('f', 20, __u8[16]): ext4 and f2fs make and store the salt in the superblock when there is none
	{0xc0506617, "FS_IOC_ADD_ENCRYPTION_KEY", KindForbidden},              // _IOWR('f', 23, struct fscrypt_add_key_arg), linux/fscrypt.h (5.4)
	{0xc0406618, "FS_IOC_REMOVE_ENCRYPTION_KEY", KindForbidden},           // _IOWR('f', 24, struct fscrypt_remove_key_arg)
	{0xc0406619, "FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS", KindForbidden}, // _IOWR('f', 25, struct fscrypt_remove_key_arg)
	{0x40186f04, "OCFS2_IOC_REFLINK", KindForbidden},                      // _IOW('o', 4, struct reflink_arguments), fs/ocfs2/ocfs2_ioctl.h: old_path, new_path
	// btrfs subvolumes (see BtrfsIocSubvolCreate): a creation is decided
	// as a create of dir/name (and a snapshot's source as a second
	// path); the read-only flag as a chmod of the subvolume fd points to.
	{BtrfsIocSnapCreate, "BTRFS_IOC_SNAP_CREATE", KindCreate},
	{BtrfsIocSubvolCreate, "BTRFS_IOC_SUBVOL_CREATE", KindCreate},
	{BtrfsIocSnapCreateV2, "BTRFS_IOC_SNAP_CREATE_V2", KindCreate},
	{BtrfsIocSubvolCreateV2, "BTRFS_IOC_SUBVOL_CREATE_V2", KindCreate},
	{BtrfsIocSubvolSetflags, "BTRFS_IOC_SUBVOL_SETFLAGS", KindChmod},
	// The entropy pool of the whole host (drivers/char/random.c): crediting
	// or clearing it needs CAP_SYS_ADMIN, which a root tree has, on any
	// fd of /dev/random or /dev/urandom, default devices.
	{0x40045201, "RNDADDTOENTCNT", KindForbidden}, // _IOW('R', 0x01, int), linux/random.h
	{0x40085203, "RNDADDENTROPY", KindForbidden},  // _IOW('R', 0x03, int[2])
	{0x5204, "RNDZAPENTCNT", KindForbidden},       // _IO('R', 0x04)
	{0x5206, "RNDCLEARPOOL", KindForbidden},       // _IO('R', 0x06)
	{0x5207, "RNDRESEEDCRNG", KindForbidden},      // _IO('R', 0x07)
	// Virtual consoles (linux/vt.h): switching, resizing, freeing and
	// locking consoles act on every console of the machine, not on the
	// fd's; /dev/tty is a default device and may be one.
	{0x5602, "VT_SETMODE", KindForbidden},
	{0x5605, "VT_RELDISP", KindForbidden},
	{0x5606, "VT_ACTIVATE", KindForbidden},
	{0x5607, "VT_WAITACTIVE", KindForbidden},
	{0x5608, "VT_DISALLOCATE", KindForbidden},
	{0x5609, "VT_RESIZE", KindForbidden},
	{0x560a, "VT_RESIZEX", KindForbidden},
	{0x560b, "VT_LOCKSWITCH", KindForbidden},
	{0x560c, "VT_UNLOCKSWITCH", KindForbidden},
	{0x560f, "VT_SETACTIVATE", KindForbidden},
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
	{0x40045436, "TIOCSIG", KindWrite},    // _IOW('T', 0x36, int): a signal to the foreground process group of a master's slave
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

// IoctlName is a command the filter lets through without a stop.
type IoctlName struct {
	Cmd  uint32
	Name string
}

// IoctlAllowed are the ioctl commands the filter allows without a stop
// (issue 16: the policy is an allow-list; every other command stops and is
// decided). Each only reads, or only acts on its own fd or on the open
// file behind it, whatever file that is: terminal and pty queries, fd
// flags, socket and interface queries, inode information, the clones that
// need the destination fd opened for writing (its open was checked).
// Commands that change a terminal are not here: Ioctls decides them
// (tracecell's own terminal and the tree's own ptys only).
//
// Measured on Debian 12 (Python 3.11.2, numpy 1.24.2, pandas 1.5.3,
// matplotlib 3.6.3, sqlite3 3.40.1, git 2.39.5, bash 5.2.15, coreutils 9.1),
// kernel 6.18, with
//
//	strace -f -qq -X raw -e trace=ioctl -e signal=none -o OUT CMD
//
// for: python3 -c pass; testdata/ioctl/measure.py, which imports
// numpy, pandas and matplotlib (Agg) and saves PNG, SVG and PDF, uses
// sqlite3, subprocess, pty.fork with bash -c 'stty -a; tput cols',
// os.openpty with termios.tcgetattr/tcsetattr/tcflush/tcdrain,
// TIOCSWINSZ/TIOCGWINSZ, os.get_terminal_size, shutil.get_terminal_size,
// os.ttyname/isatty, FIONREAD on a TCP socket, a socketpair and a pipe,
// socket.if_nameindex/if_nametoindex, SIOCGIFCONF, SIOCGIFINDEX,
// SIOCGIFFLAGS, FIOCLEX/FIONCLEX/FIONBIO and multiprocessing.Pool;
// interactive bash -i and python3 -i in a pty (ls --color -l, stty size;
// testdata/ioctl/interactive.py); bash -c with a pipe, ls -l --color=auto,
// the sqlite3 shell, and git init/add/commit/status/log
// (testdata/ioctl/shell.sh), with a terminal and without. They issued
//
//	0x5401 TCGETS        0x540f TIOCGPGRP    0x5413 TIOCGWINSZ
//	0x541b FIONREAD      0x5421 FIONBIO      0x5441 TIOCGPTPEER
//	0x5450 FIONCLEX      0x5451 FIOCLEX      0x40045431 TIOCSPTLCK
//	0x8912 SIOCGIFCONF   0x8913 SIOCGIFFLAGS 0x8933 SIOCGIFINDEX
//
// which pass here, and the terminal changes TCSETS, TCSETSW, TCSETSF,
// TCSBRK, TCFLSH, TIOCSCTTY, TIOCSPGRP, TIOCSWINSZ and TIOCGPTN, which
// Ioctls decides. The rest of the list are the read-side twins of these
// (the other terminal, socket-interface and inode queries) that other
// runtimes and tools issue.
var IoctlAllowed = []IoctlName{
	// asm-generic/ioctls.h and fs/ioctl.c do_vfs_ioctl: fd flags.
	{0x5451, "FIOCLEX"},
	{0x5450, "FIONCLEX"},
	{0x5421, "FIONBIO"},  // O_NONBLOCK, like fcntl(F_SETFL) without O_ASYNC
	{0x541b, "FIONREAD"}, // = TIOCINQ, SIOCINQ: bytes waiting
	{0x5460, "FIOQSIZE"},
	{0x2, "FIGETBSZ"},
	{0x1, "FIBMAP"}, // CAP_SYS_RAWIO; reads the block map
	// Terminal queries (drivers/tty/tty_io.c, n_tty.c).
	{0x5401, "TCGETS"},
	{0x5405, "TCGETA"},
	{0x802c542a, "TCGETS2"}, // _IOR('T', 0x2A, struct termios2)
	{0x5432, "TCGETX"},
	{0x540f, "TIOCGPGRP"},
	{0x5429, "TIOCGSID"},
	{0x5411, "TIOCOUTQ"}, // = SIOCOUTQ
	{0x5413, "TIOCGWINSZ"},
	{0x5415, "TIOCMGET"},
	{0x5419, "TIOCGSOFTCAR"},
	{0x541e, "TIOCGSERIAL"},
	{0x5424, "TIOCGETD"},
	{0x542e, "TIOCGRS485"},
	{0x5456, "TIOCGLCKTRMIOS"},
	{0x5459, "TIOCSERGETLSR"},
	{0x545d, "TIOCGICOUNT"},
	{0x80045432, "TIOCGDEV"},
	{0x80045438, "TIOCGPKT"},
	{0x80045439, "TIOCGPTLCK"},
	{0x80045440, "TIOCGEXCL"},
	// A pty master: lock or unlock its slave (unlockpt), open the slave
	// (openpty, 4.13), packet mode. They act on the pty behind the fd,
	// which is the tree's own when it made it through /dev/ptmx.
	{0x40045431, "TIOCSPTLCK"},
	{0x5441, "TIOCGPTPEER"},
	{0x5420, "TIOCPKT"},
	// Virtual console and keyboard queries (linux/vt.h, linux/kd.h).
	{0x5600, "VT_OPENQRY"},
	{0x5601, "VT_GETMODE"},
	{0x5603, "VT_GETSTATE"},
	{0x4b31, "KDGETLED"},
	{0x4b33, "KDGKBTYPE"},
	{0x4b3b, "KDGETMODE"},
	{0x4b44, "KDGKBMODE"},
	// Sockets (linux/sockios.h): the socket's own state and the
	// interface queries of net/core/dev_ioctl.c (SIOCGIF*: reads only).
	{0x8903, "FIOGETOWN"},
	{0x8904, "SIOCGPGRP"},
	{0x8905, "SIOCATMARK"},
	{0x8906, "SIOCGSTAMP_OLD"},
	{0x8907, "SIOCGSTAMPNS_OLD"},
	{0x80108906, "SIOCGSTAMP_NEW"},   // _IOR(0x89, 6, long long[2])
	{0x80108907, "SIOCGSTAMPNS_NEW"}, // _IOR(0x89, 7, long long[2])
	{0x894b, "SIOCOUTQNSD"},
	{0x8910, "SIOCGIFNAME"},
	{0x8912, "SIOCGIFCONF"},
	{0x8913, "SIOCGIFFLAGS"},
	{0x8915, "SIOCGIFADDR"},
	{0x8917, "SIOCGIFDSTADDR"},
	{0x8919, "SIOCGIFBRDADDR"},
	{0x891b, "SIOCGIFNETMASK"},
	{0x891d, "SIOCGIFMETRIC"},
	{0x8921, "SIOCGIFMTU"},
	{0x8927, "SIOCGIFHWADDR"},
	{0x8933, "SIOCGIFINDEX"},
	{0x8935, "SIOCGIFPFLAGS"},
	{0x8938, "SIOCGIFCOUNT"},
	{0x8942, "SIOCGIFTXQLEN"},
	{0x8970, "SIOCGIFMAP"},
	{0x8954, "SIOCGARP"},
	// Inode and file-system information (linux/fs.h, fscrypt.h,
	// fsverity.h). FS_IOC_GET_ENCRYPTION_POLICY is _IOW-encoded but only
	// reads; FS_IOC_GET_ENCRYPTION_PWSALT, which may write, is in Ioctls.
	{0x80086601, "FS_IOC_GETFLAGS"},
	{0x80046601, "FS_IOC32_GETFLAGS"},
	{0x80087601, "FS_IOC_GETVERSION"},
	{0x80047601, "FS_IOC32_GETVERSION"},
	{0x801c581f, "FS_IOC_FSGETXATTR"},
	{0xc020660b, "FS_IOC_FIEMAP"},
	{0xc0c0583b, "FS_IOC_GETFSMAP"},
	{0x81009431, "FS_IOC_GETFSLABEL"},
	{0x400c6615, "FS_IOC_GET_ENCRYPTION_POLICY"},
	{0xc0096616, "FS_IOC_GET_ENCRYPTION_POLICY_EX"},
	{0xc080661a, "FS_IOC_GET_ENCRYPTION_KEY_STATUS"},
	{0x8010661b, "FS_IOC_GET_ENCRYPTION_NONCE"},
	{0xc0046686, "FS_IOC_MEASURE_VERITY"},
	{0xc0286687, "FS_IOC_READ_VERITY_METADATA"},
	{0x80089419, "BTRFS_IOC_SUBVOL_GETFLAGS"},
	{0x80047210, "FAT_IOCTL_GET_ATTRIBUTES"},
	// Block device sizes (block/ioctl.c), read by tools that size a file
	// or device.
	{0x1260, "BLKGETSIZE"},
	{0x1268, "BLKSSZGET"},
	{0x127b, "BLKPBSZGET"},
	{0x80081272, "BLKGETSIZE64"},
	{0x80045200, "RNDGETENTCNT"},
	// Reflink copies (cp --reflink, the default of coreutils 9): the fd
	// is the destination and must be open for writing
	// (vfs_clone_file_range: EBADF otherwise), so its open was checked;
	// the source fd is only read.
	{0x40049409, "FICLONE"},
	{0x4020940d, "FICLONERANGE"},
}

// ioctlAllowedCmds holds IoctlAllowed's numbers, sorted.
var ioctlAllowedCmds = func() []uint32 {
	out := make([]uint32, len(IoctlAllowed))
	for i, a := range IoctlAllowed {
		out[i] = a.Cmd
	}
	slices.Sort(out)
	return out
}()

// IoctlAllowedCmds returns the numbers of IoctlAllowed, sorted, for the
// filter.
func IoctlAllowedCmds() []uint32 { return slices.Clone(ioctlAllowedCmds) }

// IoctlPasses reports whether cmd is in IoctlAllowed.
func IoctlPasses(cmd uint32) bool {
	_, ok := slices.BinarySearch(ioctlAllowedCmds, cmd)
	return ok
}

// FIDEDUPERANGE shares the extents of its fd's file with the files of the
// destination fds in its argument: _IOWR(0x94, 54, struct
// file_dedupe_range), linux/fs.h. The tracer decides each destination too.
const FIDEDUPERANGE = 0xc0189436

// ioctlNames names commands in neither table that the tracer decides on
// what their fd points to, for reports.
var ioctlNames = map[uint32]string{
	0xc0189436: "FIDEDUPERANGE",
	TIOCNOTTY:  "TIOCNOTTY",
	0x40047211: "FAT_IOCTL_SET_ATTRIBUTES",
	0x4c00:     "LOOP_SET_FD",
	0x4c01:     "LOOP_CLR_FD",
	0x4c02:     "LOOP_SET_STATUS",
	0x4c04:     "LOOP_SET_STATUS64",
	0x4c0a:     "LOOP_CONFIGURE",
	0x4c80:     "LOOP_CTL_ADD",
	0x4c81:     "LOOP_CTL_REMOVE",
	0x4c82:     "LOOP_CTL_GET_FREE",
	0x400454ca: "TUNSETIFF",
	0x8946:     "SIOCETHTOOL",
	0x8914:     "SIOCSIFFLAGS",
	0x8916:     "SIOCSIFADDR",
	0x890b:     "SIOCADDRT",
	0x890c:     "SIOCDELRT",
	0x9408:     "BTRFS_IOC_SYNC",
	0x5000940f: "BTRFS_IOC_SNAP_DESTROY",
	0x5000943f: "BTRFS_IOC_SNAP_DESTROY_V2",
	0x40089413: "BTRFS_IOC_DEFAULT_SUBVOL",
	0x50009403: "BTRFS_IOC_RESIZE",
	0x5000940a: "BTRFS_IOC_ADD_DEV",
	0x8400941f: "BTRFS_IOC_FS_INFO",
}

// FormatIoctl names an ioctl command for reports: its name where known,
// else its number in hex.
func FormatIoctl(cmd uint32) string {
	if s, ok := LookupIoctl(cmd); ok {
		return s.Name
	}
	if i := slices.IndexFunc(IoctlAllowed, func(a IoctlName) bool { return a.Cmd == cmd }); i >= 0 {
		return IoctlAllowed[i].Name
	}
	if n, ok := ioctlNames[cmd]; ok {
		return n
	}
	return "0x" + strconv.FormatUint(uint64(cmd), 16)
}

// IoctlType is the type (magic) byte of an _IOC command.
func IoctlType(cmd uint32) uint32 { return cmd >> 8 & 0xff }

// SockIocType is the type of the socket commands of linux/sockios.h (0x89):
// interfaces, routes, ARP, bridges, VLANs (net/core/dev_ioctl.c,
// net/ipv4/af_inet.c inet_ioctl). Setting any of them changes the
// network of every process in the namespace, the host's.
const SockIocType = 0x89

// IoctlFamily reports the family of cmd when its commands act on a whole
// file system or console rather than on the file fd points to, so that
// a command of it that neither table lists is never allowed, whatever fd
// it is made on: a writable root is a subtree of a file system the host
// shares. The generic commands that share these numbers (FICLONE,
// FIDEDUPERANGE, FS_IOC_FSGETXATTR, ...) are in the tables or excepted.
//
//   - 0x94, btrfs (linux/btrfs.h): subvolumes and snapshots by name or id,
//     devices, balance, scrub, quotas, send, the default subvolume,
//     labels and features of the whole file system.
//   - 'X' (0x58), XFS (xfs_fs.h) and the generic fs-wide commands: growfs,
//     handle operations (XFS_IOC_OPEN_BY_HANDLE opens any file of the
//     file system by its handle, for writing too), reserved blocks,
//     shutdown, freeze, discard.
//   - 0xf5, f2fs (linux/f2fs.h): garbage collection, checkpoints, resize,
//     device flushes, compression and pinning of its segments.
//   - 'o' (0x6f), OCFS2 (fs/ocfs2/ocfs2_ioctl.h): reflink by pathname,
//     online resize, and UBI's volume commands, whose devices are not
//     files of a root anyway.
//   - 'K' (0x4b), the console keyboard and display (linux/kd.h): key
//     maps, fonts, modes and LEDs of every virtual console.
func IoctlFamily(cmd uint32) (string, bool) {
	switch IoctlType(cmd) {
	case 0x94:
		if cmd == FIDEDUPERANGE { // decided on its fd and its destinations' (decode: dedupeOp)
			return "", false
		}
		return "btrfs", true
	case 'X':
		return "XFS/file system", true
	case 0xf5:
		return "f2fs", true
	case 'o':
		return "OCFS2", true
	case 'K':
		return "console keyboard/display", true
	}
	return "", false
}
