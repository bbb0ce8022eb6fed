package decode

import (
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// sockIn is a struct sockaddr_in.
func sockIn(a, b, c, d byte, port uint16) string {
	s := make([]byte, 16)
	binary.LittleEndian.PutUint16(s, afInet)
	binary.BigEndian.PutUint16(s[2:], port)
	copy(s[4:], []byte{a, b, c, d})
	return string(s)
}

// sockIn6Loop is a struct sockaddr_in6 of ::1.
func sockIn6Loop(port uint16) string {
	s := make([]byte, 28)
	binary.LittleEndian.PutUint16(s, afInet6)
	binary.BigEndian.PutUint16(s[2:], port)
	s[23] = 1
	return string(s)
}

// sockUn is a struct sockaddr_un of path (abstract when it starts with NUL).
func sockUn(path string) string { return string(le16(afUnix)) + path }

func le16(v uint16) []byte { b := make([]byte, 2); binary.LittleEndian.PutUint16(b, v); return b }

// msghdr is a struct user_msghdr naming name (namelen bytes) and control
// data ctl (ctllen bytes).
func msghdr(name uint64, namelen int32, ctl, ctllen uint64) string {
	b := make([]byte, sizeofMsghdr)
	binary.LittleEndian.PutUint64(b, name)
	binary.LittleEndian.PutUint32(b[8:], uint32(namelen))
	binary.LittleEndian.PutUint64(b[32:], ctl)
	binary.LittleEndian.PutUint64(b[40:], ctllen)
	return string(b)
}

// mmsghdr is a struct mmsghdr: a msghdr and msg_len, padded.
func mmsghdr(hdr string) string { return hdr + string(make([]byte, sizeofMmsghdr-sizeofMsghdr)) }

// cmsg is one control message of level and type with data.
func cmsg(level, typ int32, data int) string {
	n := 16 + data
	b := make([]byte, (n+7)&^7)
	binary.LittleEndian.PutUint64(b, uint64(n))
	binary.LittleEndian.PutUint32(b[8:], uint32(level))
	binary.LittleEndian.PutUint32(b[12:], uint32(typ))
	return string(b)
}

// cmsgData is one control message of level and type carrying data.
func cmsgData(level, typ int32, data []byte) string {
	n := 16 + len(data)
	b := make([]byte, (n+7)&^7)
	binary.LittleEndian.PutUint64(b, uint64(n))
	binary.LittleEndian.PutUint32(b[8:], uint32(level))
	binary.LittleEndian.PutUint32(b[12:], uint32(typ))
	copy(b[16:], data)
	return string(b)
}

// pktinfo4 is a struct in_pktinfo naming interface ix; pktinfo6 a struct
// in6_pktinfo.
func pktinfo4(ix uint32) []byte { return append(le32(ix), make([]byte, 8)...) }
func pktinfo6(ix uint32) []byte { return append(make([]byte, 16), le32(ix)...) }

// sockOp checks a socket operation's family, address and port.
func sockOp(family, addr string, port int) func(*testing.T, *policy.Op, *Result, *fakeEnv) {
	return func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
		if op.Family != family || op.Addr != addr || op.Port != port {
			t.Errorf("op %s %q port %d, want %s %q %d", op.Family, op.Addr, op.Port, family, addr, port)
		}
	}
}

func TestDecodeSocket(t *testing.T) {
	in := sockIn(93, 184, 216, 34, 443)
	cases := []tcase{
		{name: "connect inet", call: "connect", args: [6]uint64{3, addr1, 16}, mem: map[uintptr]string{addr1: in},
			kind: syscalls.KindConnect, check: func(t *testing.T, op *policy.Op, r *Result, e *fakeEnv) {
				sockOp("inet", "93.184.216.34", 443)(t, op, r, e)
				if len(e.byteArgs) != 1 || e.byteArgs[0] != 1 || r.Relookup {
					t.Errorf("sockaddr read for arguments %v, relookup %v", e.byteArgs, r.Relookup)
				}
			}},
		{name: "addrlen's high half ignored", call: "connect", args: [6]uint64{3, addr1, 0xffffffff00000010}, mem: map[uintptr]string{addr1: in},
			kind: syscalls.KindConnect, check: sockOp("inet", "93.184.216.34", 443)},
		{name: "connect inet6", call: "connect", args: [6]uint64{3, addr1, 28}, mem: map[uintptr]string{addr1: sockIn6Loop(8080)},
			kind: syscalls.KindConnect, check: sockOp("inet6", "::1", 8080)},
		{name: "addrlen 1: EINVAL", call: "connect", args: [6]uint64{3, addr1, 1}, mem: map[uintptr]string{addr1: in}, want: KernelFails, errno: syscall.EINVAL},
		{name: "short sockaddr_in: EINVAL", call: "connect", args: [6]uint64{3, addr1, 6}, mem: map[uintptr]string{addr1: in}, want: KernelFails, errno: syscall.EINVAL},
		{name: "short sockaddr_in6: EINVAL", call: "connect", args: [6]uint64{3, addr1, 20}, mem: map[uintptr]string{addr1: sockIn6Loop(1)}, want: KernelFails, errno: syscall.EINVAL},
		{name: "bad pointer: EFAULT", call: "connect", args: [6]uint64{3, bad, 16}, want: KernelFails, errno: syscall.EFAULT},
		{name: "connect AF_UNSPEC dissolves: passes", call: "connect", args: [6]uint64{3, addr1, 16}, mem: map[uintptr]string{addr1: string(make([]byte, 16))},
			want: Pass, kind: syscalls.KindConnect},
		{name: "bind AF_UNSPEC binds the wildcard", call: "bind", args: [6]uint64{3, addr1, 16}, mem: map[uintptr]string{addr1: string(make([]byte, 16))},
			kind: syscalls.KindBind, check: sockOp("unspec", "", 0)},
		{name: "sendto AF_UNSPEC goes where a sockaddr_in would", call: "sendto", args: [6]uint64{3, addr2, 4, 0, addr1, 16},
			mem: map[uintptr]string{addr1: string(le16(0)) + in[2:]}, kind: syscalls.KindConnect, check: sockOp("unspec", "93.184.216.34", 443)},
		{name: "sendto without an address passes", call: "sendto", args: [6]uint64{3, addr2, 4, 0, 0, 0}, want: Pass, kind: syscalls.KindConnect},
		{name: "sendto inet asks the sending address under loopback", call: "sendto", args: [6]uint64{3, addr2, 4, 0, addr1, 16},
			mem: map[uintptr]string{addr1: in}, env: func(e *fakeEnv) { e.loopback, e.from = true, "unbound" }, kind: syscalls.KindConnect,
			check: func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
				if op.From != "unbound" || e.fromAsked != 1 || e.byteArgs[0] != 4 {
					t.Errorf("from %q asked %d read %v", op.From, e.fromAsked, e.byteArgs)
				}
			}},
		{name: "connect never asks the sending address", call: "connect", args: [6]uint64{3, addr1, 16},
			mem: map[uintptr]string{addr1: in}, env: func(e *fakeEnv) { e.loopback = true }, kind: syscalls.KindConnect,
			check: func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
				if op.From != "" || e.fromAsked != 0 {
					t.Errorf("from %q asked %d", op.From, e.fromAsked)
				}
			}},
		{name: "connect unix path follows, may look up again", call: "connect", args: [6]uint64{3, addr1, 2 + 4},
			mem: map[uintptr]string{addr1: sockUn("ln\x00x")}, kind: syscalls.KindConnect, follows: []bool{true},
			paths: []wantPath{{"socket", "ln", "/etc/passwd", true, -1, "/home/u"}},
			check: func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
				if !r.Relookup || op.Family != "unix" || op.Addr != "ln" {
					t.Errorf("relookup %v family %q addr %q", r.Relookup, op.Family, op.Addr)
				}
			}},
		{name: "bind unix path does not follow", call: "bind", args: [6]uint64{3, addr1, 2 + 2},
			mem: map[uintptr]string{addr1: sockUn("ln")}, kind: syscalls.KindBind, follows: []bool{false},
			paths: []wantPath{{"socket", "ln", "/home/u/ln", true, -1, "/home/u"}},
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if r.Relookup {
					t.Error("bind looks up again")
				}
			}},
		{name: "unix path in a missing directory: ENOENT", call: "connect", args: [6]uint64{3, addr1, 2 + 9},
			mem: map[uintptr]string{addr1: sockUn("/nodir/s\x00")}, want: KernelFails, errno: syscall.ENOENT},
		{name: "unix path relative to an unnameable cwd: fail closed", call: "connect", args: [6]uint64{3, addr1, 2 + 1},
			mem: map[uintptr]string{addr1: sockUn("s")}, env: func(e *fakeEnv) { e.cwdErr = &BaseError{Link: "/proc/1/cwd", Why: "gone"} },
			want: FailClosed, errno: syscall.EACCES},
		{name: "unix path relative to a cwd that is no directory: ENOENT", call: "connect", args: [6]uint64{3, addr1, 2 + 1},
			mem: map[uintptr]string{addr1: sockUn("s")}, env: func(e *fakeEnv) { e.cwdErr = syscall.ENOTDIR },
			want: KernelFails, errno: syscall.ENOENT},
		{name: "abstract unix", call: "connect", args: [6]uint64{3, addr1, 2 + 5},
			mem: map[uintptr]string{addr1: sockUn("\x00x11\x00")}, kind: syscalls.KindConnect,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !op.Abstract || op.Addr != "@x11" || len(op.Paths) != 0 {
					t.Errorf("abstract %v addr %q paths %v", op.Abstract, op.Addr, op.Paths)
				}
			}},
		{name: "unnamed unix autobinds: passes", call: "bind", args: [6]uint64{3, addr1, 2}, mem: map[uintptr]string{addr1: sockUn("")}, want: Pass, kind: syscalls.KindBind},
		{name: "netlink", call: "connect", args: [6]uint64{3, addr1, 12},
			mem:  map[uintptr]string{addr1: string(le16(afNetlink)) + "\x00\x00" + string(le32(77)) + string(le32(0x10))},
			kind: syscalls.KindConnect, check: sockOp("netlink", "groups 10", 77)},
		{name: "short sockaddr_nl: EINVAL", call: "connect", args: [6]uint64{3, addr1, 8},
			mem: map[uintptr]string{addr1: string(le16(afNetlink)) + string(make([]byte, 10))}, want: KernelFails, errno: syscall.EINVAL},
		{name: "another family is named by number", call: "connect", args: [6]uint64{3, addr1, 16},
			mem: map[uintptr]string{addr1: string(le16(17)) + string(make([]byte, 14))}, kind: syscalls.KindConnect, check: sockOp("family(17)", "", 0)},
		{name: "setsockopt IP_OPTIONS", call: "setsockopt", args: [6]uint64{3, syscalls.SolIP, syscalls.IPOptions, addr1, 8}, kind: syscalls.KindConnect,
			check: sockOp("source-route", "IP options", 0)},
		{name: "setsockopt IPV6_RTHDR", call: "setsockopt", args: [6]uint64{3, syscalls.SolIPv6, syscalls.IPv6Rthdr, addr1, 8}, kind: syscalls.KindConnect,
			check: sockOp("source-route", "IPv6 routing header", 0)},
		{name: "setsockopt IP_OPTIONS cleared passes", call: "setsockopt", args: [6]uint64{3, syscalls.SolIP, syscalls.IPOptions, 0, 0}, want: Pass},
		{name: "setsockopt TCP_KEEPIDLE, the same number, passes", call: "setsockopt", args: [6]uint64{3, 6, 4, addr1, 4}, want: Pass},
		// An outgoing interface: a packet for 127.0.0.1 leaves through it
		// (red team, session 23).
		{name: "setsockopt SO_BINDTODEVICE", call: "setsockopt", args: [6]uint64{3, syscalls.SolSocket, syscalls.SoBindToDevice, addr1, 5}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteInterface, "SO_BINDTODEVICE", 0)},
		{name: "setsockopt SO_BINDTODEVICE empty unbinds: passes", call: "setsockopt", args: [6]uint64{3, syscalls.SolSocket, syscalls.SoBindToDevice, addr1, 0}, want: Pass},
		{name: "setsockopt SO_BINDTOIFINDEX", call: "setsockopt", args: [6]uint64{3, syscalls.SolSocket, syscalls.SoBindToIfindex, addr1, 4}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteInterface, "SO_BINDTOIFINDEX", 0)},
		{name: "setsockopt SO_MARK", call: "setsockopt", args: [6]uint64{3, syscalls.SolSocket, syscalls.SoMark, addr1, 4}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteInterface, "SO_MARK", 0)},
		{name: "setsockopt IP_UNICAST_IF", call: "setsockopt", args: [6]uint64{3, syscalls.SolIP, syscalls.IPUnicastIf, addr1, 4}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteInterface, "IP_UNICAST_IF", 0)},
		{name: "setsockopt IPV6_UNICAST_IF", call: "setsockopt", args: [6]uint64{3, syscalls.SolIPv6, syscalls.IPv6UnicastIf, addr1, 4}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteInterface, "IPV6_UNICAST_IF", 0)},
		{name: "setsockopt sticky IPV6_PKTINFO", call: "setsockopt", args: [6]uint64{3, syscalls.SolIPv6, syscalls.IPv6Pktinfo, addr1, 20}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteInterface, "IPV6_PKTINFO", 0)},
		{name: "setsockopt IPV6_NEXTHOP", call: "setsockopt", args: [6]uint64{3, syscalls.SolIPv6, syscalls.IPv6Nexthop, addr1, 28}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteSource, "IPv6 next hop (IPV6_NEXTHOP)", 0)},
		{name: "setsockopt IPV6_2292PKTOPTIONS", call: "setsockopt", args: [6]uint64{3, syscalls.SolIPv6, syscalls.IPv62292Pktoptions, addr1, 32}, kind: syscalls.KindConnect,
			check: sockOp(syscalls.RouteSource, "IPv6 sticky options (IPV6_2292PKTOPTIONS)", 0)},
		{name: "setsockopt SO_KEEPALIVE, IPV6_NEXTHOP's number, passes", call: "setsockopt", args: [6]uint64{3, syscalls.SolSocket, 9, addr1, 4}, want: Pass},
		{name: "setsockopt SO_ATTACH_BPF, IP_UNICAST_IF's number, passes", call: "setsockopt", args: [6]uint64{3, syscalls.SolSocket, 50, addr1, 16}, want: Pass},
	}
	run(t, cases)
}

func TestDecodeSendmsg(t *testing.T) {
	in := sockIn(10, 0, 0, 1, 53)
	cases := []tcase{
		{name: "sendmsg to an address, copied when frozen", call: "sendmsg", args: [6]uint64{3, addr1},
			mem: map[uintptr]string{addr1: msghdr(addr2, 16, 0, 0), addr2: in}, kind: syscalls.KindConnect,
			check: func(t *testing.T, op *policy.Op, r *Result, e *fakeEnv) {
				sockOp("inet", "10.0.0.1", 53)(t, op, r, e)
				if e.msgCopies != 1 || len(e.byteArgs) != 0 || r.Relookup {
					t.Errorf("msg copies %d, sockaddr args read %v, relookup %v", e.msgCopies, e.byteArgs, r.Relookup)
				}
			}},
		{name: "namelen cut to sockaddr_storage", call: "sendmsg", args: [6]uint64{3, addr1},
			mem: map[uintptr]string{addr1: msghdr(addr2, 4000, 0, 0), addr2: in + string(make([]byte, 112))}, kind: syscalls.KindConnect},
		{name: "a connected send: no address, passes", call: "sendmsg", args: [6]uint64{3, addr1},
			mem: map[uintptr]string{addr1: msghdr(0, 16, 0, 0)}, want: Pass, kind: syscalls.KindConnect},
		{name: "namelen 0 is no address", call: "sendmsg", args: [6]uint64{3, addr1},
			mem: map[uintptr]string{addr1: msghdr(addr2, 0, 0, 0), addr2: in}, want: Pass, kind: syscalls.KindConnect},
		{name: "negative namelen: EINVAL", call: "sendmsg", args: [6]uint64{3, addr1},
			mem: map[uintptr]string{addr1: msghdr(addr2, -1, 0, 0), addr2: in}, want: KernelFails, errno: syscall.EINVAL},
		{name: "msghdr unreadable: EFAULT", call: "sendmsg", args: [6]uint64{3, bad}, want: KernelFails, errno: syscall.EFAULT},
		{name: "name unreadable: EFAULT", call: "sendmsg", args: [6]uint64{3, addr1},
			mem: map[uintptr]string{addr1: msghdr(bad, 16, 0, 0)}, want: KernelFails, errno: syscall.EFAULT},
		{name: "IP_RETOPTS in the control data is a source route", call: "sendmsg", args: [6]uint64{3, addr1},
			mem:  map[uintptr]string{addr1: msghdr(addr2, 16, addr3, 48), addr2: in, addr3: cmsg(1, 2, 4) + cmsg(syscalls.SolIP, syscalls.IPRetopts, 8)},
			kind: syscalls.KindConnect, check: sockOp("source-route", "IP options", 0)},
		{name: "IP_PKTINFO naming another interface sends out of it", call: "sendmsg", args: [6]uint64{3, addr1},
			mem:  map[uintptr]string{addr1: msghdr(addr2, 16, addr3, 32), addr2: in, addr3: cmsgData(syscalls.SolIP, syscalls.IPPktinfo, pktinfo4(2))},
			kind: syscalls.KindConnect, check: sockOp(syscalls.RouteInterface, "IP_PKTINFO (interface index 2)", 0)},
		{name: "IP_PKTINFO naming loopback is decided by the address", call: "sendmsg", args: [6]uint64{3, addr1},
			mem:  map[uintptr]string{addr1: msghdr(addr2, 16, addr3, 32), addr2: in, addr3: cmsgData(syscalls.SolIP, syscalls.IPPktinfo, pktinfo4(1))},
			kind: syscalls.KindConnect, check: sockOp("inet", "10.0.0.1", 53)},
		{name: "IP_PKTINFO naming none is decided by the address", call: "sendmsg", args: [6]uint64{3, addr1},
			mem:  map[uintptr]string{addr1: msghdr(addr2, 16, addr3, 32), addr2: in, addr3: cmsgData(syscalls.SolIP, syscalls.IPPktinfo, pktinfo4(0))},
			kind: syscalls.KindConnect, check: sockOp("inet", "10.0.0.1", 53)},
		{name: "IPV6_PKTINFO after another message names an interface", call: "sendmsg", args: [6]uint64{3, addr1},
			mem:  map[uintptr]string{addr1: msghdr(addr2, 16, addr3, 24+40), addr2: in, addr3: cmsg(1, 2, 4) + cmsgData(syscalls.SolIPv6, syscalls.IPv6Pktinfo, pktinfo6(3))},
			kind: syscalls.KindConnect, check: sockOp(syscalls.RouteInterface, "IPV6_PKTINFO (interface index 3)", 0)},
		{name: "SO_MARK as a control message", call: "sendmsg", args: [6]uint64{3, addr1},
			mem:  map[uintptr]string{addr1: msghdr(addr2, 16, addr3, 24), addr2: in, addr3: cmsgData(syscalls.SolSocket, syscalls.SoMark, le32(7))},
			kind: syscalls.KindConnect, check: sockOp(syscalls.RouteInterface, "SO_MARK", 0)},
		{name: "control data past the limit: ENOBUFS", call: "sendmsg", args: [6]uint64{3, addr1},
			mem: map[uintptr]string{addr1: msghdr(0, 0, addr3, maxControl+1)}, want: KernelFails, errno: syscall.ENOBUFS},
		{name: "sendmmsg: every address an operation, may sleep between", call: "sendmmsg", args: [6]uint64{3, addr1, 2},
			mem:  map[uintptr]string{addr1: mmsghdr(msghdr(addr2, 16, 0, 0)) + mmsghdr(msghdr(addr3, 16, 0, 0)), addr2: in, addr3: sockIn(1, 1, 1, 1, 53)},
			kind: syscalls.KindConnect, check: func(t *testing.T, op *policy.Op, r *Result, e *fakeEnv) {
				if len(r.Ops) != 2 || r.Ops[0] != op || r.Ops[1].Addr != "1.1.1.1" || !r.Relookup || e.msgCopies != 0 {
					t.Errorf("ops %d relookup %v copies %d", len(r.Ops), r.Relookup, e.msgCopies)
				}
			}},
		{name: "sendmmsg entry reading an earlier msg_len is rewritten", call: "sendmmsg", args: [6]uint64{3, addr1, 2},
			mem:  map[uintptr]string{addr1: mmsghdr(msghdr(0, 0, 0, 0)) + mmsghdr(msghdr(addr1+offMsgLen-2, 16, 0, 0))},
			kind: syscalls.KindConnect, check: func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
				if !strings.Contains(op.Rewritten, "entry 1") || r.Relookup || r.Out.Verdict != Decide || len(r.Ops) != 0 {
					t.Errorf("rewritten %q relookup %v outcome %+v ops %d", op.Rewritten, r.Relookup, r.Out, len(r.Ops))
				}
			}},
		{name: "sendmmsg in shared memory may alias", call: "sendmmsg", args: [6]uint64{3, addr1, 2},
			mem: map[uintptr]string{addr1: mmsghdr(msghdr(addr2, 16, 0, 0)) + mmsghdr(msghdr(addr3, 16, 0, 0)), addr2: in, addr3: in},
			env: func(e *fakeEnv) {
				e.maps = []procfs.Mapping{{Start: addr1, End: addr1 + 0x1000, Shared: true, Inode: 9}, {Start: addr3, End: addr3 + 0x1000, Shared: true, Inode: 9}}
			},
			kind: syscalls.KindConnect, check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !strings.Contains(op.Rewritten, "shared memory") {
					t.Errorf("rewritten %q", op.Rewritten)
				}
			}},
		{name: "sendmmsg in private memory does not alias", call: "sendmmsg", args: [6]uint64{3, addr1, 2},
			mem:  map[uintptr]string{addr1: mmsghdr(msghdr(addr2, 16, 0, 0)) + mmsghdr(msghdr(addr3, 16, 0, 0)), addr2: in, addr3: in},
			env:  func(e *fakeEnv) { e.maps = []procfs.Mapping{{Start: addr1, End: addr3 + 0x1000}} },
			kind: syscalls.KindConnect, check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.Rewritten != "" {
					t.Errorf("rewritten %q", op.Rewritten)
				}
			}},
		{name: "sendmmsg with an unreadable map is denied to be safe", call: "sendmmsg", args: [6]uint64{3, addr1, 2},
			mem: map[uintptr]string{addr1: mmsghdr(msghdr(addr2, 16, 0, 0)) + mmsghdr(msghdr(addr3, 16, 0, 0)), addr2: in, addr3: in},
			env: func(e *fakeEnv) { e.mapsErr = errors.New("gone") }, kind: syscalls.KindConnect,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !strings.Contains(op.Rewritten, "could not read the memory map") {
					t.Errorf("rewritten %q", op.Rewritten)
				}
			}},
		{name: "frozen sendmmsg: an addressed entry an exit could write", call: "sendmmsg", args: [6]uint64{3, addr1, 1},
			mem: map[uintptr]string{addr1: mmsghdr(msghdr(addr2, 16, 0, 0)), addr2: in},
			env: func(e *fakeEnv) { e.frozen, e.exitWritable = true, MkSpan(addr2, 1) }, kind: syscalls.KindConnect,
			check: func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
				if !strings.Contains(op.Rewritten, "entry 0 has an address") || r.Relookup {
					t.Errorf("rewritten %q relookup %v", op.Rewritten, r.Relookup)
				}
			}},
		{name: "unfrozen sendmmsg is not asked about exits", call: "sendmmsg", args: [6]uint64{3, addr1, 1},
			mem: map[uintptr]string{addr1: mmsghdr(msghdr(addr2, 16, 0, 0)), addr2: in},
			env: func(e *fakeEnv) { e.exitWritable = MkSpan(addr2, 1) }, kind: syscalls.KindConnect,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.Rewritten != "" {
					t.Errorf("rewritten %q", op.Rewritten)
				}
			}},
		{name: "sendmmsg vlen cut to UIO_MAXIOV", call: "sendmmsg", args: [6]uint64{3, addr1, 5000},
			mem: map[uintptr]string{addr1: strings.Repeat(mmsghdr(msghdr(0, 0, 0, 0)), uioMaxIOV)}, want: Pass, kind: syscalls.KindConnect},
		{name: "sendmmsg entry unreadable: EFAULT", call: "sendmmsg", args: [6]uint64{3, addr1, 2},
			mem: map[uintptr]string{addr1: mmsghdr(msghdr(0, 0, 0, 0))}, want: KernelFails, errno: syscall.EFAULT},
	}
	run(t, cases)
}
