package filter

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/tracecell/tracecell/syscalls"
)

var tables = []*syscalls.Table{syscalls.AMD64, syscalls.ARM64}

// seccompData encodes struct seccomp_data for golang.org/x/net/bpf's VM.
// The kernel runs seccomp loads in host byte order (little-endian on both
// ABIs), but the VM is a packet filter: its 32-bit loads are big-endian. So
// every 32-bit word is written big-endian at the offset where a
// little-endian kernel keeps it: an argument's low word at 16+8i, its high
// word at 16+8i+4. The program then sees exactly the values the kernel
// would give it.
func seccompData(nr, arch uint32, args [6]uint64) []byte {
	b := make([]byte, SeccompDataSize)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], arch)
	binary.BigEndian.PutUint32(b[8:], 0x401000) // instruction pointer, low word
	for i, a := range args {
		binary.BigEndian.PutUint32(b[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[offArgs+8*i+4:], uint32(a>>32))
	}
	return b
}

type machine struct {
	t   *testing.T
	tbl *syscalls.Table
	vm  *bpf.VM
}

func newMachine(t *testing.T, o Options) *machine {
	t.Helper()
	prog, err := Build(o)
	if err != nil {
		t.Fatalf("Build(%s): %v", o.Table.ABI, err)
	}
	vm, err := bpf.NewVM(prog) // rejects out-of-range jumps and a missing final return
	if err != nil {
		t.Fatalf("NewVM(%s): %v", o.Table.ABI, err)
	}
	return &machine{t: t, tbl: o.Table, vm: vm}
}

func (m *machine) runNr(nr uint32, arch uint32, args [6]uint64) uint32 {
	m.t.Helper()
	r, err := m.vm.Run(seccompData(nr, arch, args))
	if err != nil {
		m.t.Fatalf("run nr %d: %v", nr, err)
	}
	return uint32(r)
}

// run runs a call by name on the machine's own ABI.
func (m *machine) run(name string, args [6]uint64) uint32 {
	m.t.Helper()
	nr, ok := m.tbl.Nr(name)
	if !ok {
		m.t.Fatalf("%s does not exist on %s", name, m.tbl.ABI)
	}
	return m.runNr(uint32(nr), m.tbl.AuditArch, args)
}

func retName(r uint32) string {
	switch r {
	case RetAllow:
		return "ALLOW"
	case RetTrace:
		return "TRACE"
	case RetKillProcess:
		return "KILL_PROCESS"
	case RetTrap:
		return "TRAP"
	case RetENOSYS:
		return "ERRNO(ENOSYS)"
	}
	return fmt.Sprintf("%#x", r)
}

// search emits the decision code for rs alone (appendSearch into a fresh
// slice), for the tests of the search layout.
func search(rs []rule) ([]bpf.Instruction, error) { return appendSearch(nil, rs) }

// arg puts v in argument i.
func arg(i int, v uint64) [6]uint64 {
	var a [6]uint64
	a[i] = v
	return a
}

// Open flag values (asm-generic, same on both ABIs) and the ABI-specific
// O_TMPFILE.
const (
	oWronly  = 0o1
	oRdwr    = 0o2
	oCreat   = 0o100
	oExcl    = 0o200
	oTrunc   = 0o1000
	oAppend  = 0o2000
	oCloexec = 0o2000000
	oTmpBit  = 0o20000000
)

func TestFilterCases(t *testing.T) {
	const (
		cloneThread = 0x3d0f00 // what glibc's pthread_create passes
		cloneFork   = 0x1200011
		cloneVfork  = 0x4111 // CLONE_VM|CLONE_VFORK|SIGCHLD: posix_spawn
		tiocsti     = 0x5412
		tcgets      = 0x5401
		fsIocSetfl  = 0x40086602
	)
	all := Options{TrapReadOpens: true, TrapAllClones: true, TrapNet: true}
	net := Options{TrapNet: true}
	type tc struct {
		name string
		o    Options
		call string // a syscall name; empty when nr is used
		nr   uint32
		arch uint32 // 0: the table's own
		args [6]uint64
		want uint32
	}
	for _, tbl := range tables {
		tmpfile := uint64(oTmpBit) | tbl.Open.Directory
		foreign := syscalls.AMD64.AuditArch
		if tbl == syscalls.AMD64 {
			foreign = syscalls.ARM64.AuditArch
		}
		openatNr, _ := tbl.Nr("openat")
		cases := []tc{
			// Guard.
			{name: "foreign_arch", call: "openat", arch: foreign, args: arg(2, oWronly), want: RetTrap},
			{name: "foreign_arch_read", call: "read", arch: foreign, want: RetTrap},
			{name: "i386_arch", call: "read", arch: 0x40000003, want: RetTrap},
			{name: "arm32_arch", call: "read", arch: 0x40000028, want: RetTrap},
			{name: "max_plus_one", nr: uint32(tbl.Max + 1), want: RetENOSYS},
			{name: "nr_4095", nr: 4095, want: RetENOSYS},
			{name: "minus_one", nr: 0xffffffff, want: RetENOSYS},
			{name: "max_is_known", nr: uint32(tbl.Max), want: RetAllow},
			{name: "clone3", call: "clone3", args: arg(0, 0), want: RetENOSYS},
			{name: "openat2", call: "openat2", want: RetENOSYS},
			{name: "clone3_all", o: all, call: "clone3", want: RetENOSYS},

			// The cwd: always seen by the tracer (it remembers it).
			{name: "chdir", call: "chdir", want: RetTrace},
			{name: "fchdir", call: "fchdir", want: RetTrace},

			// Opens.
			{name: "openat_rdonly", call: "openat", args: arg(2, 0), want: RetAllow},
			{name: "openat_rdonly_cloexec_directory", call: "openat", args: arg(2, oCloexec|tbl.Open.Directory|tbl.Open.NoFollow), want: RetAllow},
			{name: "openat_wronly", call: "openat", args: arg(2, oWronly), want: RetTrace},
			{name: "openat_rdwr", call: "openat", args: arg(2, oRdwr), want: RetTrace},
			{name: "openat_creat", call: "openat", args: arg(2, oCreat), want: RetTrace},
			{name: "openat_creat_excl", call: "openat", args: arg(2, oCreat|oExcl|oWronly), want: RetTrace},
			{name: "openat_trunc", call: "openat", args: arg(2, oTrunc), want: RetTrace},
			{name: "openat_append", call: "openat", args: arg(2, oAppend), want: RetTrace},
			{name: "openat_tmpfile", call: "openat", args: arg(2, tmpfile|oRdwr), want: RetTrace},
			{name: "openat_tmpfile_bit_alone", call: "openat", args: arg(2, oTmpBit), want: RetTrace},
			{name: "openat_rdonly_trunc", call: "openat", args: arg(2, oTrunc), want: RetTrace},
			{name: "openat_accmode_3", call: "openat", args: arg(2, 3), want: RetTrace},
			{name: "openat_rdonly_trap_reads", o: Options{TrapReadOpens: true}, call: "openat", args: arg(2, 0), want: RetTrace},
			// The flags argument is an int: the kernel ignores the high
			// half, so garbage there must neither hide a write bit nor
			// turn a read into a trap-worthy call by itself.
			{name: "openat_hi_garbage_rdonly", call: "openat", args: arg(2, 0xffffffff00000000), want: RetAllow},
			{name: "openat_hi_garbage_wronly", call: "openat", args: arg(2, 0xffffffff00000000|oWronly), want: RetTrace},
			{name: "openat_hi_garbage_trunc", call: "openat", args: arg(2, 0x0000064300000000|oTrunc), want: RetTrace},
			{name: "openat_write_bits_only_in_hi", call: "openat", args: arg(2, uint64(syscalls.OpenWriteMask)<<32), want: RetAllow},
			// Flags of another argument must not matter.
			{name: "openat_mode_has_write_bits", call: "openat", args: [6]uint64{0, 0, 0, 0o777}, want: RetAllow},
			{name: "openat_dirfd_has_write_bits", call: "openat", args: [6]uint64{0xffffff9c, 0, 0}, want: RetAllow},

			// Clones.
			{name: "clone_thread", call: "clone", args: arg(0, cloneThread), want: RetAllow},
			{name: "clone_fork", call: "clone", args: arg(0, cloneFork), want: RetAllow},
			{name: "clone_vfork", call: "clone", args: arg(0, cloneVfork), want: RetAllow},
			{name: "clone_newuser", call: "clone", args: arg(0, syscalls.CloneNewUser|17), want: RetTrace},
			{name: "clone_untraced", call: "clone", args: arg(0, syscalls.CloneUntraced|cloneThread), want: RetTrace},
			{name: "clone_newns", call: "clone", args: arg(0, syscalls.CloneNewNS), want: RetTrace},
			{name: "clone_newnet", call: "clone", args: arg(0, syscalls.CloneNewNet), want: RetTrace},
			{name: "clone_newpid", call: "clone", args: arg(0, syscalls.CloneNewPID), want: RetTrace},
			{name: "clone_newcgroup", call: "clone", args: arg(0, syscalls.CloneNewCgroup), want: RetTrace},
			{name: "clone_newipc_hi_garbage", call: "clone", args: arg(0, 1<<40|syscalls.CloneNewIPC), want: RetTrace},
			{name: "clone_newuts", call: "clone", args: arg(0, syscalls.CloneNewUTS), want: RetTrace},
			{name: "clone_thread_trap_all", o: Options{TrapAllClones: true}, call: "clone", args: arg(0, cloneThread), want: RetTrace},

			// Always trapped.
			{name: "execve", call: "execve", want: RetTrace},
			{name: "execveat", call: "execveat", want: RetTrace},
			{name: "mkdirat", call: "mkdirat", want: RetTrace},
			{name: "unlinkat", call: "unlinkat", want: RetTrace},
			{name: "renameat2", call: "renameat2", want: RetTrace},
			{name: "linkat", call: "linkat", want: RetTrace},
			{name: "symlinkat", call: "symlinkat", want: RetTrace},
			{name: "fchmodat", call: "fchmodat", want: RetTrace},
			{name: "fchmod", call: "fchmod", want: RetTrace},
			{name: "fchownat", call: "fchownat", want: RetTrace},
			{name: "utimensat", call: "utimensat", want: RetTrace},
			{name: "fsetxattr", call: "fsetxattr", want: RetTrace},
			{name: "truncate", call: "truncate", want: RetTrace},
			{name: "bind", call: "bind", want: RetTrace},
			{name: "kill", call: "kill", want: RetTrace},
			{name: "tgkill", call: "tgkill", want: RetTrace},
			{name: "prlimit64", call: "prlimit64", want: RetTrace},
			{name: "process_vm_readv", call: "process_vm_readv", want: RetTrace},

			// Never trapped.
			{name: "read", call: "read", want: RetAllow},
			{name: "write", call: "write", want: RetAllow},
			{name: "mmap", call: "mmap", want: RetAllow},
			{name: "newfstatat", call: "newfstatat", want: RetAllow},
			{name: "fstat", call: "fstat", want: RetAllow},
			{name: "statx", call: "statx", want: RetAllow},
			{name: "faccessat", call: "faccessat", want: RetAllow},
			{name: "faccessat2", call: "faccessat2", want: RetAllow},
			{name: "getdents64", call: "getdents64", want: RetAllow},
			{name: "ftruncate", call: "ftruncate", want: RetAllow},
			{name: "close", call: "close", want: RetAllow},
			{name: "futex_private_wait", call: "futex", args: arg(1, 128), want: RetAllow},
			{name: "futex_private_cmp_requeue", call: "futex", args: arg(1, 128|4), want: RetAllow},
			{name: "futex_private_clock_rt", call: "futex", args: arg(1, 128|256|9), want: RetAllow},
			{name: "futex_private_hi_garbage", call: "futex", args: arg(1, 1<<32|128), want: RetAllow},
			{name: "futex_shared_wait", call: "futex", args: arg(1, 0), want: RetTrace},
			{name: "futex_shared_cmp_requeue", call: "futex", args: arg(1, 4), want: RetTrace},
			{name: "futex_shared_hi_private", call: "futex", args: arg(1, 128<<32|4), want: RetTrace},
			{name: "futex_wake2_private", call: "futex_wake", args: arg(3, 128|2), want: RetAllow},
			{name: "futex_wake2_shared", call: "futex_wake", args: arg(3, 2), want: RetTrace},
			{name: "futex_wait2_shared", call: "futex_wait", args: arg(3, 2), want: RetTrace},
			{name: "futex_waitv", call: "futex_waitv", want: RetTrace},
			{name: "futex_requeue", call: "futex_requeue", want: RetTrace},
			{name: "restart_syscall", call: "restart_syscall", want: RetTrace},
			{name: "rt_sigreturn", call: "rt_sigreturn", want: RetTrace},
			{name: "mq_timedreceive", call: "mq_timedreceive", want: RetTrace},
			{name: "mq_notify", call: "mq_notify", want: RetTrace},
			{name: "getxattr_reads_open", call: "getxattr", want: RetAllow},
			{name: "getxattr_reads_checked", o: Options{TrapReadOpens: true}, call: "getxattr", want: RetTrace},
			{name: "listxattr_reads_checked", o: Options{TrapReadOpens: true}, call: "llistxattr", want: RetTrace},
			{name: "inotify_add_watch_reads_checked", o: Options{TrapReadOpens: true}, call: "inotify_add_watch", want: RetTrace},
			{name: "inotify_add_watch_reads_open", call: "inotify_add_watch", want: RetAllow},
			{name: "exit_group", call: "exit_group", want: RetAllow},
			{name: "socket", call: "socket", want: RetAllow},
			{name: "newfstatat_all_options", o: all, call: "newfstatat", want: RetAllow},

			// Network.
			{name: "connect_net_allowed", call: "connect", want: RetAllow},
			{name: "connect", o: net, call: "connect", want: RetTrace},
			{name: "sendmsg", o: net, call: "sendmsg", want: RetTrace},
			{name: "sendmmsg", o: net, call: "sendmmsg", want: RetTrace},
			{name: "sendmsg_net_allowed", call: "sendmsg", want: RetAllow},
			{name: "listen", o: net, call: "listen", want: RetTrace},
			{name: "listen_net_allowed", call: "listen", want: RetAllow},
			{name: "setsockopt_ip_options", o: net, call: "setsockopt", args: arg(2, 4), want: RetTrace},
			{name: "setsockopt_ipv6_rthdr", o: net, call: "setsockopt", args: arg(2, 57), want: RetTrace},
			{name: "setsockopt_ipv6_2292rthdr", o: net, call: "setsockopt", args: arg(2, 5), want: RetTrace},
			{name: "setsockopt_reuseaddr", o: net, call: "setsockopt", args: arg(2, 2), want: RetAllow},
			{name: "setsockopt_ip_options_net_allowed", call: "setsockopt", args: arg(2, 4), want: RetAllow},
			{name: "setsockopt_ip_add_membership", o: net, call: "setsockopt", args: arg(2, 35), want: RetTrace},
			{name: "setsockopt_mcast_msfilter", o: net, call: "setsockopt", args: arg(2, 48), want: RetTrace},
			{name: "setsockopt_ipv6_join_group", o: net, call: "setsockopt", args: arg(2, 20), want: RetTrace},
			{name: "setsockopt_ipv6_join_anycast", o: net, call: "setsockopt", args: arg(2, 27), want: RetTrace},
			{name: "setsockopt_ip_multicast_ttl", o: net, call: "setsockopt", args: arg(2, 33), want: RetAllow},
			{name: "setsockopt_membership_net_allowed", call: "setsockopt", args: arg(2, 35), want: RetAllow},
			{name: "socket", o: net, call: "socket", want: RetTrace},
			{name: "socket_net_allowed", call: "socket", want: RetAllow},
			{name: "sendto_null_dest", o: net, call: "sendto", args: arg(4, 0), want: RetAllow},
			{name: "sendto_dest", o: net, call: "sendto", args: arg(4, 0x7ffc12345678), want: RetTrace},
			{name: "sendto_dest_low_word_zero", o: net, call: "sendto", args: arg(4, 0x7ffc00000000), want: RetTrace},
			{name: "sendto_dest_net_allowed", call: "sendto", args: arg(4, 0x7ffc12345678), want: RetAllow},
			{name: "sendto_len_not_dest", o: net, call: "sendto", args: [6]uint64{3, 0x1000, 10, 0, 0, 16}, want: RetAllow},

			// ioctl: an allow-list (syscalls.IoctlAllowed); fcntl: only
			// the listed commands.
			{name: "ioctl_tcgets", call: "ioctl", args: arg(1, tcgets), want: RetAllow},
			{name: "ioctl_tcgets_hi_garbage", call: "ioctl", args: arg(1, 0xdead<<32|tcgets), want: RetAllow}, // the kernel sees TCGETS
			{name: "ioctl_cmd_zero", call: "ioctl", args: arg(1, 0), want: RetTrace},
			{name: "ioctl_unknown", call: "ioctl", args: arg(1, 0x12345678), want: RetTrace},
			{name: "ioctl_unknown_hi_garbage", call: "ioctl", args: arg(1, 1<<32|0x12345678), want: RetTrace},
			{name: "ioctl_tcgets_plus_one_hi", call: "ioctl", args: arg(1, 1<<32|(tcgets+0x10000)), want: RetTrace},
			{name: "ioctl_btrfs_subvol_create", call: "ioctl", args: arg(1, 0x5000940e), want: RetTrace},
			{name: "ioctl_btrfs_snap_create_v2", call: "ioctl", args: arg(1, 0x50009417), want: RetTrace},
			{name: "ioctl_btrfs_subvol_setflags", call: "ioctl", args: arg(1, 0x4008941a), want: RetTrace},
			{name: "ioctl_btrfs_subvol_setflags_hi_garbage", call: "ioctl", args: arg(1, 0xffffffff<<32|0x4008941a), want: RetTrace},
			{name: "ioctl_btrfs_subvol_getflags", call: "ioctl", args: arg(1, 0x80089419), want: RetAllow},
			{name: "ioctl_loop_clr_fd", call: "ioctl", args: arg(1, 0x4c01), want: RetTrace},
			{name: "ioctl_fat_set_attributes", call: "ioctl", args: arg(1, 0x40047211), want: RetTrace},
			{name: "ioctl_remove_encryption_key", call: "ioctl", args: arg(1, 0xc0406618), want: RetTrace},
			{name: "ioctl_ocfs2_reflink", call: "ioctl", args: arg(1, 0x40186f04), want: RetTrace},
			{name: "ioctl_siocsifflags", call: "ioctl", args: arg(1, 0x8914), want: RetTrace},
			{name: "ioctl_fionread", call: "ioctl", args: arg(1, 0x541b), want: RetAllow},
			{name: "ioctl_tiocsti", call: "ioctl", args: arg(1, tiocsti), want: RetTrace},
			{name: "ioctl_tiocsti_hi_garbage", call: "ioctl", args: arg(1, 1<<32|tiocsti), want: RetTrace},
			{name: "ioctl_setflags", call: "ioctl", args: arg(1, fsIocSetfl), want: RetTrace},
			{name: "ioctl_cmd_in_fd_arg", call: "ioctl", args: [6]uint64{tiocsti, tcgets}, want: RetAllow},
			{name: "ioctl_fifreeze_in_fd_arg", call: "ioctl", args: [6]uint64{0xc0045877, tcgets}, want: RetAllow},
			{name: "ioctl_tcgets_in_arg2", call: "ioctl", args: [6]uint64{3, 0x5412, tcgets}, want: RetTrace},
			{name: "ioctl_userfaultfd_new", call: "ioctl", args: arg(1, 0xaa00), want: RetTrace},
			{name: "fcntl_getfl", call: "fcntl", args: arg(1, 3), want: RetAllow},
			{name: "fcntl_setfd", call: "fcntl", args: arg(1, 2), want: RetAllow},
			{name: "fcntl_setown", call: "fcntl", args: arg(1, syscalls.FcntlSetOwn), want: RetTrace},
			{name: "fcntl_setdeleg", call: "fcntl", args: arg(1, syscalls.FcntlSetDeleg), want: RetTrace},
			{name: "fcntl_setlease", call: "fcntl", args: arg(1, syscalls.FcntlSetLease), want: RetTrace},
			{name: "fcntl_setfl", call: "fcntl", args: arg(1, syscalls.FcntlSetFl), want: RetTrace},
			{name: "ioctl_fioasync", call: "ioctl", args: arg(1, 0x5452), want: RetTrace},
			{name: "ioctl_fionbio", call: "ioctl", args: arg(1, 0x5421), want: RetAllow}, // Python's setblocking
			{name: "fcntl_setlease_hi_garbage", call: "fcntl", args: arg(1, 7<<32|syscalls.FcntlSetLease), want: RetTrace},
			{name: "fcntl_getlease", call: "fcntl", args: arg(1, 1025), want: RetAllow},
			{name: "fcntl_setlk", call: "fcntl", args: arg(1, 6), want: RetAllow}, // F_SETLK: sqlite's read locks
			{name: "fcntl_lease_cmd_in_fd_arg", call: "fcntl", args: arg(0, syscalls.FcntlSetLease), want: RetAllow},
			{name: "fcntl_setown_ex_hi_garbage", call: "fcntl", args: arg(1, 0xdead<<32|syscalls.FcntlSetOwnEx), want: RetTrace},
			{name: "seccomp_filter", call: "seccomp", args: [6]uint64{1, 1}, want: RetAllow}, // SET_MODE_FILTER, TSYNC
			{name: "seccomp_new_listener", call: "seccomp", args: [6]uint64{1, syscalls.SeccompFilterFlagNewListener}, want: RetTrace},
			// prctl: only PR_SET_MM (its option is an int).
			{name: "prctl_set_name", call: "prctl", args: arg(0, 15), want: RetAllow}, // PR_SET_NAME
			{name: "prctl_set_thp_disable", call: "prctl", args: arg(0, 41), want: RetAllow},
			{name: "prctl_set_mm", call: "prctl", args: [6]uint64{syscalls.PrSetMM, 14, 0x7ffc12345678, 104}, want: RetTrace}, // PR_SET_MM_MAP
			{name: "prctl_set_mm_hi_garbage", call: "prctl", args: arg(0, 1<<32|syscalls.PrSetMM), want: RetTrace},
			{name: "prctl_set_mm_in_arg1", call: "prctl", args: arg(1, syscalls.PrSetMM), want: RetAllow},
			{name: "prctl_set_dumpable", call: "prctl", args: arg(0, syscalls.PrSetDumpable), want: RetTrace},
			{name: "prctl_get_dumpable", call: "prctl", args: arg(0, 3), want: RetAllow}, // PR_GET_DUMPABLE

			// The nr of openat with a read-only flags word that equals
			// another trapped call's number: the accumulator must not
			// be reused (go-seccomp-bpf v1.6.0 traps this one).
			{name: "openat_flags_equal_some_nr", call: "openat", args: arg(2, 0o4), want: RetAllow},
			{name: "openat_by_nr", nr: uint32(openatNr), args: arg(2, oWronly), want: RetTrace},
		}
		// File-changing ioctls that work on a read-only fd, by the
		// numbers the kernel headers give (not syscalls.Ioctls), each as
		// ioctl(3, cmd, ptr) and with garbage in the high half of cmd.
		for _, io := range []struct {
			name string
			cmd  uint64
		}{
			{"ext4_ioc_setversion", 0x40086604},
			{"ext4_ioc32_setversion", 0x40046604},
			{"fs_ioc_setversion", 0x40087602},
			{"fs_ioc32_setversion", 0x40047602},
			{"fs_ioc32_setflags", 0x40046602},
			{"fs_ioc_fssetxattr", 0x401c5820},
			{"ext4_ioc_migrate", 0x6609},
			{"fifreeze", 0xc0045877},
			{"fithaw", 0xc0045878},
			{"fs_ioc_setfslabel", 0x41009432},
			{"ext4_ioc_shutdown", 0x8004587d},
			{"ext4_ioc_group_extend", 0x40086607},
			{"ext4_ioc_group_add", 0x40286608},
			{"ext4_ioc_resize_fs", 0x40086610},
			{"ext4_ioc_setfsuuid", 0x4008662c},
			{"ext4_ioc_set_tune_sb_param", 0x40e8662e},
			{"ext4_ioc_swap_boot", 0x6611},
			{"tiocgptn", 0x80045430}, // not a change: the tracer records the tree's own pty at its exit
			// Terminal changes through a read-only fd (another user's pts).
			{"tcsets", 0x5402},
			{"tcsetsf2", 0x402c542d},
			{"tiocswinsz", 0x5414},
			{"tcflsh", 0x540b},
			{"tiocsctty", 0x540e},
			{"tiocsetd", 0x5423},
		} {
			cases = append(cases,
				tc{name: "ioctl_" + io.name, call: "ioctl", args: [6]uint64{3, io.cmd, 0x7ffc12345678}, want: RetTrace},
				tc{name: "ioctl_" + io.name + "_hi_garbage", call: "ioctl", args: [6]uint64{3, 0xffffffff<<32 | io.cmd, 0x7ffc12345678}, want: RetTrace},
			)
		}
		// Their read-side twins and the commands left out on purpose.
		for _, io := range []struct {
			name string
			cmd  uint64
		}{
			{"tcgets_fd3", tcgets},
			{"tiocgwinsz", 0x5413},
			{"tcgets2", 0x802c542a},
			{"fionread", 0x541b},
			{"fs_ioc_getversion", 0x80087601},
			{"fs_ioc_getflags", 0x80086601},
			{"fs_ioc_fsgetxattr", 0x801c581f},
			{"fs_ioc_getfslabel", 0x81009431},
			{"ficlone", 0x40049409}, // the fd must be open for writing
			{"ficlonerange", 0x4020940d},
			{"tiocgptpeer", 0x5441},
			{"tiocsptlck", 0x40045431},
			{"siocgifconf", 0x8912},
			{"siocgifindex", 0x8933},
		} {
			cases = append(cases, tc{name: "ioctl_" + io.name + "_allowed", call: "ioctl", args: [6]uint64{3, io.cmd, 0x7ffc12345678}, want: RetAllow})
		}
		// Not on the allow-list any more (issue 16): they stop and are
		// decided on what their fd points to (or, for FITRIM, never
		// allowed: it discards the free blocks of a whole file system).
		for _, io := range []struct {
			name string
			cmd  uint64
		}{
			{"ext4_ioc_getversion", 0x80086603},
			{"ext4_ioc_getfsuuid", 0x8008662c},
			{"ext4_ioc_get_tune_sb_param", 0x80e8662d},
			{"fitrim", 0xc0185879},
			{"fideduperange", 0xc0189436},     // needs no writable fd (allow_file_dedupe: the owner will do)
			{"ext4_ioc_move_ext", 0xc028660f}, // both fds open for writing
		} {
			cases = append(cases, tc{name: "ioctl_" + io.name + "_decided", call: "ioctl", args: [6]uint64{3, io.cmd, 0x7ffc12345678}, want: RetTrace})
		}
		if tbl == syscalls.AMD64 {
			cases = append(cases,
				// x32: trapped; the tracer reports the call and kills (tracer/foreign.go).
				tc{name: "x32_openat", nr: syscalls.X32SyscallBit | uint32(openatNr), args: arg(2, oWronly), want: RetTrace},
				tc{name: "x32_read", nr: syscalls.X32SyscallBit, want: RetTrace},
				tc{name: "x32_execve", nr: syscalls.X32SyscallBit | 520, want: RetTrace},
				tc{name: "x32_bit_negative", nr: 0xc0000101, want: RetENOSYS},
				tc{name: "open_rdonly", call: "open", args: arg(1, 0), want: RetAllow},
				tc{name: "open_wronly", call: "open", args: arg(1, oWronly), want: RetTrace},
				tc{name: "open_flags_in_wrong_arg", call: "open", args: arg(2, oWronly), want: RetAllow},
				tc{name: "open_rdonly_trap_reads", o: Options{TrapReadOpens: true}, call: "open", want: RetTrace},
				tc{name: "creat", call: "creat", want: RetTrace},
				tc{name: "mkdir", call: "mkdir", want: RetTrace},
				tc{name: "rename", call: "rename", want: RetTrace},
				tc{name: "utime", call: "utime", want: RetTrace},
				tc{name: "stat", call: "stat", want: RetAllow},
				tc{name: "lstat", call: "lstat", want: RetAllow},
				tc{name: "access", call: "access", want: RetAllow},
				tc{name: "fork", call: "fork", want: RetAllow},
				tc{name: "vfork", call: "vfork", want: RetAllow},
				tc{name: "fork_trap_all", o: Options{TrapAllClones: true}, call: "fork", want: RetTrace},
				tc{name: "vfork_trap_all", o: Options{TrapAllClones: true}, call: "vfork", want: RetTrace},
				tc{name: "iopl", call: "iopl", want: RetTrace},
			)
		}
		for _, c := range cases {
			t.Run(tbl.ABI+"/"+c.name, func(t *testing.T) {
				c.o.Table = tbl
				m := newMachine(t, c.o)
				arch := c.arch
				if arch == 0 {
					arch = tbl.AuditArch
				}
				nr := c.nr
				if c.call != "" {
					n, ok := tbl.Nr(c.call)
					if !ok {
						t.Fatalf("%s does not exist on %s", c.call, tbl.ABI)
					}
					nr = uint32(n)
				}
				if got := m.runNr(nr, arch, c.args); got != c.want {
					t.Fatalf("nr %d (%s) args %#x: got %s, want %s", nr, tbl.Name(int(nr)), c.args, retName(got), retName(c.want))
				}
			})
		}
	}
}

// TestForbiddenTrapped: every call the tracer denies outright stops in the
// tracer, whatever the options, so that the denial is reported.
func TestForbiddenTrapped(t *testing.T) {
	for _, tbl := range tables {
		m := newMachine(t, Options{Table: tbl})
		n := 0
		for _, s := range syscalls.All() {
			if s.Handler != syscalls.HForbidden || s.Name == "seccomp" || s.Name == "prctl" {
				continue
			}
			if _, ok := tbl.Nr(s.Name); !ok {
				continue
			}
			n++
			t.Run(tbl.ABI+"/"+s.Name, func(t *testing.T) {
				if got := m.run(s.Name, [6]uint64{}); got != RetTrace {
					t.Fatalf("got %s, want TRACE", retName(got))
				}
			})
		}
		if n < 30 {
			t.Errorf("%s: only %d forbidden calls exist", tbl.ABI, n)
		}
	}
}

// conditional are the calls whose trap depends on arguments, with the
// options that make them unconditional. With all arguments zero they are
// allowed.
var conditional = map[string]func(Options) bool{
	"open":   func(o Options) bool { return o.TrapReadOpens },
	"openat": func(o Options) bool { return o.TrapReadOpens },
	"clone":  func(o Options) bool { return o.TrapAllClones },
	"sendto": never,
	// ioctl is an allow-list: command 0 is not on it and traps.
	"ioctl":      always,
	"fcntl":      never,
	"seccomp":    never,
	"prctl":      never,
	"setsockopt": never,
	// With PathPage: address 0, length 0 and no flags reach no page.
	"mmap":             never,
	"munmap":           never,
	"mprotect":         never,
	"pkey_mprotect":    never,
	"madvise":          never,
	"remap_file_pages": never,
	"mremap":           never,
	"mseal":            never,
}

// never: the all-zero arguments of TestEveryNumber never trap the call.
func never(Options) bool { return false }

// always: they always do.
func always(Options) bool { return true }

// TestEveryNumber runs every number of each table through the program, so a
// mistake in the binary search (a wrong pivot or skip) cannot hide: the
// answer must agree with Trapped.
func TestEveryNumber(t *testing.T) {
	opts := []Options{{}, {TrapReadOpens: true}, {TrapAllClones: true}, {TrapNet: true}, {PathPage: true},
		{TrapReadOpens: true, TrapAllClones: true, TrapNet: true}, {TrapReadOpens: true, TrapAllClones: true, TrapNet: true, PathPage: true}}
	for _, tbl := range tables {
		for _, o := range opts {
			o.Table = tbl
			name := fmt.Sprintf("%s/reads=%v,clones=%v,net=%v,page=%v", tbl.ABI, o.TrapReadOpens, o.TrapAllClones, o.TrapNet, o.PathPage)
			t.Run(name, func(t *testing.T) {
				m := newMachine(t, o)
				trapped := map[string]bool{}
				for _, n := range Trapped(o) {
					trapped[n] = true
				}
				for nr := 0; nr <= tbl.Max+2; nr++ {
					n := tbl.Name(nr)
					want := uint32(RetAllow)
					switch {
					case nr > tbl.Max:
						want = RetENOSYS
					case n == "clone3" || n == "openat2":
						want = RetENOSYS
					case trapped[n]:
						want = RetTrace
						if uncond, ok := conditional[n]; ok && !uncond(o) {
							want = RetAllow
						}
					}
					if got := m.runNr(uint32(nr), tbl.AuditArch, [6]uint64{}); got != want {
						t.Errorf("nr %d (%s): got %s, want %s", nr, n, retName(got), retName(want))
					}
				}
			})
		}
	}
}

func TestTrapped(t *testing.T) {
	for _, tbl := range tables {
		t.Run(tbl.ABI, func(t *testing.T) {
			base := Trapped(Options{Table: tbl})
			if !sort.StringsAreSorted(base) {
				t.Fatal("Trapped is not sorted")
			}
			has := func(l []string, n string) bool {
				i := sort.SearchStrings(l, n)
				return i < len(l) && l[i] == n
			}
			for _, n := range []string{"openat", "clone", "execve", "bind", "ioctl", "ptrace", "mount", "unlinkat"} {
				if !has(base, n) {
					t.Errorf("%s not trapped by default", n)
				}
			}
			for _, n := range []string{"connect", "sendto", "sendmsg", "listen", "fork", "vfork", "clone3", "openat2", "read", "newfstatat"} {
				if has(base, n) {
					t.Errorf("%s trapped by default", n)
				}
			}
			full := Trapped(Options{Table: tbl, TrapNet: true, TrapAllClones: true})
			for _, n := range []string{"connect", "sendto", "sendmsg", "sendmmsg", "listen", "socket"} {
				if !has(full, n) {
					t.Errorf("%s not trapped with TrapNet", n)
				}
			}
			if _, ok := tbl.Nr("fork"); ok && !has(full, "fork") {
				t.Error("fork not trapped with TrapAllClones")
			}
			page := Trapped(Options{Table: tbl, PathPage: true})
			if len(page) != len(base)+len(memCalls) {
				t.Errorf("PathPage traps %d calls, want %d and the %d memory calls", len(page), len(base), len(memCalls))
			}
			for _, n := range memCalls {
				if has(base, n) || has(full, n) {
					t.Errorf("%s trapped without PathPage", n)
				}
				if !has(page, n) {
					t.Errorf("%s not trapped with PathPage", n)
				}
			}
			full = append(full, page...)
			for _, n := range full {
				if _, ok := tbl.Nr(n); !ok {
					t.Errorf("%s trapped but absent on %s", n, tbl.ABI)
				}
				if _, ok := syscalls.Lookup(n); !ok {
					t.Errorf("%s trapped without a spec: the tracer could not decode it", n)
				}
			}
		})
	}
	if got := Trapped(Options{}); got != nil {
		t.Errorf("Trapped without a table = %v, want nil", got)
	}
}

// TestProgramShape checks what the kernel's seccomp_check_filter() and
// sk_chk_filter() demand, and the size.
func TestProgramShape(t *testing.T) {
	for _, tbl := range tables {
		for _, o := range []Options{{}, {TrapReadOpens: true, TrapAllClones: true, TrapNet: true}, {PathPage: true},
			{TrapReadOpens: true, TrapAllClones: true, TrapNet: true, PathPage: true}} {
			o.Table = tbl
			t.Run(fmt.Sprintf("%s/net=%v,page=%v", tbl.ABI, o.TrapNet, o.PathPage), func(t *testing.T) {
				prog, err := Build(o)
				if err != nil {
					t.Fatal(err)
				}
				if len(prog) > MaxInstructions {
					t.Fatalf("%d instructions > %d", len(prog), MaxInstructions)
				}
				t.Logf("%s: %d instructions", tbl.ABI, len(prog))
				for i, in := range prog {
					switch v := in.(type) {
					case bpf.LoadAbsolute:
						if v.Size != 4 || v.Off%4 != 0 || v.Off >= SeccompDataSize {
							t.Errorf("%d: %v: seccomp allows only aligned 32-bit loads inside seccomp_data", i, v)
						}
					case bpf.JumpIf:
						if i+1+int(v.SkipTrue) >= len(prog) || i+1+int(v.SkipFalse) >= len(prog) {
							t.Errorf("%d: %v jumps past the end", i, v)
						}
					case bpf.Jump:
						if i+1+int(v.Skip) >= len(prog) {
							t.Errorf("%d: %v jumps past the end", i, v)
						}
					case bpf.ALUOpConstant:
						// seccomp_check_filter() takes every BPF_ALU|BPF_K
						// operation; appendMemCheck needs only and.
						if v.Op != bpf.ALUOpAnd {
							t.Errorf("%d: unexpected %v", i, v)
						}
					case bpf.RetConstant:
					default:
						t.Errorf("%d: unexpected instruction %T", i, in)
					}
				}
				if _, ok := prog[len(prog)-1].(bpf.RetConstant); !ok {
					t.Errorf("last instruction %v is not a return", prog[len(prog)-1])
				}
				raw, err := Raw(o)
				if err != nil {
					t.Fatal(err)
				}
				if len(raw) != len(prog) {
					t.Fatalf("Raw: %d instructions, Build: %d", len(raw), len(prog))
				}
				// The first instruction loads the arch: nothing runs
				// before the foreign-ABI check.
				if raw[0] != (bpf.RawInstruction{Op: 0x20, K: offArch}) {
					t.Errorf("first instruction %+v, want ld [4]", raw[0])
				}
			})
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, tbl := range tables {
		t.Run(tbl.ABI, func(t *testing.T) {
			o := Options{Table: tbl, TrapNet: true}
			a, err := Raw(o)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				b, err := Raw(o)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("build %d differs from the first", i+2)
				}
			}
		})
	}
}

func TestNoTable(t *testing.T) {
	if _, err := Build(Options{}); err == nil {
		t.Fatal("Build without a table succeeded")
	}
	if _, err := Raw(Options{}); err == nil {
		t.Fatal("Raw without a table succeeded")
	}
}

// TestLongJumps builds searches large enough to need ja for the left
// subtree and checks them in the VM.
func TestLongJumps(t *testing.T) {
	var rs []rule
	for i := 0; i < 400; i++ {
		r := rule{nr: uint32(2 * i), name: fmt.Sprint("call", i), ret: RetTrace}
		if i%3 == 0 {
			r.c = &cond{arg: i % 6, anyBits: true, mask: 0x10}
		}
		rs = append(rs, r)
	}
	body, err := search(rs)
	if err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, in := range body {
		if _, ok := in.(bpf.Jump); ok {
			long++
		}
	}
	if long == 0 {
		t.Fatal("no long jump generated: the test does not cover the case")
	}
	prog := append([]bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}, body...)
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	for nr := uint32(0); nr < 805; nr++ {
		want := uint32(RetAllow)
		var a [6]uint64
		if nr%2 == 0 && nr/2 < 400 {
			i := int(nr / 2)
			want = RetTrace
			if i%3 == 0 {
				a[i%6] = 0x10
			}
		}
		r, err := vm.Run(seccompData(nr, 0, a))
		if err != nil {
			t.Fatal(err)
		}
		if uint32(r) != want {
			t.Fatalf("nr %d: got %s, want %s", nr, retName(uint32(r)), retName(want))
		}
		if nr%2 == 0 && nr/2 < 400 && (nr/2)%3 == 0 {
			// Without the flag bit the conditional call is allowed.
			r, _ := vm.Run(seccompData(nr, 0, [6]uint64{}))
			if uint32(r) != RetAllow {
				t.Fatalf("nr %d without flag: got %s, want ALLOW", nr, retName(uint32(r)))
			}
		}
	}
}

// TestSearchMatchesReference compares the in-place code generation with
// the straightforward recursive one it replaced (each half built as its own
// list, then joined), instruction for instruction, for rule sets of every
// size up to 400, with conditions of every kind and long jumps.
func TestSearchMatchesReference(t *testing.T) {
	var refLeaf func([]rule) []bpf.Instruction
	var refSearch func([]rule) []bpf.Instruction
	refLeaf = func(rs []rule) []bpf.Instruction {
		var out []bpf.Instruction
		for _, r := range rs {
			block := []bpf.Instruction{bpf.RetConstant{Val: r.ret}}
			if r.c != nil {
				block = appendArgCheck(nil, *r.c)
			}
			out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipFalse: uint8(len(block))})
			out = append(out, block...)
		}
		return append(out, bpf.RetConstant{Val: RetAllow})
	}
	refSearch = func(rs []rule) []bpf.Instruction {
		if len(rs) <= leafSize {
			return refLeaf(rs)
		}
		mid := len(rs) / 2
		left, right := refSearch(rs[:mid]), refSearch(rs[mid:])
		pivot := rs[mid-1].nr
		var out []bpf.Instruction
		if len(left) <= 255 {
			out = append(out, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: pivot, SkipTrue: uint8(len(left))})
		} else {
			out = append(out, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: pivot, SkipFalse: 1}, bpf.Jump{Skip: uint32(len(left))})
		}
		return append(append(out, left...), right...)
	}
	var rs []rule
	for i := 0; i <= 400; i++ {
		got, err := search(rs)
		if err != nil {
			t.Fatal(err)
		}
		if want := refSearch(rs); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d rules: search differs from the reference", len(rs))
		}
		r := rule{nr: uint32(3 * i), name: fmt.Sprint("call", i), ret: RetTrace}
		switch i % 6 {
		case 1:
			r.c = &cond{arg: i % 6, anyBits: true, mask: 0x10}
		case 2:
			r.c = &cond{arg: i % 6, nonZero64: true}
		case 3:
			r.c = &cond{arg: 1, vals: []uint32{1, 2, uint32(i)}}
		case 4:
			r.ret = RetENOSYS
		case 5:
			r.c = &cond{mem: []syscalls.MemRange{{Addr: 0, Len: 1, FlagsArg: -1}, {Addr: 4, Len: 2, FlagsArg: 3, FlagsMask: 2}}}
		}
		rs = append(rs, r)
	}
}

// memCalls are the syscalls.HMem calls: trapped only with PathPage.
var memCalls = []string{"madvise", "mmap", "mprotect", "mremap", "mseal", "munmap", "pkey_mprotect", "process_madvise", "remap_file_pages"}

// Memory call flags (the same on x86_64 and arm64).
const (
	protRead         = 0x1
	mapPrivate       = 0x2
	mapAnonymous     = 0x20
	mapFixedNoreplac = 0x100000 // MAP_FIXED_NOREPLACE
	madvDontneed     = 4
	mremapMaymove    = 0x1
	mremapDontunmap  = 0x4

	gib     = uint64(1) << 30
	page    = syscalls.PathPageAddr
	pageEnd = syscalls.PathPageAddr + syscalls.PathPageSize
	elsewhr = 0x7f12_3456_0000 // a typical mmap address
)

// rangeCall puts the range [addr, addr+n) where a memory call takes it, the
// other arguments being what a program passes for the range to be used.
type rangeCall struct {
	name, call string
	args       func(addr, n uint64) [6]uint64
}

var rangeCalls = []rangeCall{
	{"mmap_fixed", "mmap", func(a, n uint64) [6]uint64 {
		return [6]uint64{a, n, protRead, syscalls.MapFixed | mapPrivate | mapAnonymous, ^uint64(0), 0}
	}},
	{"munmap", "munmap", func(a, n uint64) [6]uint64 { return [6]uint64{a, n} }},
	{"mprotect", "mprotect", func(a, n uint64) [6]uint64 { return [6]uint64{a, n, protRead} }},
	{"pkey_mprotect", "pkey_mprotect", func(a, n uint64) [6]uint64 { return [6]uint64{a, n, protRead, 1} }},
	{"madvise", "madvise", func(a, n uint64) [6]uint64 { return [6]uint64{a, n, madvDontneed} }},
	{"remap_file_pages", "remap_file_pages", func(a, n uint64) [6]uint64 { return [6]uint64{a, n} }},
	{"mseal", "mseal", func(a, n uint64) [6]uint64 { return [6]uint64{a, n} }},
	// mremap's old range, moved to a place of the kernel's choosing.
	{"mremap_old", "mremap", func(a, n uint64) [6]uint64 { return [6]uint64{a, n, n, mremapMaymove, 0} }},
	// mremap's new range: an ordinary old range moved there.
	{"mremap_new", "mremap", func(a, n uint64) [6]uint64 {
		return [6]uint64{elsewhr, 0x1000, n, mremapMaymove | syscalls.MremapFixed, a}
	}},
}

func TestPathPage(t *testing.T) {
	type tc struct {
		name string
		addr uint64
		n    uint64
		trap bool
	}
	ranges := []tc{
		{"page_start", page, 0x1000, true},
		{"page_last_byte", pageEnd - 1, 1, true},
		{"page_second_slot", page + 4096, 4096, true},
		{"whole_page", page, syscalls.PathPageSize, true},
		{"page_len_0", page, 0, true},
		// [4 GiB, 8 GiB): left to the tracer, even when the range
		// ends before the page.
		{"at_4GiB", 4 * gib, 0x1000, true},
		{"at_6GiB", 6 * gib, 0x1000, true},
		{"just_below_page", page - 0x1000, 0x1000, true},
		{"across_page_start", page - 0x1000, 0x2000, true},
		// Below 4 GiB with a length of 4 GiB or more.
		{"low_len_8GiB", 0x400000, 8 * gib, true},
		{"low_len_4GiB", 0, 4 * gib, true},
		{"low_len_huge", 0x400000, 1 << 47, true},
		// Tagged pointers to the page: arm64's top byte, x86_64 LAM's
		// bits 57-62. The kernel untags munmap, mprotect, madvise and
		// mremap's old address.
		{"arm64_tag", 0x2a<<56 | page, 0x1000, true},
		{"lam57_tag", 0x3f<<57 | page + 0x3000, 0x1000, true},
		{"all_tag_bits", 0x7fff<<48 | page, 0x1000, true},

		{"typical_mmap", elsewhr, 0x1000, false},
		{"typical_pie", 0x5555_5555_4000, 0x21000, false},
		{"arm64_top", 0xffff_8000_0000, 0x1000, false},
		{"arm64_stack", 0xffff_f7ff_0000, 0x10000, false},
		{"non_pie", 0x400000, 0x1000, false},
		{"non_pie_4GiB_minus_1", 0x400000, 4*gib - 1, false},
		{"page_end", pageEnd, 0x1000, false},
		{"page_end_huge_len", pageEnd, 1 << 40, false},
		{"null_small", 0, 0x1000, false},
		{"null_zero", 0, 0, false},
		{"at_12GiB", 12 * gib, 0x1000, false},
		{"at_12GiB_long", 12 * gib, 8 * gib, false},
		{"typical_long", elsewhr, 1 << 40, false},
		{"tagged_elsewhere", 0x2a<<56 | elsewhr, 0x1000, false},
		{"x86_vsyscall", 0xffff_ffff_ff60_0000, 0x1000, false},
		{"all_ones", ^uint64(0), 0x1000, false},
	}
	type special struct {
		name string
		call string
		args [6]uint64
		trap bool
	}
	fixedPriv := uint64(syscalls.MapFixed | mapPrivate)
	anon := uint64(mapPrivate | mapAnonymous)
	specials := []special{
		{"mmap_hint_in_page", "mmap", [6]uint64{page, 0x1000, protRead, anon, ^uint64(0)}, false},
		{"mmap_fixed_private_in_page", "mmap", [6]uint64{page, 0x1000, protRead, fixedPriv, 3}, true},
		{"mmap_fixed_noreplace_in_page", "mmap", [6]uint64{page, 0x1000, protRead, mapFixedNoreplac | anon, ^uint64(0)}, false},
		// The high half of flags holds no flag the check looks at.
		{"mmap_hi_garbage_no_fixed", "mmap", [6]uint64{page, 0x1000, protRead, 0xffffffff<<32 | anon, ^uint64(0)}, false},
		{"mmap_fixed_only_in_hi", "mmap", [6]uint64{page, 0x1000, protRead, syscalls.MapFixed<<32 | anon, ^uint64(0)}, false},
		{"mmap_hi_garbage_fixed", "mmap", [6]uint64{page, 0x1000, protRead, 1<<36 | fixedPriv, 3}, true},
		{"mmap_fixed_elsewhere", "mmap", [6]uint64{elsewhr, 0x1000, protRead, fixedPriv, 3}, false},
		{"mmap_zero", "mmap", [6]uint64{}, false},
		{"mremap_new_in_page_fixed", "mremap", [6]uint64{elsewhr, 0x1000, 0x1000, mremapMaymove | syscalls.MremapFixed, page}, true},
		{"mremap_new_in_page_no_fixed", "mremap", [6]uint64{elsewhr, 0x1000, 0x1000, mremapMaymove, page}, false},
		{"mremap_new_in_page_dontunmap", "mremap", [6]uint64{elsewhr, 0x1000, 0x1000, mremapMaymove | mremapDontunmap, page}, false},
		{"mremap_fixed_only_in_hi", "mremap", [6]uint64{elsewhr, 0x1000, 0x1000, syscalls.MremapFixed<<32 | mremapMaymove, page}, false},
		{"mremap_fixed_elsewhere", "mremap", [6]uint64{elsewhr, 0x1000, 0x2000, mremapMaymove | syscalls.MremapFixed, elsewhr + 1<<30}, false},
		// The new range is not used without MREMAP_FIXED, the old one
		// always.
		{"mremap_old_in_page", "mremap", [6]uint64{page, 0x1000, 0x2000, mremapMaymove, elsewhr}, true},
		{"mremap_grow_in_place", "mremap", [6]uint64{elsewhr, 0x1000, 0x2000, 0, 0}, false},
		{"mremap_new_len_long_fixed_low", "mremap", [6]uint64{elsewhr, 0x1000, 8 * gib, mremapMaymove | syscalls.MremapFixed, 0x10000}, true},
	}
	for _, tbl := range tables {
		for _, on := range []bool{true, false} {
			m := newMachine(t, Options{Table: tbl, PathPage: on})
			want := func(trap bool) uint32 {
				if trap && on {
					return RetTrace
				}
				return RetAllow
			}
			prefix := fmt.Sprintf("%s/page=%v/", tbl.ABI, on)
			for _, rc := range rangeCalls {
				for _, c := range ranges {
					t.Run(prefix+rc.name+"/"+c.name, func(t *testing.T) {
						args := rc.args(c.addr, c.n)
						if got, w := m.run(rc.call, args), want(c.trap); got != w {
							t.Fatalf("%s%#x: got %s, want %s", rc.call, args, retName(got), retName(w))
						}
					})
				}
			}
			for _, c := range specials {
				t.Run(prefix+c.name, func(t *testing.T) {
					if got, w := m.run(c.call, c.args), want(c.trap); got != w {
						t.Fatalf("%s%#x: got %s, want %s", c.call, c.args, retName(got), retName(w))
					}
				})
			}
		}
	}
}

// TestMemCheckModel runs every memory call over a grid of addresses and
// lengths and compares the program's answer with the register test it is
// meant to implement (appendMemCheck), and that test with the truth: a
// range that reaches the page, whatever untagging the kernel applies and
// however it rounds the length, must trap.
func TestMemCheckModel(t *testing.T) {
	addrs := []uint64{0, 1, 0x1000, 0x400000, 1<<32 - 1, 1 << 32, 1<<32 + 0x1000, 6 * gib,
		page - 0x1000, page - 1, page, page + 1, page + 0x1000, pageEnd - 0x1000, pageEnd - 1, pageEnd, pageEnd + 0x1000,
		3<<32 - 1, 3 << 32, 3<<32 + 0x1000, 0x5555_5555_4000, elsewhr, 0xffff_8000_0000, 1<<47 - 0x1000, 1 << 47,
		1 << 48, 1<<48 | page, 1<<52 | page, 1<<63 | page, ^uint64(0) - 0xfff, ^uint64(0)}
	var tagged []uint64
	for _, a := range addrs {
		tagged = append(tagged, a|0x2a<<56, a|0x3f<<57, a|0xff<<56)
	}
	addrs = append(addrs, tagged...)
	lens := []uint64{0, 1, 0x1000, 0x7fff_f000, 1<<32 - 0x1000, 1<<32 - 1, 1 << 32, 1<<32 + 1, 8 * gib, 8*gib + 1,
		syscalls.PathPageSize, 1 << 47, 1 << 63, ^uint64(0) - 0xfff, ^uint64(0)}

	// model is the register test of appendMemCheck.
	model := func(a, n uint64) bool {
		hi := a >> 32 & 0xffff
		switch {
		case hi > 2:
			return false
		case hi == 2:
			return uint32(a) < uint32(syscalls.PathPageSize)
		case hi == 1:
			return true
		}
		return n>>32 != 0
	}
	// reaches: the range as some kernel may take it overlaps the page.
	// Lengths are rounded up to 1 GiB, the largest huge page, and 0 taken
	// as 1 (mremap with old_len 0 duplicates a mapping); a range that
	// wraps around 2^64 every call refuses.
	reaches := func(a, n uint64) bool {
		if n == 0 {
			n = 1
		}
		if r := n % gib; r != 0 {
			if n+(gib-r) < n {
				return false
			}
			n += gib - r
		}
		for _, u := range []uint64{a, a &^ (0xff << 56), a &^ (0x3f << 57)} {
			if end := u + n; end > u && u < pageEnd && end > page {
				return true
			}
		}
		return false
	}
	for _, tbl := range tables {
		m := newMachine(t, Options{Table: tbl, PathPage: true})
		for _, rc := range rangeCalls {
			t.Run(tbl.ABI+"/"+rc.name, func(t *testing.T) {
				traps := 0
				for _, a := range addrs {
					for _, n := range lens {
						args := rc.args(a, n)
						got := m.run(rc.call, args) == RetTrace
						if want := model(a, n); got != want {
							t.Errorf("addr %#x len %#x: trapped %v, the model says %v", a, n, got, want)
						}
						if !got && reaches(a, n) {
							t.Errorf("addr %#x len %#x: allowed, but the range reaches the page", a, n)
						}
						if got {
							traps++
						}
					}
				}
				if traps == 0 || traps == len(addrs)*len(lens) {
					t.Fatalf("%d of %d trapped: the grid tests nothing", traps, len(addrs)*len(lens))
				}
			})
		}
	}
}

// TestPathPageOff: without PathPage the program is the one from before the
// path page existed: the rules with PathPage minus the memory calls,
// assembled alike, and as long as it was then.
func TestPathPageOff(t *testing.T) {
	// Instruction counts of the programs before the memory calls had
	// specs (indexed by reads | clones<<1 | net<<2). They change when
	// the tables or other rules change; update them then.
	before := map[string][8]int{
		// +14 after that: one comparison per ioctl command added to
		// syscalls.Ioctls (EXT4_IOC_SETVERSION, FIFREEZE, ...).
		// Then fanotify_init and fanotify_mark (x86_64 +8, aarch64 +4).
		// Then +1: TIOCGPTN (the tree's own ptys). Then +33 (x86_64 +34 with
		// net: one more long jump): the terminal changes (TCSETS, ...).
		// Then the futex calls (futex, futex_wait, futex_wake on the
		// private flag; futex_waitv, futex_requeue always), the mq_*
		// calls beyond mq_open, and with reads the xattr reads and
		// inotify_add_watch; restart_syscall and rt_sigreturn.
		// Then +70: ioctl became an allow-list (issue 16): a binary search
		// over the 84 commands of syscalls.IoctlAllowed (132 instructions
		// with its load) instead of a comparison with each trapped one.
		// Both together (merged): x86_64 551 (reads off), aarch64 479.
		// Then io_setup and io_submit forbidden (native AIO, red team 4).
		// Then net +7 (x86_64 +8 with clones, leaf layout): setsockopt's
		// interface options (SO_BINDTODEVICE, IP_UNICAST_IF, ...) and
		// IPV6_NEXTHOP, IPV6_2292PKTOPTIONS. Then +1: prctl(PR_SCHED_CORE),
		// +1: fcntl(F_SET_RW_HINT). Then net +20 to +22: setsockopt's
		// multicast membership options (18 optnames) and socket() (red
		// team, session 25). Then +1: prctl(PR_SET_DUMPABLE). Then +4:
		// kcmp (red team, round 67; x86_64 +2 with reads and net, leaf layout).
		"x86_64":  {574, 596, 579, 601, 638, 656, 643, 657}, // +4 to +9 (leaf layout): memfd_secret, process_mrelease; +7: prctl(PR_SET_MM); net +4: listen, +9: setsockopt; +1: F_SETLEASE; +1: USERFAULTFD_IOC_NEW; +2: F_SETFL, FIOASYNC
		"aarch64": {496, 521, 493, 518, 559, 584, 556, 581}, // +6 to +8 (leaf layout): memfd_secret, process_mrelease; +5: prctl(PR_SET_MM); net +2: listen, +7: setsockopt; +1: F_SETLEASE; +1: USERFAULTFD_IOC_NEW; +2: F_SETFL, FIOASYNC
	}
	for _, tbl := range tables {
		for i := 0; i < 8; i++ {
			off := Options{Table: tbl, TrapReadOpens: i&1 != 0, TrapAllClones: i&2 != 0, TrapNet: i&4 != 0}
			t.Run(fmt.Sprintf("%s/reads=%v,clones=%v,net=%v", tbl.ABI, off.TrapReadOpens, off.TrapAllClones, off.TrapNet), func(t *testing.T) {
				on := off
				on.PathPage = true
				got, err := Build(off)
				if err != nil {
					t.Fatal(err)
				}
				rsOff, err := rules(off)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rsOff {
					if s, ok := syscalls.Lookup(r.name); ok && s.Handler == syscalls.HMem {
						t.Errorf("%s in the program without PathPage", r.name)
					}
				}
				rsOn, err := rules(on)
				if err != nil {
					t.Fatal(err)
				}
				var kept []rule
				mem := 0
				for _, r := range rsOn {
					if s, ok := syscalls.Lookup(r.name); ok && s.Handler == syscalls.HMem {
						mem++
						if r.ret != RetTrace || (r.name == "process_madvise") != (r.c == nil) || (r.c != nil && len(r.c.mem) == 0) {
							t.Errorf("%s: %+v, want a range test (process_madvise: an unconditional trap)", r.name, r)
						}
						continue
					}
					kept = append(kept, r)
				}
				if mem != len(memCalls) {
					t.Errorf("%d memory calls with PathPage, want %d", mem, len(memCalls))
				}
				want, err := program(tbl, kept)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Error("the program without PathPage differs from the PathPage rules minus the memory calls")
				}
				if n := before[tbl.ABI][i]; len(got) != n {
					t.Errorf("%d instructions, %d before the path page", len(got), n)
				}
				full, err := Build(on)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%d instructions, %d with PathPage", len(got), len(full))
			})
		}
	}
}

// TestMemCondErrors: a range the code cannot express is an error, not a
// bad program.
func TestMemCondErrors(t *testing.T) {
	bad := []syscalls.MemRange{
		{Addr: 6, Len: 1, FlagsArg: -1},
		{Addr: 0, Len: -1, FlagsArg: -1},
		{Addr: 0, Len: 1, FlagsArg: 6, FlagsMask: 1},
		{Addr: 0, Len: 1, FlagsArg: -2},
		{Addr: 0, Len: 1, FlagsArg: 3}, // no mask: never in use
	}
	for i, r := range bad {
		c := cond{mem: []syscalls.MemRange{{Addr: 0, Len: 1, FlagsArg: -1}, r}}
		if err := c.check(); err == nil {
			t.Errorf("%d: %+v accepted", i, r)
		}
	}
	good := cond{mem: []syscalls.MemRange{{Addr: 0, Len: 1, FlagsArg: -1}, {Addr: 4, Len: 2, FlagsArg: 3, FlagsMask: 2}}}
	if err := good.check(); err != nil {
		t.Errorf("mremap's ranges: %v", err)
	}
	// So many ranges that the call's block is longer than a conditional
	// jump reaches: the leaf must enter it past a ja rather than emit a
	// wrapped skip, and the calls around it must still be decided.
	var many []syscalls.MemRange
	for i := 0; i < 30; i++ {
		many = append(many, syscalls.MemRange{Addr: 0, Len: 1, FlagsArg: 3, FlagsMask: 1})
	}
	prog, err := search([]rule{{nr: 1, name: "big", ret: RetTrace, c: &cond{mem: many}}, {nr: 2, name: "after", ret: RetTrace}})
	if err != nil {
		t.Fatalf("a block of 30 ranges: %v", err)
	}
	vm, err := bpf.NewVM(append([]bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}, prog...))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		nr   uint32
		args [6]uint64
		want uint32
	}{
		{1, [6]uint64{3: 1}, RetAllow},             // flag set, [0, 1): below the page
		{1, [6]uint64{0: 2 << 32, 3: 1}, RetTrace}, // flag set, in the page
		{1, [6]uint64{}, RetAllow},                 // no flag: no range in use
		{2, [6]uint64{}, RetTrace},
		{3, [6]uint64{}, RetAllow},
	} {
		r, err := vm.Run(seccompData(c.nr, 0, c.args))
		if err != nil {
			t.Fatal(err)
		}
		if uint32(r) != c.want {
			t.Errorf("nr %d args %x: %s, want %s", c.nr, c.args, retName(uint32(r)), retName(c.want))
		}
	}
}

// TestIoctlAllowList: ioctl is an allow-list (issue 16). Every command of
// syscalls.IoctlAllowed passes, whatever the high half of the register
// holds (the kernel reads an unsigned int); every command the tracer
// decides (syscalls.Ioctls) and every other number traps, including the
// neighbours of each allowed value (an off-by-one in the search) and
// whole ranges of terminal, socket and btrfs numbers.
func TestIoctlAllowList(t *testing.T) {
	for _, tbl := range tables {
		for _, o := range []Options{{}, {TrapReadOpens: true, TrapAllClones: true, TrapNet: true, PathPage: true}} {
			o.Table = tbl
			t.Run(fmt.Sprintf("%s/all=%v", tbl.ABI, o.TrapNet), func(t *testing.T) {
				m := newMachine(t, o)
				check := func(cmd uint64, want uint32) {
					t.Helper()
					for _, hi := range []uint64{0, 1, 0xffffffff} {
						if got := m.run("ioctl", [6]uint64{3, hi<<32 | cmd, 0x7ffc12345678}); got != want {
							t.Errorf("ioctl(3, %#x): %s, want %s", hi<<32|cmd, retName(got), retName(want))
						}
					}
				}
				for _, a := range syscalls.IoctlAllowed {
					check(uint64(a.Cmd), RetAllow)
					for _, n := range []uint32{a.Cmd - 1, a.Cmd + 1} {
						if !syscalls.IoctlPasses(n) {
							check(uint64(n), RetTrace)
						}
					}
				}
				for _, s := range syscalls.Ioctls {
					if syscalls.IoctlPasses(s.Cmd) {
						t.Errorf("%s is both decided and allowed", s.Name)
					}
					check(uint64(s.Cmd), RetTrace)
				}
				for _, base := range []uint32{0x5400, 0x8900, 0x9400, 0x4b00, 0x5600, 0x5800} {
					for cmd := base; cmd < base+0x100; cmd++ {
						want := uint32(RetTrace)
						if syscalls.IoctlPasses(cmd) {
							want = RetAllow
						}
						check(uint64(cmd), want)
					}
				}
				for _, cmd := range []uint64{0, 0xffffffff, 0x5000940e, 0x50009417, 0x4008941a, 0x4c01, 0x40047211, 0xc0406618, 0x40186f04} {
					check(cmd, RetTrace)
				}
			})
		}
	}
}
