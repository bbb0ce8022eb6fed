package syscalls

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Follow says whether the last component of a path argument is followed when
// it is a symlink. Intermediate components are always followed.
type Follow uint8

const (
	FollowAlways           Follow = iota // chmod, chown, truncate, utimes, setxattr, execve
	FollowNever                          // unlink, rmdir, rename, mkdir, mknod, symlink, lchown, l*xattr
	FollowUnlessAtNoFollow               // *at calls: follow unless AT_SYMLINK_NOFOLLOW in the flags argument
	FollowIfAtFollow                     // linkat: follow only with AT_SYMLINK_FOLLOW
	FollowOpen                           // open: follow unless O_NOFOLLOW or O_CREAT|O_EXCL (Table.OpenFollows)
)

var followNames = [...]string{"always", "never", "unless-at-nofollow", "if-at-follow", "open"}

func (f Follow) String() string {
	if int(f) < len(followNames) {
		return followNames[f]
	}
	return "follow(" + strconv.Itoa(int(f)) + ")"
}

// PathArg describes one path argument.
type PathArg struct {
	Arg    int    // index of the path pointer argument
	Dirfd  int    // index of the dirfd argument, -1 when the path is relative to the cwd
	Follow Follow // how the last component is treated
	Role   string // "path", "source", "target" (rename/link) or "program" (exec)
	// EmptyPathOK: a NULL or "" path with AT_EMPTY_PATH in the flags (and a
	// NULL path for utimensat and futimesat) acts on the dirfd itself, which
	// may be a read-only or O_PATH fd: check what the fd points to.
	EmptyPathOK bool
}

// Socket options and control messages that send a packet somewhere other
// than where its destination address says, by optname (the filter traps
// these numbers at every level; the tracer checks the level):
//   - source routes: IP_OPTIONS at IPPROTO_IP (LSRR, SSRR; IP_RETOPTS as a
//     control message), IPV6_RTHDR and IPV6_2292RTHDR at IPPROTO_IPV6 (a
//     segment routing header), IPV6_NEXTHOP (the first hop itself), and
//     IPV6_2292PKTOPTIONS (sticky options given as control messages, which
//     may hold any of these);
//   - an outgoing interface: SO_BINDTODEVICE, SO_BINDTOIFINDEX and SO_MARK
//     (policy routing) at SOL_SOCKET, IP_UNICAST_IF and IPV6_UNICAST_IF, and
//     IPV6_PKTINFO set as a sticky option. A packet for 127.0.0.1 sent on a
//     socket bound to eth0 leaves through eth0 (red team, session 23). The
//     control messages IP_PKTINFO and IPV6_PKTINFO (IPV6_2292PKTINFO) name
//     an interface for one datagram: the tracer checks their index
//     (PktinfoIfindex).
//
// The same values at other levels (TCP_KEEPIDLE is 4, SO_KEEPALIVE 9) are
// passed.
const (
	SolSocket          = 1  // SOL_SOCKET
	SolIP              = 0  // IPPROTO_IP
	SolIPv6            = 41 // IPPROTO_IPV6
	IPOptions          = 4  // IP_OPTIONS; also the cmsg type IP_RETOPTS = 7
	IPRetopts          = 7  // IP_RETOPTS: IP options for one datagram (a control message)
	IPPktinfo          = 8  // IP_PKTINFO: struct in_pktinfo, its ipi_ifindex first
	IPUnicastIf        = 50 // IP_UNICAST_IF
	IPv62292Pktinfo    = 2  // IPV6_2292PKTINFO
	IPv62292Rthdr      = 5  // IPV6_2292RTHDR
	IPv62292Pktoptions = 6  // IPV6_2292PKTOPTIONS
	IPv6Nexthop        = 9  // IPV6_NEXTHOP (IPV6_2292NEXTHOP has the same number)
	IPv6Pktinfo        = 50 // IPV6_PKTINFO: struct in6_pktinfo, its ipi6_ifindex at 16
	IPv6Rthdr          = 57 // IPV6_RTHDR
	IPv6UnicastIf      = 76 // IPV6_UNICAST_IF
	SoBindToDevice     = 25 // SO_BINDTODEVICE (the same on x86_64 and arm64)
	SoMark             = 36 // SO_MARK
	SoBindToIfindex    = 62 // SO_BINDTOIFINDEX
)

// Multicast group membership options. A join makes the kernel send a
// membership report (IGMP for IPv4, MLD for IPv6) naming the group, and
// the sources of a source-specific join, out of the chosen interface; a
// leave, a source block or unblock and a filter change send reports too
// (net/ipv4/igmp.c igmp_ifc_event, net/ipv6/mcast.c mld_ifc_event). The
// group address is the program's to choose: 3 free bytes of an IPv4 group,
// 14 of an IPv6 one, and a source list more, so a join is a way to put
// chosen bytes on the local network with no connect or send to check
// (red team, session 25: captured on eth0 under --net deny). An anycast
// join (IPV6_JOIN_ANYCAST, CAP_NET_ADMIN) joins the solicited-node group.
// The MCAST_* options (RFC 3678) have the same numbers at IPPROTO_IP and
// IPPROTO_IPV6.
const (
	IPAddMembership    = 35 // IP_ADD_MEMBERSHIP
	IPMsfilter         = 41 // IP_MSFILTER; 35-41 are all IPv4 membership options
	McastJoinGroup     = 42 // MCAST_JOIN_GROUP
	McastMsfilter      = 48 // MCAST_MSFILTER; 42-48 are all MCAST_* options
	IPv6AddMembership  = 20 // IPV6_ADD_MEMBERSHIP (IPV6_JOIN_GROUP)
	IPv6DropMembership = 21 // IPV6_DROP_MEMBERSHIP (IPV6_LEAVE_GROUP)
	IPv6JoinAnycast    = 27 // IPV6_JOIN_ANYCAST
	IPv6LeaveAnycast   = 28 // IPV6_LEAVE_ANYCAST
)

// MembershipOpts are the multicast membership optnames (IPv4 35-48, IPv6
// 20, 21, 27, 28 and 42-48).
var MembershipOpts = func() []uint32 {
	v := []uint32{IPv6AddMembership, IPv6DropMembership, IPv6JoinAnycast, IPv6LeaveAnycast}
	for n := uint32(IPAddMembership); n <= McastMsfilter; n++ {
		v = append(v, n)
	}
	return v
}()

// SourceRouteOpts are the optnames that route a packet past its
// destination. IPV6_PKTINFO has IP_UNICAST_IF's number (50), listed once.
var SourceRouteOpts = []uint32{IPOptions, IPv6Rthdr, IPv62292Rthdr, IPv6Nexthop, IPv62292Pktoptions,
	IPUnicastIf, IPv6UnicastIf, SoBindToDevice, SoMark, SoBindToIfindex}

// SetsockoptTrapped are the optnames the filter traps setsockopt for (at
// every level; the tracer checks the level): SourceRouteOpts and
// MembershipOpts.
var SetsockoptTrapped = append(append([]uint32{}, SourceRouteOpts...), MembershipOpts...)

// Route families of RouteOption: how the option sends a packet past its
// checked destination.
const (
	RouteSource    = "source-route" // through other hosts
	RouteInterface = "interface"    // out of a chosen network interface
	// RouteMembership: the kernel itself sends a membership report naming
	// a group the program chose (MembershipOpts).
	RouteMembership = "multicast-membership"
)

// SocketCreate is the Op family of a socket() the policy decides: one of
// a family, type or protocol that SocketAllowed does not pass.
const SocketCreate = "socket"

// Socket families, types and protocols SocketAllowed knows by name.
const (
	afUnix       = 1
	afInet       = 2
	afInet6      = 10
	afNetlink    = 16
	sockStream   = 1
	sockDgram    = 2
	sockRaw      = 3
	protoICMP    = 1
	protoTCP     = 6
	protoUDP     = 17
	protoICMPv6  = 58
	protoUDPLite = 136
	protoMPTCP   = 262
)

// SocketAllowed says whether socket(family, typ, proto) makes a socket
// whose traffic connect, bind, sendto, sendmsg, sendmmsg, listen and the
// trapped socket options cover: AF_UNIX and AF_NETLINK (checked by
// address), and TCP, MPTCP, UDP, UDP-Lite and ping (ICMP datagram)
// sockets of AF_INET and AF_INET6. Everything else is a deny-by-default
// surface (issue 16's rule for open-ended kernel interfaces): SCTP
// connects through setsockopt(SCTP_SOCKOPT_CONNECTX) and
// getsockopt(SCTP_SOCKOPT_CONNECTX3), which name addresses no trapped call
// sees; raw and packet sockets take a packet's destination from the packet
// (IP_HDRINCL); and each other family (AF_PACKET, AF_VSOCK, AF_BLUETOOTH,
// AF_ALG, AF_XDP, ...) has its own ways to send. typ's SOCK_NONBLOCK and
// SOCK_CLOEXEC bits are ignored. what describes the socket for the
// report.
func SocketAllowed(family, typ, proto int32) (ok bool, what string) {
	t := typ & 0xf
	switch family {
	case afUnix, afNetlink:
		return true, ""
	case afInet, afInet6:
		switch {
		case t == sockStream && (proto == 0 || proto == protoTCP || proto == protoMPTCP):
			return true, ""
		case t == sockDgram && (proto == 0 || proto == protoUDP || proto == protoUDPLite):
			return true, ""
		case t == sockDgram && family == afInet && proto == protoICMP,
			t == sockDgram && family == afInet6 && proto == protoICMPv6:
			return true, "" // ping sockets: sendto names the host
		}
	}
	return false, fmt.Sprintf("%s %s protocol %d", socketFamilyName(family), socketTypeName(t), proto)
}

func socketFamilyName(f int32) string {
	names := map[int32]string{0: "AF_UNSPEC", afUnix: "AF_UNIX", afInet: "AF_INET", 3: "AF_AX25",
		4: "AF_IPX", 5: "AF_APPLETALK", 9: "AF_X25", afInet6: "AF_INET6", 15: "AF_KEY",
		afNetlink: "AF_NETLINK", 17: "AF_PACKET", 21: "AF_RDS", 29: "AF_CAN", 30: "AF_TIPC",
		31: "AF_BLUETOOTH", 38: "AF_ALG", 40: "AF_VSOCK", 42: "AF_QIPCRTR", 44: "AF_XDP", 45: "AF_MCTP"}
	if n, ok := names[f]; ok {
		return n
	}
	return "family " + strconv.Itoa(int(f))
}

func socketTypeName(t int32) string {
	switch t {
	case sockStream:
		return "SOCK_STREAM"
	case sockDgram:
		return "SOCK_DGRAM"
	case sockRaw:
		return "SOCK_RAW"
	case 4:
		return "SOCK_RDM"
	case 5:
		return "SOCK_SEQPACKET"
	case 6:
		return "SOCK_DCCP"
	case 10:
		return "SOCK_PACKET"
	}
	return "type " + strconv.Itoa(int(t))
}

// membershipName names an IPv4-level membership option for the report.
func membershipName(name int32) string {
	names := [...]string{"IP_ADD_MEMBERSHIP", "IP_DROP_MEMBERSHIP", "IP_UNBLOCK_SOURCE",
		"IP_BLOCK_SOURCE", "IP_ADD_SOURCE_MEMBERSHIP", "IP_DROP_SOURCE_MEMBERSHIP", "IP_MSFILTER"}
	if name >= IPAddMembership && name <= IPMsfilter {
		return names[name-IPAddMembership]
	}
	return mcastName(name)
}

// membershipName6 names an IPv6-level membership option for the report.
func membershipName6(name int32) string {
	switch name {
	case IPv6AddMembership:
		return "IPV6_ADD_MEMBERSHIP"
	case IPv6DropMembership:
		return "IPV6_DROP_MEMBERSHIP"
	case IPv6JoinAnycast:
		return "IPV6_JOIN_ANYCAST"
	case IPv6LeaveAnycast:
		return "IPV6_LEAVE_ANYCAST"
	}
	return mcastName(name)
}

// mcastName names an MCAST_* option (42-48).
func mcastName(name int32) string {
	names := [...]string{"MCAST_JOIN_GROUP", "MCAST_BLOCK_SOURCE", "MCAST_UNBLOCK_SOURCE",
		"MCAST_LEAVE_GROUP", "MCAST_JOIN_SOURCE_GROUP", "MCAST_LEAVE_SOURCE_GROUP", "MCAST_MSFILTER"}
	if name >= McastJoinGroup && name <= McastMsfilter {
		return names[name-McastJoinGroup]
	}
	return "option " + strconv.Itoa(int(name))
}

// RouteOption says whether a socket option (cmsg false) or a control
// message of sendmsg (cmsg true) at (level, name) sends packets somewhere
// other than their destination address: its family (RouteSource,
// RouteInterface) and what it sets, for the report; "" when it does not.
// The pktinfo control messages are not listed: only their interface index
// decides (PktinfoIfindex).
func RouteOption(level, name int32, cmsg bool) (family, what string) {
	switch level {
	case SolIP:
		switch {
		case name == IPOptions || (cmsg && name == IPRetopts):
			return RouteSource, "IP options"
		case name == IPUnicastIf && !cmsg:
			return RouteInterface, "IP_UNICAST_IF"
		case name >= IPAddMembership && name <= McastMsfilter && !cmsg:
			return RouteMembership, membershipName(name)
		}
	case SolIPv6:
		switch {
		case name == IPv6Rthdr || name == IPv62292Rthdr:
			return RouteSource, "IPv6 routing header"
		case name == IPv6Nexthop:
			return RouteSource, "IPv6 next hop (IPV6_NEXTHOP)"
		case name == IPv62292Pktoptions && !cmsg:
			return RouteSource, "IPv6 sticky options (IPV6_2292PKTOPTIONS)"
		case name == IPv6UnicastIf && !cmsg:
			return RouteInterface, "IPV6_UNICAST_IF"
		case name == IPv6Pktinfo && !cmsg:
			return RouteInterface, "IPV6_PKTINFO"
		case !cmsg && (name == IPv6AddMembership || name == IPv6DropMembership ||
			name == IPv6JoinAnycast || name == IPv6LeaveAnycast ||
			(name >= McastJoinGroup && name <= McastMsfilter)):
			return RouteMembership, membershipName6(name)
		}
	case SolSocket:
		switch name {
		case SoBindToDevice:
			if !cmsg {
				return RouteInterface, "SO_BINDTODEVICE"
			}
		case SoBindToIfindex:
			if !cmsg {
				return RouteInterface, "SO_BINDTOIFINDEX"
			}
		case SoMark:
			// Also a control message since Linux 5.19 (sock_cmsg_send).
			return RouteInterface, "SO_MARK"
		}
	}
	return "", ""
}

// PktinfoIfindex returns the interface index a pktinfo control message
// (IP_PKTINFO, IPV6_PKTINFO, IPV6_2292PKTINFO) with payload data names for
// its datagram; ok is false for another control message or a payload the
// kernel rejects as too short (EINVAL, nothing sent). Index 0 names none.
func PktinfoIfindex(level, typ int32, data []byte) (ifindex int32, ok bool) {
	switch {
	case level == SolIP && typ == IPPktinfo:
		// struct in_pktinfo { int ipi_ifindex; struct in_addr ipi_spec_dst, ipi_addr; }
		if len(data) < 12 {
			return 0, false
		}
		return int32(binary.LittleEndian.Uint32(data)), true
	case level == SolIPv6 && (typ == IPv6Pktinfo || typ == IPv62292Pktinfo):
		// struct in6_pktinfo { struct in6_addr ipi6_addr; int ipi6_ifindex; }
		if len(data) < 20 {
			return 0, false
		}
		return int32(binary.LittleEndian.Uint32(data[16:])), true
	}
	return 0, false
}

// Handler says how the tracer decodes a call.
type Handler uint8

const (
	HPath      Handler = iota // generic path operation: Kind applies to every Paths entry
	HOpen                     // open, openat, creat: the kind comes from the open flags
	HExec                     // execve, execveat
	HSocket                   // connect, bind, sendto, sendmsg, sendmmsg: decode the socket address; listen: what the socket is bound to
	HSignal                   // kill, tkill, tgkill, rt_*sigqueueinfo, pidfd_send_signal, pidfd_open
	HProcess                  // calls aimed at a pid: prlimit64, setpriority, sched_*, ...
	HFdMeta                   // fchmod, fchown, fsetxattr, fremovexattr: metadata change through FdArg
	HIoctl                    // ioctl: the filter traps every command not in IoctlAllowed; see LookupIoctl
	HClone                    // clone, fork, vfork
	HForbidden                // never allowed
	HProcMem                  // process_vm_readv, process_vm_writev
	// HFcntl is fcntl with one of the commands the filter traps:
	//   - F_SETOWN / F_SETOWN_EX name the process that gets SIGIO, or any
	//     signal chosen with F_SETSIG, when the fd becomes ready;
	//     sigio_perm() lets a task reach every process of its user. The
	//     target is PidArg for F_SETOWN (an int: a pid, or -pgid) and a
	//     struct f_owner_ex {int type; int pid} behind PidArg for
	//     F_SETOWN_EX.
	//   - F_SETLEASE takes a lease on the fd's file: a lease on what the fd
	//     points to (KindLease), decided like a write of it.
	//   - F_SETDELEG is forbidden (see FcntlSetDeleg).
	HFcntl
	// HChdir is chdir and fchdir: never denied, trapped so that the tracer
	// may remember each task's cwd between checks and forget it when it
	// changes (tracer: base).
	HChdir
	// HMem is mmap, munmap, mprotect, pkey_mprotect, madvise, mremap,
	// mseal and remap_file_pages: the filter traps them (Options.PathPage) only when
	// one of their MemRanges may reach the path page, and the tracer denies
	// those that do (tracer: pathpage.go).
	HMem
	// HFutex is futex, futex_wait, futex_wake, futex_waitv and
	// futex_requeue on a shared futex word (tracer: futex.go): each word
	// it names must lie in memory the tree may write.
	HFutex
	handlerCount
)

var handlerNames = [handlerCount]string{"path", "open", "exec", "socket", "signal", "process", "fd-meta", "ioctl", "clone", "forbidden", "process-mem", "fcntl", "chdir", "memory", "futex"}

// The path page: an address range that the tracer maps read-only into a
// traced process (after its first checked call with more than one task in
// the tree) and into which it copies the path a checked call names, so the
// kernel reads the very bytes that were checked while the other threads
// run on (tracer: pathpage.go). The tree may not map, unmap, remap,
// re-protect or advise anything there.
//
// The address is fixed, the same in every process, so that children made
// by fork inherit it and a check can tell from registers whether a range
// may reach it. 8 GiB is above every address a 32-bit argument can name
// (an i386 call could not reach it even if the ABI were not killed) and
// below the areas where Linux places programs and mappings on x86_64 and
// arm64 (PIE binaries at 0x55..., mmap at 0x7f..., and on arm64 with
// 39-bit addresses at 0x55.../0x7f...: all above 2^33). The filter's range
// test depends on PathPageAddr being exactly 2<<32 and PathPageSize being
// below 4 GiB (filter: appendMemCheck).
const (
	PathPageAddr uint64 = 2 << 32
	PathSlotSize        = 4096 // PATH_MAX, NUL included
	PathSlots           = 64
	PathPageSize uint64 = PathSlotSize * PathSlots
)

// MemRange is an address range argument of an HMem call: [Addr, Addr+Len)
// in the arguments Addr and Len, used only when FlagsArg is -1 or the low
// 32 bits of FlagsArg share a bit with FlagsMask (mmap's MAP_FIXED,
// mremap's MREMAP_FIXED for its new range).
type MemRange struct {
	Addr, Len int
	FlagsArg  int
	FlagsMask uint32
}

// Memory flags the ranges depend on (the same values on x86_64 and arm64).
const (
	MapFixed    = 0x10 // MAP_FIXED; MAP_FIXED_NOREPLACE (0x100000) never replaces a mapping
	MremapFixed = 0x2  // MREMAP_FIXED
)

func (h Handler) String() string {
	if h < handlerCount {
		return handlerNames[h]
	}
	return "handler(" + strconv.Itoa(int(h)) + ")"
}

// Spec is what a trapped system call's arguments mean for the tracer. The
// argument indexes are the same on x86_64 and aarch64 for every call listed
// (clone differs only after the flags argument).
type Spec struct {
	Name    string
	Kind    Kind // what the call does; for HOpen and HIoctl the tracer refines it
	Handler Handler
	Paths   []PathArg
	// FlagsArg is the flags argument, -1 when none. Its meaning depends on
	// the handler: open flags (HOpen), AT_* flags (HPath, HExec),
	// RENAME_* flags (renameat2), clone flags (clone), the ioctl or fcntl
	// command (HIoctl, HFcntl), seccomp(2) flags.
	FlagsArg int
	FdArg    int // fd the call acts on (HFdMeta, HIoctl, HSocket, pidfd_send_signal), -1 when none
	PidArg   int // pid (or thread id / who) argument, -1 when none
	SigArg   int // signal number argument, -1 when none
	ModeArg  int // file mode argument of mknod/mknodat (S_IFCHR/S_IFBLK make a device), -1 when none
	// PermArg is the permission bits argument whose S_ISUID and S_ISGID
	// bits are checked (chmod family, open/creat with O_CREAT, mknod), -1
	// when none. mkdir has none: vfs_mkdir keeps only S_IRWXUGO|S_ISVTX
	// of its mode (fs/namei.c, 2.6 onwards), so set-id bits given to
	// mkdir never reach the inode.
	PermArg int
	// NameArg is the extended attribute name argument (setxattr family),
	// -1 when none.
	NameArg int
	// AddrArg is the socket address: a struct sockaddr pointer (connect,
	// bind, sendto), a struct msghdr pointer (sendmsg) or a struct mmsghdr
	// array (sendmmsg); AddrLenArg its length when passed as an argument.
	AddrArg, AddrLenArg int
	// LinkTargetArg is the content of a new symlink (symlink, symlinkat):
	// a string stored in the link, never resolved at creation. Record it in
	// reports; do not check it as a path.
	LinkTargetArg int
	// Mem are the address ranges an HMem call maps, unmaps or changes.
	Mem   []MemRange
	Errno syscall.Errno // errno for a denial: EACCES (files, exec, net) or EPERM
}

// spec builders keep the table below readable: every index field defaults
// to -1.
func mk(name string, k Kind, h Handler, paths ...PathArg) *Spec {
	s := &Spec{Name: name, Kind: k, Handler: h, Paths: paths,
		FlagsArg: -1, FdArg: -1, PidArg: -1, SigArg: -1, ModeArg: -1, PermArg: -1, NameArg: -1, AddrArg: -1, AddrLenArg: -1, LinkTargetArg: -1}
	switch k {
	case KindSignal, KindProcess, KindForbidden, KindMemory, KindFutex:
		s.Errno = syscall.EPERM
	default:
		s.Errno = syscall.EACCES
	}
	return s
}

func (s *Spec) flags(i int) *Spec   { s.FlagsArg = i; return s }
func (s *Spec) fd(i int) *Spec      { s.FdArg = i; return s }
func (s *Spec) pid(i int) *Spec     { s.PidArg = i; return s }
func (s *Spec) sig(i int) *Spec     { s.SigArg = i; return s }
func (s *Spec) mode(i int) *Spec    { s.ModeArg = i; s.PermArg = i; return s }
func (s *Spec) perm(i int) *Spec    { s.PermArg = i; return s }
func (s *Spec) name(i int) *Spec    { s.NameArg = i; return s }
func (s *Spec) addr(a, l int) *Spec { s.AddrArg, s.AddrLenArg = a, l; return s }
func (s *Spec) linkTo(i int) *Spec  { s.LinkTargetArg = i; return s }
func (s *Spec) mem(r ...MemRange) *Spec {
	s.Mem = r
	return s
}

// rng is a MemRange used whatever the flags; fixedRng one used only with a
// flag bit set.
func rng(addr, n int) MemRange { return MemRange{Addr: addr, Len: n, FlagsArg: -1} }
func fixedRng(addr, n, flags int, mask uint32) MemRange {
	return MemRange{Addr: addr, Len: n, FlagsArg: flags, FlagsMask: mask}
}

// p is a path relative to the cwd; at a path relative to a dirfd.
func p(arg int, f Follow, role string) PathArg {
	return PathArg{Arg: arg, Dirfd: -1, Follow: f, Role: role}
}
func at(arg, dirfd int, f Follow, role string, emptyOK bool) PathArg {
	return PathArg{Arg: arg, Dirfd: dirfd, Follow: f, Role: role, EmptyPathOK: emptyOK}
}

const (
	always   = FollowAlways
	never    = FollowNever
	atNoFol  = FollowUnlessAtNoFollow
	atFollow = FollowIfAtFollow
)

// forbidden lists the calls that are always denied (EPERM) and reported.
// Beyond DESIGN.md's list:
//   - userfaultfd: no use in the workloads we run; a userfaultfd-registered
//     page stalls any access to it, which turns the check-to-use window of
//     a path argument (and the tracer's own process_vm_readv of it) into
//     an attacker-controlled pause. Unprivileged use is allowed on 4.18
//     (vm.unprivileged_userfaultfd appeared in 5.2).
//   - syslog(2): reading the kernel log through the syscall is never needed
//     (/dev/kmsg stays readable through open, which is checked); the
//     clearing and console-level actions change host state.
//   - quotactl, quotactl_fd, lookup_dcookie, _sysctl, iopl, ioperm,
//     settimeofday, clock_settime, sethostname, setdomainname, vhangup:
//     privileged calls that change the whole host. They fail with EPERM
//     for an unprivileged tree anyway; trapping them costs nothing (they
//     are rare) and covers an operator who runs tracecell as root.
//   - fsconfig and open_tree_attr complete the new mount API (fsopen,
//     fsmount, fspick, move_mount, open_tree, mount_setattr).
//   - prctl(PR_SET_MM) (syscalls.PrSetMM; the filter traps no other prctl
//     but PR_SCHED_CORE, which is decided by its target process):
//     its PR_SET_MM_MAP needs no capability and moves the kernel's idea of
//     the heap, after which brk(2) unmaps whatever lies below the old
//     break, tracecell's path page included; it also rewrites what
//     /proc/<pid>/cmdline, which reports quote, shows.
//   - seccomp is listed here but the filter traps it only with
//     SECCOMP_FILTER_FLAG_NEW_LISTENER: a tree-installed filter that
//     returns SECCOMP_RET_USER_NOTIF takes precedence over our
//     SECCOMP_RET_TRACE, and a listener answering with
//     SECCOMP_USER_NOTIF_FLAG_CONTINUE (5.5) would run the call without a
//     trace stop. Plain filters stay allowed: ALLOW and TRACE from them
//     cannot beat our TRACE, and ERRNO/TRAP/KILL only block calls.
var forbidden = []string{
	"ptrace", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"open_by_handle_at", "name_to_handle_at", "bpf", "perf_event_open",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"swapon", "swapoff", "acct", "reboot", "keyctl", "add_key", "request_key",
	"pidfd_getfd", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
	"open_tree", "open_tree_attr", "mount_setattr",
	"userfaultfd", "quotactl", "quotactl_fd", "lookup_dcookie", "syslog", "_sysctl",
	"iopl", "ioperm", "settimeofday", "clock_settime", "sethostname", "setdomainname", "vhangup",
	// fanotify hands out an fd of every file its marks see, opened with
	// the listener's flags (O_RDWR included): a write to any host file.
	"fanotify_init", "fanotify_mark",
	// System V IPC objects are host-wide and named by guessable keys and
	// ids: attaching to another program's shared memory segment, semaphore
	// set or message queue is touching another process, and creating one
	// leaves state behind on the host. Python (multiprocessing included)
	// uses POSIX shared memory in /dev/shm instead, which is checked.
	"shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl",
	"msgget", "msgsnd", "msgrcv", "msgctl",
	// POSIX message queues live in the host's mqueue file system, outside
	// any sandbox. mq_open is forbidden, so any queue descriptor the tree
	// holds is a host queue reached by an open of /dev/mqueue/NAME (a
	// queue descriptor is an fd of that file system): on a read-only fd
	// mq_timedreceive takes another program's message and mq_notify
	// registers for its notification (one registration a queue, held
	// while the fd is open: the owner's own mq_notify fails with EBUSY
	// meanwhile). mq_timedsend needs an fd opened for writing (a write
	// open there is denied anyway) and mq_getsetattr changes only the
	// caller's own fd's O_NONBLOCK; both are forbidden all the same,
	// since a tree without mq_open has no queue of its own to use them
	// on. Their FdArg names the queue in the report.
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	// Native AIO: an O_DIRECT read submitted with io_submit completes
	// later, the device writing into the caller's buffer with no task
	// running — after the tracer checked what that buffer holds (a path, an
	// f_owner_ex) and before the kernel reads it. No freeze or copy holds
	// a write of the kernel's own schedule (red team pass 4: a mkdir
	// outside the sandbox, SIGTERM to a process outside the tree). Without
	// io_setup there is no AIO context to submit to. glibc's POSIX aio
	// (aio_read, lio_listio) uses threads, not these calls.
	"io_setup", "io_submit",
	// memfd_secret (5.14) maps memory removed from the kernel's direct map:
	// no other process can read it, the tracer neither (process_vm_readv
	// and PTRACE_PEEKDATA both fail; the kernel's own copy of a call's
	// arguments, made in the task, reads it). A path, sockaddr or control
	// message kept there would be decided unread: a source route in such
	// control data went unchecked (red team pass 7). process_mrelease
	// (5.15) reaps the memory of another process being killed: a process
	// call the tree has no use for.
	"memfd_secret", "process_mrelease",
}

// mqFdCalls are the forbidden calls whose first argument is a queue
// descriptor.
var mqFdCalls = map[string]bool{"mq_timedsend": true, "mq_timedreceive": true, "mq_notify": true, "mq_getsetattr": true}

func buildSpecs() map[string]*Spec {
	specs := []*Spec{
		// Opens. The kind (read, write, create) comes from the flags.
		// PermArg: the mode of a file O_CREAT makes.
		mk("open", KindWrite, HOpen, p(0, FollowOpen, "path")).flags(1).perm(2),
		mk("openat", KindWrite, HOpen, at(1, 0, FollowOpen, "path", false)).flags(2).perm(3),
		mk("creat", KindWrite, HOpen, p(0, FollowOpen, "path")).perm(1), // O_CREAT|O_WRONLY|O_TRUNC implied

		// New entries. None follows a final symlink: an existing name
		// (even a dangling symlink) fails with EEXIST.
		mk("mkdir", KindCreate, HPath, p(0, never, "path")),
		mk("mkdirat", KindCreate, HPath, at(1, 0, never, "path", false)),
		mk("mknod", KindCreate, HPath, p(0, never, "path")).mode(1),
		mk("mknodat", KindCreate, HPath, at(1, 0, never, "path", false)).mode(2),
		mk("symlink", KindCreate, HPath, p(1, never, "path")).linkTo(0),
		mk("symlinkat", KindCreate, HPath, at(2, 1, never, "path", false)).linkTo(0),

		// Removal.
		mk("chdir", KindChdir, HChdir, p(0, always, "path")),
		mk("fchdir", KindChdir, HChdir).fd(0),
		mk("rmdir", KindDelete, HPath, p(0, never, "path")),
		mk("unlink", KindDelete, HPath, p(0, never, "path")),
		mk("unlinkat", KindDelete, HPath, at(1, 0, never, "path", false)).flags(2), // AT_REMOVEDIR

		// Rename and link: both paths are checked. A hard link from an
		// outside file into a writable root would hand out write access.
		mk("rename", KindRename, HPath, p(0, never, "source"), p(1, never, "target")),
		mk("renameat", KindRename, HPath, at(1, 0, never, "source", false), at(3, 2, never, "target", false)),
		mk("renameat2", KindRename, HPath, at(1, 0, never, "source", false), at(3, 2, never, "target", false)).flags(4),
		// link(2) does not follow a symlink oldpath on Linux (it behaves
		// like linkat without AT_SYMLINK_FOLLOW).
		mk("link", KindLink, HPath, p(0, never, "source"), p(1, never, "target")),
		mk("linkat", KindLink, HPath, at(1, 0, atFollow, "source", true), at(3, 2, never, "target", false)).flags(4),

		// Permission and ownership. fchmodat(2) has no flags argument:
		// glibc's AT_SYMLINK_NOFOLLOW emulation goes through an O_PATH fd
		// and /proc/self/fd, which resolves like any path. fchmodat2 is 6.6.
		mk("chmod", KindChmod, HPath, p(0, always, "path")).perm(1),
		mk("fchmodat", KindChmod, HPath, at(1, 0, always, "path", false)).perm(2),
		mk("fchmodat2", KindChmod, HPath, at(1, 0, atNoFol, "path", true)).flags(3).perm(2),
		mk("chown", KindChown, HPath, p(0, always, "path")),
		mk("lchown", KindChown, HPath, p(0, never, "path")),
		mk("fchownat", KindChown, HPath, at(1, 0, atNoFol, "path", true)).flags(4),
		mk("fchmod", KindChmod, HFdMeta).fd(0).perm(1),
		mk("fchown", KindChown, HFdMeta).fd(0),

		// Content and times.
		mk("truncate", KindWrite, HPath, p(0, always, "path")),
		mk("utime", KindWrite, HPath, p(0, always, "path")),
		mk("utimes", KindWrite, HPath, p(0, always, "path")),
		// futimesat(fd, NULL, tv) changes the times of fd itself
		// (do_utimes: filename == NULL && dfd != AT_FDCWD).
		mk("futimesat", KindWrite, HPath, at(1, 0, always, "path", true)),
		mk("utimensat", KindWrite, HPath, at(1, 0, atNoFol, "path", true)).flags(3),

		// Extended attributes. The XATTR_CREATE/REPLACE flags of
		// setxattr are not AT_* flags, so FlagsArg stays -1 there.
		// NameArg: security.capability (file capabilities) is never set.
		mk("setxattr", KindXattr, HPath, p(0, always, "path")).name(1),
		mk("lsetxattr", KindXattr, HPath, p(0, never, "path")).name(1),
		mk("removexattr", KindXattr, HPath, p(0, always, "path")),
		mk("lremovexattr", KindXattr, HPath, p(0, never, "path")),
		mk("fsetxattr", KindXattr, HFdMeta).fd(0).name(1),
		mk("fremovexattr", KindXattr, HFdMeta).fd(0),
		// setxattrat/removexattrat (6.13): (dfd, path, at_flags, name, ...).
		mk("setxattrat", KindXattr, HPath, at(1, 0, atNoFol, "path", true)).flags(2).name(3),
		mk("removexattrat", KindXattr, HPath, at(1, 0, atNoFol, "path", true)).flags(2),
		// Reading extended attributes and watching a path tell what is in
		// it (a deny-read file's xattrs, its every change): checked like a
		// read, so trapped only when reads are (filter: KindRead). fgetxattr
		// and flistxattr act on an fd, whose open was checked.
		// inotify_add_watch follows a final symlink unless IN_DONT_FOLLOW
		// is in its mask (decode: paths). fanotify_mark is
		// forbidden.
		mk("getxattr", KindRead, HPath, p(0, always, "path")),
		mk("lgetxattr", KindRead, HPath, p(0, never, "path")),
		mk("listxattr", KindRead, HPath, p(0, always, "path")),
		mk("llistxattr", KindRead, HPath, p(0, never, "path")),
		// getxattrat/listxattrat (6.13): (dfd, path, at_flags, ...).
		mk("getxattrat", KindRead, HPath, at(1, 0, atNoFol, "path", true)).flags(2),
		mk("listxattrat", KindRead, HPath, at(1, 0, atNoFol, "path", true)).flags(2),
		mk("inotify_add_watch", KindRead, HPath, p(1, always, "path")),

		// file_setattr (6.17): (dfd, path, struct file_attr *, size,
		// at_flags) sets the FS_XFLAG_* attributes (immutable, append-only)
		// that FS_IOC_FSSETXATTR sets through an fd.
		mk("file_setattr", KindChmod, HPath, at(1, 0, atNoFol, "path", true)).flags(4),

		// ioctl: every command but those of IoctlAllowed is trapped;
		// Ioctls, IoctlFamily and the policy's decideIoctl decide them.
		mk("ioctl", KindChmod, HIoctl).fd(0).flags(1),
		// fcntl: only F_SETOWN, F_SETOWN_EX, F_SETLEASE and F_SETDELEG are
		// trapped (HFcntl).
		mk("fcntl", KindSignal, HFcntl).fd(0).flags(1).pid(2),

		// Programs.
		mk("execve", KindExec, HExec, p(0, always, "program")),
		mk("execveat", KindExec, HExec, at(1, 0, atNoFol, "program", true)).flags(4),

		// Network. bind of an AF_UNIX path also creates a file.
		mk("connect", KindConnect, HSocket).fd(0).addr(1, 2),
		mk("bind", KindBind, HSocket).fd(0).addr(1, 2),
		mk("sendto", KindConnect, HSocket).fd(0).addr(4, 5),
		mk("sendmsg", KindConnect, HSocket).fd(0).addr(1, -1),
		mk("sendmmsg", KindConnect, HSocket).fd(0).addr(1, -1),
		// listen binds a socket that is not bound yet to every interface
		// (inet_csk_listen_start → get_port with the address left 0): a
		// public port without any bind to check.
		mk("listen", KindBind, HSocket).fd(0),
		// setsockopt: only the options that route a packet past its
		// destination are trapped (SourceRouteOpts, RouteOption): source
		// routing sends traffic for 127.0.0.1 to the first hop it names,
		// an interface binding out of that interface.
		mk("setsockopt", KindConnect, HSocket).fd(0).flags(2),
		// socket: every call is trapped (with the network not open) and
		// decided by family, type and protocol (SocketAllowed).
		mk("socket", KindConnect, HSocket),

		// Signals. tgkill and rt_tgsigqueueinfo: PidArg is the tgid, the
		// thread id is the next argument.
		mk("kill", KindSignal, HSignal).pid(0).sig(1),
		mk("tkill", KindSignal, HSignal).pid(0).sig(1),
		mk("tgkill", KindSignal, HSignal).pid(0).sig(2),
		mk("rt_sigqueueinfo", KindSignal, HSignal).pid(0).sig(1),
		mk("rt_tgsigqueueinfo", KindSignal, HSignal).pid(0).sig(2),
		// pidfd_send_signal also accepts an fd of a /proc/<pid> directory.
		mk("pidfd_send_signal", KindSignal, HSignal).fd(0).sig(1),
		// pidfd_open hands out a pid handle (for signals, process_madvise,
		// waitid): checked like a signal to that pid.
		mk("pidfd_open", KindSignal, HSignal).pid(0),

		// Calls aimed at other processes. setpriority and ioprio_set:
		// PidArg is "who", interpreted by the "which" argument 0.
		mk("prlimit64", KindProcess, HProcess).pid(0),
		mk("setpriority", KindProcess, HProcess).pid(1),
		mk("ioprio_set", KindProcess, HProcess).pid(1),
		mk("sched_setaffinity", KindProcess, HProcess).pid(0),
		mk("sched_setscheduler", KindProcess, HProcess).pid(0),
		mk("sched_setparam", KindProcess, HProcess).pid(0),
		mk("sched_setattr", KindProcess, HProcess).pid(0),
		mk("migrate_pages", KindProcess, HProcess).pid(0),
		mk("move_pages", KindProcess, HProcess).pid(0),
		mk("process_vm_readv", KindProcess, HProcMem).pid(0),
		// kcmp(pid1, pid2, type, idx1, idx2) tells whether two processes
		// hold the same file, memory, file table, ...: a read of both,
		// which the tree may make of its own processes only (the decoder
		// checks pid2 too).
		mk("kcmp", KindProcess, HProcess).pid(0),
		// DESIGN.md denies process_vm_writev outright; the tracer does so
		// under HProcMem. Both share the handler to report the target.
		mk("process_vm_writev", KindProcess, HProcMem).pid(0),

		// Process creation. The flags argument is first on both ABIs
		// (x86_64 and aarch64 differ in the order of tls and child_tid).
		mk("clone", KindProcess, HClone).flags(0),
		mk("fork", KindProcess, HClone),
		mk("vfork", KindProcess, HClone),

		// Memory calls that could replace, unmap, re-protect or empty the
		// path page. Others cannot change its content: the kernel's own
		// writes to user memory respect its read-only protection, only
		// FOLL_FORCE writes do not (ptrace, /proc/<pid>/mem: denied), and
		// mmap without MAP_FIXED, brk and MAP_FIXED_NOREPLACE never
		// replace a mapping. shmat is forbidden outright.
		mk("mmap", KindMemory, HMem).flags(3).mem(fixedRng(0, 1, 3, MapFixed)),
		mk("munmap", KindMemory, HMem).mem(rng(0, 1)),
		mk("mprotect", KindMemory, HMem).mem(rng(0, 1)),
		mk("pkey_mprotect", KindMemory, HMem).mem(rng(0, 1)),
		mk("madvise", KindMemory, HMem).mem(rng(0, 1)),
		mk("remap_file_pages", KindMemory, HMem).mem(rng(0, 1)),
		mk("mremap", KindMemory, HMem).flags(3).mem(rng(0, 1), fixedRng(4, 2, 3, MremapFixed)),
		// mseal (6.10) changes no content, but it fixes the page's
		// mapping for good; every call that changes the mapping is the
		// tracer's to decide (red team, round 43).
		mk("mseal", KindMemory, HMem).mem(rng(0, 1)),
		// process_madvise (5.10) takes its ranges from an iovec array in
		// memory, out of the filter's sight, and since 6.13 any advice for
		// the caller itself: MADV_DONTFORK would leave a fork child without
		// the page. No ranges: trapped whenever the page is used, and denied.
		mk("process_madvise", KindMemory, HMem),

		// Futexes on a shared futex word (tracer: futex.go). Without
		// FUTEX_PRIVATE_FLAG (FUTEX2_PRIVATE for the futex2 calls) the
		// kernel keys a word in a file mapping by the file's inode and
		// offset (get_futex_key), so a word of a read-only mapping of a
		// host process's named semaphore is that process's futex. futex
		// and futex_wait/futex_wake (6.7) are trapped only without the
		// private flag in FlagsArg; futex_waitv (5.16) and futex_requeue
		// (6.7) take their words and flags from an array in memory and
		// are always trapped.
		mk("futex", KindFutex, HFutex).flags(1),
		mk("futex_wait", KindFutex, HFutex).flags(3),
		mk("futex_wake", KindFutex, HFutex).flags(3),
		mk("futex_waitv", KindFutex, HFutex),
		mk("futex_requeue", KindFutex, HFutex),
		// restart_syscall resumes an interrupted FUTEX_WAIT or
		// FUTEX_WAIT_BITSET with a timeout at the address the kernel
		// saved (futex_wait_restart), which may have been remapped
		// since; a thread may also call it itself from a signal
		// handler. Always trapped (it is rare: a sleep interrupted by a
		// signal or a ptrace stop); checked only after a shared timed
		// wait of the task ended with -ERESTART_RESTARTBLOCK.
		mk("restart_syscall", KindFutex, HFutex),
		// rt_sigreturn ends a signal handler and resets the saved
		// restart (restart_block.fn = do_no_restart_syscall): the
		// tracer forgets the word it would check restart_syscall
		// against. Never denied.
		mk("rt_sigreturn", KindFutex, HFutex),

		// seccomp: trapped only with SECCOMP_FILTER_FLAG_NEW_LISTENER.
		mk("seccomp", KindForbidden, HForbidden).flags(1),
		// prctl: trapped only for PR_SET_MM (see PrSetMM, forbidden),
		// PR_SET_DUMPABLE (PrSetDumpable: turning it off is forbidden)
		// and PR_SCHED_CORE (PrSchedCore: decided by the process it
		// names).
		mk("prctl", KindForbidden, HForbidden).flags(0),
	}
	for _, n := range forbidden {
		s := mk(n, KindForbidden, HForbidden)
		if mqFdCalls[n] {
			s.fd(0)
		}
		specs = append(specs, s)
	}
	m := make(map[string]*Spec, len(specs))
	for _, s := range specs {
		if _, dup := m[s.Name]; dup {
			panic("syscalls: duplicate spec " + s.Name)
		}
		m[s.Name] = s
	}
	return m
}

// specIndex builds the specs on first use rather than at package init:
// tracecell --version and --help never need them.
var specIndex = sync.OnceValues(func() (map[string]*Spec, []*Spec) {
	m := buildSpecs()
	l := make([]*Spec, 0, len(m))
	for _, s := range m {
		l = append(l, s)
	}
	slices.SortFunc(l, func(a, b *Spec) int { return strings.Compare(a.Name, b.Name) })
	return m, l
})

// Lookup returns the spec of a system call by name. The returned value is
// shared: do not modify it.
func Lookup(name string) (*Spec, bool) {
	specs, _ := specIndex()
	s, ok := specs[name]
	return s, ok
}

// All returns every spec, sorted by name. Some exist on one ABI only
// (open, creat, fork, ... are x86_64 only): check with Table.Nr.
func All() []*Spec {
	_, specList := specIndex()
	return append([]*Spec(nil), specList...)
}
