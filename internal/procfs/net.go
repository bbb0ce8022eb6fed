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

// BoundAddr looks socket inode ino up in /proc/<tgid>/net/<table>, which
// lists every bound (hashed) socket of the protocol in tgid's network
// namespace with its local address as the kernel prints it: the __be32
// (IPv4) or the four 32-bit words (IPv6) of the address as native-endian
// hex (net/ipv4/udp.c udp4_format_sock, net/ipv6/datagram.c
// __ip6_dgram_sock_seq_show). An unbound socket is not listed.
func BoundAddr(tgid int, table string, ino uint64) (string, bool, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", tgid, table))
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	want := []byte(strconv.FormatUint(ino, 10))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fs := bytes.Fields(sc.Bytes())
		if len(fs) < 10 || !bytes.Equal(fs[9], want) {
			continue
		}
		hexIP, _, _ := bytes.Cut(fs[1], []byte(":"))
		ip, err := NetIP(string(hexIP))
		if err != nil {
			return "", false, fmt.Errorf("/proc/%d/net/%s: %w", tgid, table, err)
		}
		return ip.String(), true, nil
	}
	return "", false, sc.Err()
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
