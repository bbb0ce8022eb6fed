package tracer

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/procfs"
)

// span is a range of tracee memory (decode.Span).
type span = decode.Span

// Local address of a sending socket (policy.Op.From).

// protoNet maps a socket's protocol name (the sockfs xattr
// system.sockprotoname: struct proto .name) to the /proc/<pid>/net table
// that lists it when it is bound, for the protocols a send binds on its
// own to the wildcard address (inet_autobind).
var protoNet = map[string]string{
	"UDP": "udp", "UDPv6": "udp6", "UDP-Lite": "udplite", "UDPLITEv6": "udplite6",
	"PING": "icmp", "PINGv6": "icmp6", "RAW": "raw", "RAWv6": "raw6",
}

// streamProto are the protocols whose send never binds to the wildcard: a
// TCP send to an address is either refused (not connected) or, with
// MSG_FASTOPEN, a connect, which binds to the route's source address
// (inet_hash_connect).
var streamProto = map[string]bool{"TCP": true, "TCPv6": true, "MPTCP": true, "MPTCPv6": true}

// sendFrom is policy.Op.From for a send on fd of c: "" for a stream socket,
// "unbound", the bound local IP, or a "?..." text when it cannot be told.
func (t *tracer) sendFrom(c *call, fd int32) string {
	if fd < 0 {
		return "" // EBADF from the kernel
	}
	link := fmt.Sprintf("/proc/%d/task/%d/fd/%d", c.tk.tgid, c.tk.tid, fd)
	ino, ok := socketInode(c.tk, fd)
	if !ok {
		return "" // not a socket: ENOTSOCK, EBADF
	}
	var buf [64]byte
	n, err := unix.Getxattr(link, "system.sockprotoname", buf[:])
	if err != nil {
		return "?(protocol unknown: " + err.Error() + ")"
	}
	proto := strings.TrimRight(string(buf[:n]), "\x00")
	if streamProto[proto] {
		return ""
	}
	table, ok := protoNet[proto]
	if !ok {
		return "?(protocol " + proto + ")"
	}
	ip, found, err := procfs.BoundAddr(c.tk.tgid, c.tk.tid, table, ino)
	switch {
	case err != nil:
		return "?(" + err.Error() + ")"
	case !found:
		return "unbound"
	}
	return ip
}
