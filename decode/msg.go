package decode

// Sends with a struct msghdr (sendmsg, sendmmsg), and the memory the kernel
// writes itself while it reads what was checked.
//
// A check of tracee memory holds only if the kernel reads that memory
// before anything can change it. Within the tree, a freeze stops every
// other task (tracer/freeze.go); what is left is the kernel's own writes during
// the very call. Every place the tracer reads tracee memory, and whether
// the kernel writes anything there before it reads it (Linux 4.18 to 6.18):
//
//   - paths (open*, *at, exec's path, AF_UNIX sun_path; ReadArgString in
//     PathArg), fcntl F_SETOWN_EX's struct f_owner_ex, the int of ioctl
//     FIOASYNC/FIOSETOWN/SIOCSPGRP/TIOCSPGRP, sockaddrs of
//     connect/bind/sendto (sockaddrOp): the kernel copies each in
//     (getname, copy_from_user, get_user, move_addr_to_kernel) before it
//     writes any user memory, and these calls write none before; nothing
//     to do. mmap/mprotect ranges and the rest are registers.
//   - TIOCGPTN's int (tracer/pty.go) is read after the call, as its result.
//   - sendmsg: copy_msghdr_from_user reads the whole msghdr, then the name
//     (move_addr_to_kernel), the iovec, the control data
//     (____sys_sendmsg: sock_kmalloc + copy_from_user of msg_control); it
//     writes no user memory before the protocol's sendmsg (msg_flags,
//     msg_namelen, msg_controllen are written back only by the recv
//     calls). The control messages the tracer checks (IP_RETOPTS,
//     IPV6_RTHDR: source routing) are therefore read once, before any
//     write. SCM_RIGHTS passes fds and SCM_CREDENTIALS a pid/uid/gid the
//     kernel verifies (scm_check_creds); neither names a destination, and
//     the peer they reach is the socket's destination, which is checked,
//     so the tracer does not look at them.
//   - sendmmsg: __sys_sendmmsg sends entry i (___sys_sendmsg) and then
//     writes its msg_len (put_user, 4 bytes at offset 56 of struct
//     mmsghdr on 64-bit) before it reads entry i+1. Memory of entry j that
//     overlaps msg_len of an earlier entry is checked as one value and
//     used as another: see rewritten. And a send may sleep before entry
//     i+1 is read: such a call is never left to finish unfrozen (readMsgs
//     sets call.relookup).
//   - recvmsg/recvmmsg are not checked (they name no destination).
//   - readv/writev/preadv/pwritev, process_vm_readv: not checked (the fd
//     or the pid in a register decides).
//
// Writes by the kernel on behalf of another task are a different matter: a
// task of the tree killed while the tree is frozen (SIGKILL ends a
// ptrace-stopped task at once) writes its clear_child_tid and robust
// futexes on its way out, after the check. connect, bind, sendto and
// sendmsg therefore run frozen on copies in the path page (tracer/pathpage.go,
// "Copy and freeze"; msgCopy), and so do futex_waitv and futex_requeue
// (their struct futex_waitv array: ReadArgBytes); sendmmsg, whose entries
// the kernel writes msg_len into and which so cannot be copied there, is
// denied an addressed entry that such an exit could write (exitRewritten).
// Any other memory read through Memory.ReadBytes for a frozen call (ioctl
// and fcntl arguments) is not copied: the tracer denies the call where an
// exit could write it (tracer/copyfreeze.go, uncopiedRead).
//
// A write can also reach checked memory through another virtual address
// of the same page: a MAP_SHARED mapping mapped twice (mmap of one memfd,
// or mremap with old_size 0, which works only on shared mappings since
// Linux 4.14, mm/mremap.c), or a MAP_PRIVATE file mapping whose page is
// still the page cache page the shared one writes. A write into a private
// mapping never shows elsewhere: it copies the page (COW). So an overlap
// is looked for both by address and, when the kernel writes into a shared
// mapping, by possible aliasing.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"syscall"

	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/syscalls"
	"golang.org/x/sys/unix"
)

const (
	sizeofMsghdr  = unix.SizeofMsghdr  // struct user_msghdr: 56 bytes on 64-bit (x86_64, aarch64)
	sizeofMmsghdr = unix.SizeofMmsghdr // struct mmsghdr: msghdr, unsigned int msg_len, padding: 64
	offMsgLen     = unix.SizeofMsghdr  // msg_len in struct mmsghdr, right after its msghdr
	uioMaxIOV     = 1024
	// maxControl bounds the control data read. The kernel takes up to
	// net.core.optmem_max bytes (____sys_sendmsg: sock_kmalloc, ENOBUFS
	// past it): 20480 by default on 4.18, 131072 on 6.x, and root may
	// raise it. Up to maxControl the tracer reads it all; past it (only
	// where optmem_max was raised past it) the call fails with ENOBUFS, as
	// it would under the default limit. The red team hid a source route
	// behind 70000 bytes of padding when this was 64 KiB.
	maxControl = 16 << 20
)

// Span is a range of tracee memory, [lo, hi).
type Span struct{ Lo, Hi uint64 }

// Overlaps reports whether a and b share a byte.
func (a Span) Overlaps(b Span) bool { return a.Lo < b.Hi && b.Lo < a.Hi }

// MkSpan is [addr, addr+n), clipped at the top of the address space (the
// kernel faults there anyway).
func MkSpan(addr, n uint64) Span {
	hi := addr + n
	if hi < addr {
		hi = ^uint64(0)
	}
	return Span{addr, hi}
}

// msg is what the tracer read of one struct msghdr.
type msg struct {
	name    uint64 // msg_name; 0 when the kernel takes no address
	namelen uint64
	// routeFamily and routeWhat describe a control message that sends
	// the datagram past its destination (syscalls.RouteOption, a pktinfo
	// naming an interface that is not loopback); "" for none.
	routeFamily, routeWhat string
	read                   []Span // every byte the tracer read for it
	// hdr, nameb, ctlb are the bytes read: the msghdr, the name (the
	// namelen the kernel takes) and the control data the source-route
	// check parsed (nil when not read), which a frozen sendmsg runs on
	// copies of (msgCopy).
	hdr, nameb, ctlb []byte
}

// readMsg reads the struct msghdr at addr: its name, as the kernel takes it
// (net/socket.c copy_msghdr_from_user: a NULL msg_name or a msg_namelen of
// 0 is no address; a negative msg_namelen is EINVAL; one above
// sizeof(struct sockaddr_storage) is cut to it), and whether its control
// messages set a source route. The error is the kernel's: EFAULT, EINVAL.
func (d *Decoder) readMsg(addr uint64) (msg, error) {
	var m msg
	b, err := d.Env.ReadBytes(uintptr(addr), sizeofMsghdr)
	if err != nil {
		return m, syscall.EFAULT
	}
	m.read = append(m.read, MkSpan(addr, sizeofMsghdr))
	m.hdr = b
	name := binary.LittleEndian.Uint64(b)
	nlen := int32(binary.LittleEndian.Uint32(b[8:]))
	if name != 0 && nlen < 0 {
		return m, syscall.EINVAL
	}
	if name != 0 && nlen > 0 {
		m.name, m.namelen = name, uint64(nlen)
		if m.namelen > 128 {
			m.namelen = 128
		}
		m.read = append(m.read, MkSpan(m.name, m.namelen))
		// Read here, once: the address decided on is the one copied.
		if m.nameb, err = d.Env.ReadBytes(uintptr(m.name), int(m.namelen)); err != nil {
			return m, syscall.EFAULT // move_addr_to_kernel
		}
	}
	ctl, n := binary.LittleEndian.Uint64(b[32:]), binary.LittleEndian.Uint64(b[40:])
	if ctl != 0 && n >= 16 {
		if n > maxControl {
			return m, syscall.ENOBUFS
		}
		m.read = append(m.read, MkSpan(ctl, n))
		// Unreadable control data is the kernel's EFAULT too
		// (____sys_sendmsg copies it whole before it sends): the call
		// fails so, never runs on data the check did not see (red team
		// pass 7: a source route in memory only the task could read).
		cm, err := d.Env.ReadBytes(uintptr(ctl), int(n))
		if err != nil {
			return m, syscall.EFAULT
		}
		m.ctlb = cm
		m.routeFamily, m.routeWhat = ctlRoute(cm, d.Env.LoopbackIf)
	}
	return m, nil
}

// ctlRoute reports whether the control messages cm send the datagram
// somewhere other than its destination: IP options, an IPv6 routing header
// or next hop (IP_RETOPTS, IPV6_RTHDR, IPV6_NEXTHOP), SO_MARK, or a pktinfo
// naming an interface that loopback(index) does not call a loopback one.
// It returns the first such message's family and description, "" for none.
func ctlRoute(cm []byte, loopback func(int32) bool) (family, what string) {
	n := uint64(len(cm))
	for off := uint64(0); off+16 <= n; {
		// struct cmsghdr: size_t cmsg_len; int cmsg_level; int cmsg_type
		clen := binary.LittleEndian.Uint64(cm[off:])
		level := int32(binary.LittleEndian.Uint32(cm[off+8:]))
		typ := int32(binary.LittleEndian.Uint32(cm[off+12:]))
		if clen < 16 || clen > n-off {
			break // the kernel stops here too (__cmsg_nxthdr, EINVAL)
		}
		if f, w := syscalls.RouteOption(level, typ, true); f != "" {
			return f, w
		}
		if ix, ok := syscalls.PktinfoIfindex(level, typ, cm[off+16:off+clen]); ok && ix != 0 && !loopback(ix) {
			name := "IP_PKTINFO"
			if level == syscalls.SolIPv6 {
				name = "IPV6_PKTINFO"
			}
			return syscalls.RouteInterface, name + " (interface index " + strconv.Itoa(int(ix)) + ")"
		}
		off += (clen + 7) &^ 7
	}
	return "", ""
}

// readMsgs reads the messages of sendmsg (one) or sendmmsg (vlen, cut to
// UIO_MAXIOV as __sys_sendmmsg does) and, for sendmmsg, why an entry's
// checked memory is not what the kernel will read (rewritten): the index
// of the first such entry and the reason, or -1.
func (d *Decoder) readMsgs() ([]msg, int, string, error) {
	base := d.Regs.Arg(1)
	if d.Name == "sendmsg" {
		m, err := d.readMsg(base)
		return []msg{m}, -1, "", err
	}
	vlen := uint64(uint32(d.Regs.Arg(2)))
	if vlen > uioMaxIOV { // the kernel sends at most UIO_MAXIOV
		vlen = uioMaxIOV
	}
	if vlen > 1 {
		// The kernel reads entry i+1 only after it sent entry i, and a
		// send may sleep (a full AF_UNIX queue, socket buffers): were the
		// tree let go while it sleeps, another thread could rewrite a
		// later entry before the kernel reads it, whatever its family.
		// A frozen run is interrupted instead (tracer/freeze.go, Relookup): the
		// kernel returns the count sent so far (__sys_sendmmsg), or
		// restarts the call, which stops here and is checked again.
		d.Relookup = true
	}
	msgs := make([]msg, 0, vlen)
	for i := uint64(0); i < vlen; i++ {
		m, err := d.readMsg(base + i*sizeofMmsghdr)
		if err != nil {
			return nil, -1, "", err
		}
		msgs = append(msgs, m)
	}
	j, why := d.rewritten(base, msgs)
	return msgs, j, why, nil
}

// rewritten finds the first entry j of a sendmmsg whose checked memory the
// kernel overwrites before it reads it: entry i's msg_len, written after
// entry i is sent (i < j), overlaps what was read for entry j, or may be
// the same page under another address (a shared mapping written, a shared
// or file mapping read; see the top of this file). It returns -1 when none.
func (d *Decoder) rewritten(base uint64, msgs []msg) (int, string) {
	if len(msgs) < 2 {
		return -1, ""
	}
	lens := func(i int) Span { return MkSpan(base+uint64(i)*sizeofMmsghdr+offMsgLen, 4) }
	for j := 1; j < len(msgs); j++ {
		for _, r := range msgs[j].read {
			for i := 0; i < j; i++ {
				if r.Overlaps(lens(i)) {
					return j, fmt.Sprintf("sendmmsg entry %d reads memory at %#x that the kernel overwrites with entry %d's msg_len (at %#x) before it reads entry %d, so the address checked is not the one it would send to",
						j, r.Lo, i, lens(i).Lo, j)
				}
			}
		}
	}
	// Aliases: only when some msg_len the kernel writes before a later
	// entry is read lies in a shared mapping.
	written := Span{lens(0).Lo, lens(len(msgs) - 2).Hi}
	vmas, err := d.Env.Maps()
	if err != nil {
		return 1, fmt.Sprintf("sendmmsg of %d entries: tracecell could not read the memory map to rule out that the kernel's msg_len writes change later entries (%v), so the call is denied to be safe", len(msgs), err)
	}
	if !anyMapping(vmas, written, func(v procfs.Mapping) bool { return v.Shared }) {
		return -1, ""
	}
	for j := 1; j < len(msgs); j++ {
		for _, r := range msgs[j].read {
			if anyMapping(vmas, r, func(v procfs.Mapping) bool { return v.Shared || v.Inode != 0 }) {
				return j, fmt.Sprintf("sendmmsg entries lie in shared memory: the kernel writes each entry's msg_len there before it reads the next, and entry %d's memory at %#x may be the same pages under another address, so the address checked may not be the one it would send to (use private memory for the mmsghdr array)",
					j, r.Lo)
			}
		}
	}
	return -1, ""
}

// exitRewritten is, for a frozen sendmmsg, the first entry with an address
// whose memory the exit of a task the freeze cannot hold could write after
// the check (clear_child_tid, robust futexes: tracer/pathpage.go), and why; -1
// when none. Such an entry cannot run on a copy: the kernel writes its
// msg_len back into the mmsghdr (put_user after each entry is sent), which
// the read-only path page would fail with EFAULT. Entries without an
// address are not looked at: the socket's connected peer was checked at
// connect, whatever the memory says now.
//
// Precondition: the tree is frozen.
func (d *Decoder) exitRewritten(msgs []msg) (int, string) {
	for j, m := range msgs {
		if m.name == 0 {
			continue
		}
		if why := d.Env.ExitWritable(m.read); why != "" {
			return j, fmt.Sprintf("sendmmsg entry %d has an address, and %s: a task killed while the tree is stopped could change the entry after the check (its exit writes clear_child_tid and robust futexes), and sendmmsg's entries cannot be copied where the program cannot write (the kernel writes msg_len back into them), so the call is denied to be safe (use sendmsg or sendto for addressed sends from shared memory)", j, why)
		}
	}
	return -1, ""
}

// anyMapping reports whether a mapping of ms that overlaps r satisfies f.
func anyMapping(ms []procfs.Mapping, r Span, f func(procfs.Mapping) bool) bool {
	for _, m := range ms {
		if r.Overlaps(Span{m.Start, m.End}) && f(m) {
			return true
		}
	}
	return false
}
