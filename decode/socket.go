package decode

import (
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// sockaddr families.
const (
	afUnspec  = 0
	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16
)

// socket handles connect, bind, sendto, sendmsg, sendmmsg and setsockopt
// (listen is the tracer's: it asks which sockets were bound, listen.go).
func (d *Decoder) socket() *policy.Op {
	switch d.Name {
	case "socket":
		ok, what := syscalls.SocketAllowed(d.Regs.Int32Arg(0), d.Regs.Int32Arg(1), d.Regs.Int32Arg(2))
		if ok {
			d.Out = PassOutcome()
			return nil
		}
		return &policy.Op{Kind: syscalls.KindConnect, Syscall: d.Name, Family: syscalls.SocketCreate, Addr: what}
	case "setsockopt":
		level, name := d.Regs.Int32Arg(1), d.Regs.Int32Arg(2)
		family, what := syscalls.RouteOption(level, name, false)
		if family == "" || d.Regs.Arg(4) == 0 {
			// Another level's option, or options cleared (an optlen of
			// 0 unbinds SO_BINDTODEVICE; the others fail with EINVAL).
			d.Out = PassOutcome()
			return nil
		}
		return d.routeOp(family, what)
	}
	kind := syscalls.KindConnect
	if d.Name == "bind" {
		kind = syscalls.KindBind
	}
	type dest struct {
		ptr, n    uint64 // the sockaddr; ptr 0: none (a connected socket, checked at connect)
		arg       int    // the argument holding ptr (copied when frozen), -1: in a msghdr
		raw       []byte // the sockaddr's bytes, read already (a msghdr's name)
		rewritten string // why the kernel will not read what is checked (readMsgs)
	}
	var dests []dest
	switch d.Name {
	case "connect", "bind":
		dests = append(dests, dest{ptr: d.Regs.Arg(1), n: uint64(uint32(d.Regs.Arg(2))), arg: 1})
	case "sendto":
		dests = append(dests, dest{ptr: d.Regs.Arg(4), n: uint64(uint32(d.Regs.Arg(5))), arg: 4})
	case "sendmsg", "sendmmsg":
		msgs, bad, why, err := d.readMsgs()
		if err != nil {
			d.Out = KernelFailsWith(errnoOf(err, syscall.EFAULT))
			return nil
		}
		if d.Name == "sendmsg" {
			// A frozen call: the kernel reads the msghdr, the name and
			// the control data from a copy of what is checked here.
			m := msgs[0]
			d.Env.CopyMsg(m.hdr, m.nameb, m.ctlb, m.read)
		}
		if d.Name == "sendmmsg" && bad < 0 && d.Env.Frozen() {
			bad, why = d.exitRewritten(msgs)
		}
		for i, m := range msgs {
			if i == bad {
				// The kernel overwrites this entry before it reads it:
				// nothing decoded from it holds. Denied (policy
				// RuleKernelRewritten) with what it looked like.
				dests = append(dests[:0], dest{ptr: m.name, n: m.namelen, arg: -1, raw: m.nameb, rewritten: why})
				break
			}
			if m.routeFamily != "" {
				return d.routeOp(m.routeFamily, m.routeWhat)
			}
			dests = append(dests, dest{ptr: m.name, n: m.namelen, arg: -1, raw: m.nameb})
		}
	}
	var ops []*policy.Op
	from := "-" // the sending socket's local address, looked up once
	for _, a := range dests {
		var op *policy.Op
		if a.ptr != 0 {
			op = d.sockaddrOp(kind, uintptr(a.ptr), int(a.n), a.arg, a.raw)
		}
		if a.rewritten != "" {
			d.Out, d.Relookup = Outcome{}, false
			if op == nil {
				op = &policy.Op{Kind: kind, Syscall: d.Name}
			}
			op.Rewritten = a.rewritten
			return op
		}
		if d.Out.Fails() {
			return nil
		}
		if op == nil {
			continue
		}
		if kind == syscalls.KindConnect && d.Name != "connect" && (op.Family == "inet" || op.Family == "inet6") && d.Env.Loopback() {
			// A datagram from an unbound socket binds it to every
			// interface (policy.decideFrom).
			if from == "-" {
				from = d.Env.SendFrom(d.Regs.Int32Arg(0))
			}
			op.From = from
		}
		ops = append(ops, op)
	}
	if len(ops) > 0 {
		// The policy picks the address that decides the call (decodeOp).
		d.Ops = ops
		return ops[0]
	}
	d.Out = PassOutcome()
	return &policy.Op{Kind: kind, Syscall: d.Name}
}

// routeOp is the check of a socket option or control message that sends
// packets somewhere other than their destination address
// (syscalls.RouteOption): IP options or an IPv6 routing header or next hop
// (the first hop they name) or an outgoing interface (a packet for
// 127.0.0.1 leaves through it). Family is syscalls.RouteSource or
// syscalls.RouteInterface, what names the option for the report.
func (d *Decoder) routeOp(family, what string) *policy.Op {
	return &policy.Op{Kind: syscalls.KindConnect, Syscall: d.Name, Family: family, Addr: what}
}

// sockaddrOp decodes one socket address, n bytes at addr; raw, when not
// nil, are those bytes read already (a msghdr's name, copied with it).
// Otherwise they are read here and, for a frozen call, copied into a path
// page slot for argument arg, which the kernel then reads instead (copy and
// freeze, pathpage.go). nil means nothing to check.
func (d *Decoder) sockaddrOp(kind syscalls.Kind, addr uintptr, n int, arg int, raw []byte) *policy.Op {
	if n < 2 {
		d.Out = KernelFailsWith(syscall.EINVAL)
		return nil
	}
	if n > 128 { // sizeof(struct sockaddr_storage)
		n = 128
	}
	b := raw
	if b == nil {
		var err error
		if b, err = d.Env.ReadArgBytes(arg, addr, n); err != nil {
			d.Out = KernelFailsWith(syscall.EFAULT)
			return nil
		}
	}
	if len(b) < n {
		d.Out = KernelFailsWith(syscall.EFAULT)
		return nil
	}
	fam := int(binary.LittleEndian.Uint16(b))
	op := &policy.Op{Kind: kind, Syscall: d.Name}
	switch fam {
	case afUnspec:
		if d.Name == "connect" {
			return nil // connect(AF_UNSPEC) dissolves an association
		}
		// bind(AF_UNSPEC) binds INADDR_ANY: a public port; a send to
		// AF_UNSPEC goes where the same bytes as a sockaddr_in say
		// (policy.decideNet). Decode them so for the report.
		op.Family = "unspec"
		if kind != syscalls.KindBind && n >= 8 {
			op.Port = int(binary.BigEndian.Uint16(b[2:]))
			op.Addr = net.IP(b[4:8]).String()
		}
	case afInet:
		// struct sockaddr_in: family, port, 4-byte address at 4.
		if !d.inetAddr(op, "inet", b, n, 4, 4) {
			return nil
		}
	case afInet6:
		// struct sockaddr_in6: family, port, flow info, 16-byte address at 8.
		if !d.inetAddr(op, "inet6", b, n, 8, 16) {
			return nil
		}
	case afUnix:
		op.Family = "unix"
		sp := b[2:n]
		if len(sp) == 0 {
			return nil // unnamed: autobind
		}
		if kind != syscalls.KindBind {
			// unix_stream_connect and unix_dgram_sendmsg wait for room
			// in the peer's queue (unix_wait_for_peer, interruptible),
			// then "goto restart": the name is resolved again.
			d.Relookup = true
		}
		if sp[0] == 0 {
			op.Abstract = true
			op.Addr = "@" + strings.TrimRight(string(sp[1:]), "\x00")
			return op
		}
		if i := indexNul(sp); i >= 0 {
			sp = sp[:i]
		}
		op.Addr = string(sp)
		// connect follows a symlink to the socket; bind creates the
		// last component and does not.
		p, ok := d.PathArgBytes(sp, kind != syscalls.KindBind)
		if !ok {
			return nil
		}
		p.Role = "socket"
		op.Paths = []policy.Path{p}
	case afNetlink:
		// struct sockaddr_nl (linux/netlink.h): nl_family, nl_pad, __u32
		// nl_pid (the port: 0 is the kernel), __u32 nl_groups (multicast
		// groups). netlink_connect and netlink_sendmsg take 12 bytes or
		// fail EINVAL.
		op.Family = "netlink"
		if n < 12 {
			d.Out = KernelFailsWith(syscall.EINVAL)
			return nil
		}
		op.Port = int(binary.LittleEndian.Uint32(b[4:]))
		op.Addr = "groups " + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[8:])), 16)
	default:
		op.Family = "family(" + strconv.Itoa(fam) + ")"
	}
	return op
}

func indexNul(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return -1
}

// inetAddr fills op's family, port (network order at 2) and address (size
// bytes at off) from the n-byte sockaddr b; false, with the call failed
// EINVAL as the kernel fails it, when n is shorter than the address's end.
func (d *Decoder) inetAddr(op *policy.Op, family string, b []byte, n, off, size int) bool {
	if n < off+size {
		d.Out = KernelFailsWith(syscall.EINVAL)
		return false
	}
	op.Family = family
	op.Port = int(binary.BigEndian.Uint16(b[2:]))
	op.Addr = net.IP(b[off : off+size]).String()
	return true
}
