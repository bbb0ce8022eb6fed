package procfs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
)

// BoundAddr looks socket inode ino up in /proc/<tgid>/task/<tid>/net/<table>,
// which lists every bound (hashed) socket of the protocol in tid's network
// namespace with its local address as the kernel prints it: the __be32
// (IPv4) or the four 32-bit words (IPv6) of the address as native-endian
// hex (net/ipv4/udp.c udp4_format_sock, net/ipv6/datagram.c
// __ip6_dgram_sock_seq_show). An unbound socket is not listed.
func BoundAddr(tgid, tid int, table string, ino uint64) (string, bool, error) {
	// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
	fs, err := netRow(tgid, tid, table, 9, ino)
	if err != nil || fs == nil {
		return "", false, err
	}
	hexIP, _, _ := bytes.Cut(fs[1], []byte(":"))
	ip, err := NetIP(string(hexIP))
	if err != nil {
		return "", false, fmt.Errorf("/proc/%d/task/%d/net/%s: %w", tgid, tid, table, err)
	}
	return ip.String(), true, nil
}

// UnixSocket reports whether inode ino is an AF_UNIX socket of tid's
// network namespace: /proc/<tgid>/task/<tid>/net/unix lists every one,
// bound or not.
func UnixSocket(tgid, tid int, ino uint64) bool {
	// Num RefCount Protocol Flags Type St Inode [Path]
	fs, err := netRow(tgid, tid, "unix", 6, ino)
	return err == nil && fs != nil
}

// netRow returns the fields of the row of /proc/<tgid>/task/<tid>/net/<table>
// whose field col is inode ino (nil when no row is), skipping the header
// line. The calling thread's own directory, not /proc/<tgid>/net: that one
// is gone once the thread group's leader has exited while other threads
// live on (red team, session 25: a bound socket's send and an AF_UNIX
// listen were then denied with a false reason).
func netRow(tgid, tid int, table string, col int, ino uint64) ([][]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/net/%s", tgid, tid, table))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := []byte(strconv.FormatUint(ino, 10))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Scan() // the header
	for sc.Scan() {
		fs := bytes.Fields(sc.Bytes())
		if len(fs) > col && bytes.Equal(fs[col], want) {
			return fs, nil
		}
	}
	return nil, sc.Err()
}

// NetIP decodes an address of /proc/net/{udp,udp6,...}: 8 or 32 hex
// digits, each 32-bit word in the machine's (little-endian on x86_64 and
// aarch64) byte order.
func NetIP(h string) (net.IP, error) {
	if len(h) != 8 && len(h) != 32 {
		return nil, fmt.Errorf("bad address %q", h)
	}
	ip := make(net.IP, len(h)/2)
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(h[w*8:w*8+8], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("bad address %q", h)
		}
		binary.LittleEndian.PutUint32(ip[w*4:], uint32(v))
	}
	return ip, nil
}
