package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/tracecell/tracecell/syscalls"
)

// decideNet decides connect (and sendto/sendmsg with an address) and bind.
func (p *Policy) decideNet(op *Op, l Ledger) Decision {
	if op.Rewritten != "" {
		// What was checked is not what the kernel will use: no decision
		// on the address can hold (net/socket.c __sys_sendmmsg writes
		// msg_len of entry i before it reads entry i+1).
		if p.cfg.Net == NetAllow {
			return allow(RuleNetAllow)
		}
		return deny(syscall.EACCES, RuleKernelRewritten, op.Rewritten)
	}
	verb := "connect to"
	if op.Kind == syscalls.KindBind {
		verb = "bind to"
	} else if isSend(op.Syscall) {
		verb = "send to"
	}
	if e, ok := p.unreachable(op); ok {
		target := e.Unix
		if target == "" {
			ip, _ := netip.ParseAddr(op.Addr)
			target = netip.AddrPortFrom(ip, uint16(op.Port)).String()
		}
		what := e.What
		if what == "" {
			what = "a socket of the program that runs the sandbox"
		}
		if isSend(op.Syscall) {
			verb = "send to"
		}
		return deny(syscall.EACCES, RuleUnreachable, fmt.Sprintf("%s %s is never allowed, whatever the network policy: it is %s", verb, target, what))
	}
	switch op.Family {
	case "unix":
		return p.decideUnix(op, l)
	case "inet", "inet6":
		return p.decideInet(op, verb)
	case syscalls.RouteSource, syscalls.RouteInterface, syscalls.RouteMembership, syscalls.SocketCreate:
		// Ways past the checked destination, allowed only with the
		// network open (optionHarm says how each one gets out).
		if p.cfg.Net == NetAllow {
			return allow(RuleNetAllow)
		}
		return p.netDenied(optionHarm(op), RuleNetLoopback)
	case "netlink":
		// NETLINK_ROUTE is how glibc's getaddrinfo (AI_ADDRCONFIG) and
		// if_nameindex learn the local addresses: their peer is the
		// kernel (port 0, no group). A message to another port id or to
		// a multicast group reaches user-space processes (NETLINK_USERSOCK
		// lets any user send and receive): a channel to host processes
		// like an abstract socket, decided like one (the red team reached
		// a host listener under --net deny). The tracer gives the port in
		// Port and the groups in Addr ("groups HEX").
		if op.Kind != syscalls.KindConnect || p.cfg.Net == NetAllow || (op.Port == 0 && (op.Addr == "" || op.Addr == "groups 0")) {
			return allow(RuleNetlink)
		}
		return p.netDenied(fmt.Sprintf("%s a netlink socket of another process (port id %d, %s): user-space netlink peers are host processes", verb, op.Port, op.Addr), RuleNetLoopback)
	case "", "unspec":
		if op.Kind == syscalls.KindConnect && !isSend(op.Syscall) {
			// connect(AF_UNSPEC) dissolves the association (connect(2)).
			return allow(RuleUnspec)
		}
		if op.Kind == syscalls.KindConnect {
			// A send to an AF_UNSPEC address is no disconnect: UDP and raw
			// IPv4 sockets take it as AF_INET (net/ipv4/udp.c udp_sendmsg:
			// "if (usin->sin_family != AF_INET) { if (usin->sin_family !=
			// AF_UNSPEC) return -EAFNOSUPPORT; }"), and a packet socket
			// never looks at the family. No program needs it: deny it
			// unless the network is open.
			if p.cfg.Net == NetAllow {
				return allow(RuleNetAllow)
			}
			what := "send to an address of family AF_UNSPEC, which UDP and raw sockets take as IPv4"
			if op.Addr != "" {
				what += " (" + op.Addr + ":" + strconv.Itoa(op.Port) + ")"
			}
			return p.netDenied(what, RuleNetLoopback)
		}
		// inet_bind accepts AF_UNSPEC as AF_INET with INADDR_ANY for
		// compatibility (net/ipv4/af_inet.c __inet_bind): a public port.
		// listen on a socket bound to no allowed address binds it the
		// same way (the tracer's decodeListen).
		if p.cfg.Net == NetAllow {
			return allow(RuleNetAllow)
		}
		what := verb + " the unspecified address (every interface)"
		if op.Syscall == "listen" {
			what = "listen on a socket not bound to an allowed address, which the kernel binds to every interface"
			if p.cfg.Net == NetLoopback {
				what += " (bind it to 127.0.0.1 first)"
			}
			if op.Addr != "" {
				what += " " + op.Addr
			}
		}
		return p.netDenied(what, RuleNetLoopback)
	}
	if p.cfg.Net == NetAllow {
		return allow(RuleNetAllow)
	}
	return deny(syscall.EACCES, RuleNetFamily, fmt.Sprintf("socket family %s is not allowed (--net %s)", op.Family, p.cfg.Net))
}

// isSend: the call sends a datagram to the address it names (a
// connect-kind check that is no connect).
func isSend(syscall string) bool {
	return syscall == "sendto" || syscall == "sendmsg" || syscall == "sendmmsg"
}

// optionHarm says, for a denial's reason, how a socket option, control
// message or socket kind (op.Family, what in op.Addr) gets traffic past
// the checked destination:
//   - RouteSource: IP options (LSRR, SSRR), an IPv6 routing header or next
//     hop send the packet to the first hop they name;
//   - RouteInterface: an outgoing interface (SO_BINDTODEVICE,
//     IP_UNICAST_IF, a pktinfo's index, SO_MARK) sends a packet for
//     127.0.0.1 out of that interface onto its network;
//   - RouteMembership: a multicast join, leave or source filter change
//     makes the kernel send a membership report naming the group the
//     program chose out of an interface, whatever --net says of addresses;
//   - SocketCreate: a socket of a family or protocol whose traffic no
//     checked call covers (SCTP connects through setsockopt and
//     getsockopt; raw and packet sockets take the destination from the
//     packet itself).
func optionHarm(op *Op) string {
	switch op.Family {
	case syscalls.RouteSource:
		return "set " + op.Addr + ", which route packets through other hosts (source routing)"
	case syscalls.RouteInterface:
		return "set " + op.Addr + ", which sends packets out of a chosen network interface whatever their address"
	case syscalls.RouteMembership:
		return "set " + op.Addr + ", which makes the kernel send a multicast membership report naming a group the program chose onto the network"
	}
	return "create a socket of " + op.Addr + " (only AF_UNIX, AF_NETLINK and TCP, UDP and ping sockets of AF_INET and AF_INET6 are allowed)"
}

func (p *Policy) netDenied(what string, loopRule Rule) Decision {
	if p.cfg.Net == NetDeny {
		return deny(syscall.EACCES, RuleNetDeny, "network access is not allowed (--net deny): "+what)
	}
	return deny(syscall.EACCES, loopRule, "only loopback addresses are allowed (--net loopback): "+what)
}

func (p *Policy) decideInet(op *Op, verb string) Decision {
	if p.cfg.Net == NetAllow {
		return allow(RuleNetAllow)
	}
	ip, err := netip.ParseAddr(op.Addr)
	what := verb + " " + op.Addr + ":" + strconv.Itoa(op.Port)
	if err == nil {
		what = verb + " " + netip.AddrPortFrom(ip, uint16(op.Port)).String()
	}
	if p.cfg.Net == NetDeny || err != nil {
		return p.netDenied(what, RuleNetLoopback)
	}
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if ip.IsLoopback() {
		if op.Kind == syscalls.KindConnect && isSend(op.Syscall) && op.From != "" {
			return p.decideFrom(op, what)
		}
		return allow(RuleLoopback)
	}
	if ip.IsUnspecified() && op.Kind == syscalls.KindConnect {
		if isSend(op.Syscall) && op.From != "" {
			return p.decideFrom(op, what)
		}
		// Connecting to 0.0.0.0 or :: reaches the loopback address
		// (net/ipv4/route.c ip_route_output_key_hash_rcu: "if (!fl4->daddr)
		// ... fl4->daddr = fl4->saddr = htonl(INADDR_LOOPBACK)";
		// net/ipv6/tcp_ipv6.c tcp_v6_connect: any → in6addr_loopback).
		// Binding to it, by contrast, listens on every interface.
		return allow(RuleLoopback)
	}
	return p.netDenied(what, RuleNetLoopback)
}

// decideFrom decides, under --net loopback, the socket a datagram to a
// loopback address is sent from. An unbound UDP (or ping, raw) socket is
// bound by the send itself to the wildcard address with a fresh port
// (net/ipv4/af_inet.c inet_sendmsg → inet_autobind; the same for IPv6):
// from then on datagrams from any host reach it. One bound to the
// wildcard already receives them too. Only a socket bound to a loopback
// address keeps the tree off the network.
func (p *Policy) decideFrom(op *Op, what string) Decision {
	switch op.From {
	case "unbound":
		return p.netDenied(what+" from a socket that is not bound, which the kernel then binds to every interface so that any host can send to it (bind it to 127.0.0.1 or ::1 first)", RuleNetLoopback)
	}
	ip, err := netip.ParseAddr(op.From)
	if err == nil && ip.Unmap().IsLoopback() {
		return allow(RuleLoopback)
	}
	return p.netDenied(what+" from a socket bound to "+op.From+", which any host can send to (bind it to 127.0.0.1 or ::1)", RuleNetLoopback)
}

// Worst is, of the operations of one call that sends to several addresses
// (sendmmsg), the one that decides it: the first one denied, or the first
// one when all are allowed. nil when ops is empty.
func (p *Policy) Worst(ops []*Op, l Ledger) *Op {
	for _, op := range ops {
		if !p.Decide(op, l).Allow {
			return op
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return ops[0]
}

// decideUnix: abstract sockets live in the network namespace, where host
// daemons listen (X11, containerd shims); path sockets outside the sandbox
// are host daemons too (docker.sock, D-Bus, journald's /dev/log). Binding a
// path creates a file and is checked as a create even under --net allow.
func (p *Policy) decideUnix(op *Op, l Ledger) Decision {
	if op.Abstract || len(op.Paths) == 0 {
		if !op.Abstract && op.Kind == syscalls.KindBind {
			// bind with only sa_family: autobind to a fresh abstract
			// name; nobody is reached.
			return allow(RuleUnixAutobind)
		}
		if p.cfg.Net == NetAllow {
			return allow(RuleNetAllow)
		}
		name := op.Addr
		if name == "" {
			name = "(unnamed)"
		}
		return deny(syscall.EACCES, RuleUnixAbstract, fmt.Sprintf("abstract unix socket %s is not allowed (--net %s)", name, p.cfg.Net))
	}
	pa := &op.Paths[0]
	if op.Kind == syscalls.KindBind {
		d, scratch := p.writable(syscalls.KindCreate, "path", pa, l)
		if scratch != "" {
			d.Scratch = []string{scratch}
		}
		return d
	}
	if p.cfg.Net == NetAllow {
		return allow(RuleNetAllow)
	}
	res := pa.Resolved
	if pa.Special == "" && clean(res) {
		if _, ok := p.writeRoot(res); ok {
			return allow(RuleUnixInRoots)
		}
		// Scratch sockets only when the tree made them: a host daemon
		// may listen in /dev/shm as well.
		if s, ok := p.scratchDir(res); ok && res != s && l != nil && l.Owned(res) {
			return allow(RuleUnixInRoots)
		}
	}
	return deny(syscall.EACCES, RuleUnixOutsideRoots, fmt.Sprintf("unix socket %s is outside writable roots (%s)", res, p.writeText))
}
