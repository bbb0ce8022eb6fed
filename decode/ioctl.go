package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// ioctl decides the ioctl commands the filter traps: every command
// not on its allow-list (syscalls.IoctlAllowed). Those of syscalls.Ioctls
// by their own rule: inode attribute changes on the fd's file (they work on
// read-only fds), terminal input injection and whole-file-system changes
// (forbidden), SIGIO owner changes, btrfs subvolume creations (a create of
// the name in the fd's directory); TIOCGPTN passes, followed to its end
// (pty.go). A command of a whole-file-system family (syscalls.IoctlFamily)
// is forbidden; any other is decided as a change of what its fd points to
// (policy: decideIoctl), since nothing says what it does.
func (d *Decoder) ioctl() *policy.Op {
	cmd := uint32(d.Regs.Arg(1)) // an unsigned int: the kernel ignores the high half
	if syscalls.IoctlPasses(cmd) {
		// Our filter lets these through; this stop came from a filter
		// of the program's own (SECCOMP_RET_TRACE).
		d.Out = PassOutcome()
		return nil
	}
	d.Flags = syscalls.FormatIoctl(cmd)
	is, ok := syscalls.LookupIoctl(cmd)
	if !ok {
		if fam, whole := syscalls.IoctlFamily(cmd); whole {
			return d.forbiddenIoctl(d.Flags + " (" + fam + " commands reach beyond the file their fd points to)")
		}
		if cmd == syscalls.TIOCNOTTY {
			// The caller's controlling terminal (its session's, for a
			// session leader) is about to go: one not the tree's is
			// noted first, for the /dev/tty fds whose terminal cannot be
			// asked (tracer/ctty.go).
			d.Env.Ctty()
		}
		op := d.FdMeta(0, syscalls.KindIoctl)
		if op != nil {
			op.Ioctl = d.Flags
			if cmd == syscalls.FIDEDUPERANGE {
				return d.dedupeOp(op)
			}
		}
		return op
	}
	switch is.Kind {
	case syscalls.KindNone:
		d.FollowPty = true
		d.Out = PassOutcome()
		return nil
	case syscalls.KindForbidden:
		return d.forbiddenIoctl(is.Name)
	case syscalls.KindCreate:
		return d.subvolCreate(cmd)
	case syscalls.KindWrite:
		// A terminal change: on tracecell's own terminal (any kind, the
		// command's stdio) it passes; elsewhere it is decided as a write of
		// what fd points to (pty.go). fstat through /proc/<tid>/fd/N
		// follows the fd, whatever path it was opened by.
		fd := d.Regs.Int32Arg(0)
		dev, ok := d.Env.CharDev(fd)
		if ok && DevTTYRdev(dev.Rdev) {
			// An fd of /dev/tty acts on the terminal that was the
			// controlling one when it was opened: decided as that
			// terminal (tracer/ctty.go), never as the default device.
			tm := d.Env.FdTerminal(fd)
			if tm.None {
				d.Out = PassOutcome() // hung up: the kernel fails every change on it
				return nil
			}
			op := d.FdMeta(0, is.Kind)
			if op != nil {
				setTerminal(&op.Paths[0], tm)
			}
			return op
		}
		if ok && d.Env.StdioTTY(dev) {
			d.Out = PassOutcome()
			return nil
		}
	case syscalls.KindSignal:
		b, err := d.Env.ReadBytes(uintptr(d.Regs.Arg(2)), 4)
		if err != nil {
			d.Out = KernelFailsWith(syscall.EFAULT)
			return nil
		}
		v := int(int32(binary.LittleEndian.Uint32(b)))
		if is.Name == "FIOASYNC" {
			return d.asyncOp(v != 0)
		}
		return d.ownerOp(v)
	}
	return d.FdMeta(0, is.Kind)
}

// forbiddenIoctl denies an ioctl whatever its fd is; the report names what
// the fd points to (for FIFREEZE and the like, a file on the file system
// aimed at) when that resolves. A bad fd is denied all the same, not
// failed.
func (d *Decoder) forbiddenIoctl(what string) *policy.Op {
	op := &policy.Op{Kind: syscalls.KindForbidden, Syscall: d.Name + "(" + what + ")"}
	fd := d.Regs.Int32Arg(0)
	if p, ok := d.FdArgPath(fd); ok {
		op.Paths = []policy.Path{p}
	}
	d.Out = Outcome{}
	return op
}

// subvolCreate decides BTRFS_IOC_SUBVOL_CREATE(_V2) and
// BTRFS_IOC_SNAP_CREATE(_V2) (syscalls.BtrfsIocSubvolCreate): a new
// subvolume, an empty directory or a copy of the source subvolume, named
// by a plain name in the directory fd points to. It is decided as a create
// of that entry, resolved from the fd; a snapshot's source subvolume must
// be writable too (a snapshot copies a whole tree, the files a deny-read
// or read root keeps from the program included, with owners and modes).
// The kernel (fs/btrfs/ioctl.c, btrfs_ioctl_snap_create*: the same since
// well before 4.18) copies the struct once (memdup_user), takes the name up
// to its first NUL and at most the struct's last byte
// (vol_args->name[BTRFS_PATH_NAME_MAX] = '\0'), refuses one with a '/'
// (EINVAL) and "." or ".." (EEXIST, __btrfs_ioctl_snap_create), and never
// follows an existing entry (EEXIST, btrfs_mksubvol): the decision is on
// the entry the kernel makes.
func (d *Decoder) subvolCreate(cmd uint32) *policy.Op {
	v2 := cmd == syscalls.BtrfsIocSnapCreateV2 || cmd == syscalls.BtrfsIocSubvolCreateV2
	snap := cmd == syscalls.BtrfsIocSnapCreate || cmd == syscalls.BtrfsIocSnapCreateV2
	b, err := d.Env.ReadBytes(uintptr(d.Regs.Arg(2)), syscalls.BtrfsVolArgsSize)
	if err != nil {
		d.Out = KernelFailsWith(syscall.EFAULT)
		return nil
	}
	off := syscalls.BtrfsNameOffV1
	if v2 {
		off = syscalls.BtrfsNameOffV2
		if fl := binary.LittleEndian.Uint64(b[syscalls.BtrfsFlagsOffV2:]); fl&^syscalls.BtrfsSubvolRdonly != 0 {
			return d.forbiddenIoctl(fmt.Sprintf("%s with flags %#x: quota-group inheritance and subvolume ids act on the whole file system", d.Flags, fl))
		}
	}
	name := b[off : len(b)-1]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	switch {
	case bytes.IndexByte(name, '/') >= 0:
		d.Out = KernelFailsWith(syscall.EINVAL)
		return nil
	case string(name) == "." || string(name) == "..":
		d.Out = KernelFailsWith(syscall.EEXIST)
		return nil
	case len(name) == 0:
		d.Out = KernelFailsWith(syscall.EINVAL)
		return nil
	}
	fd := d.Regs.Int32Arg(0)
	dir, ok := d.FdArgPath(fd)
	if !ok {
		return nil
	}
	switch {
	case dir.Special != "":
		d.Out = KernelFailsWith(syscall.ENOTTY) // a pipe or socket: no btrfs handler
		return nil
	case !dir.IsDir:
		d.Out = KernelFailsWith(syscall.ENOTDIR) // the new entry goes in a directory
		return nil
	}
	target := policy.Path{Role: "target", Given: string(name), Dirfd: dir.Dirfd, Base: dir.Resolved, Resolved: filepath.Join(dir.Resolved, string(name))}
	target.Exists, target.IsDir = d.Env.Lstat(target.Resolved)
	op := &policy.Op{Kind: syscalls.KindCreate, Syscall: d.Name, Paths: []policy.Path{target}}
	if snap {
		// __s64 fd, which the kernel hands to fdget(unsigned int).
		sfd := int32(binary.LittleEndian.Uint32(b[0:4]))
		src, ok := d.FdPath(policy.Path{Role: "source", Given: "fd " + strconv.Itoa(int(sfd))}, sfd)
		if !ok {
			return nil
		}
		op.Paths = append(op.Paths, src)
	}
	return op
}

// dedupeOp adds the destinations of FIDEDUPERANGE to the decision on its
// source fd (op). The ioctl's fd is the source; struct file_dedupe_range
// (linux/fs.h: src_offset, src_length, __u16 dest_count, reserved, then
// dest_count struct file_dedupe_range_info of 32 bytes, dest_fd first)
// names the files whose extents the kernel replaces by the source's
// (vfs_dedupe_file_range). Their bytes stay the same, but their blocks
// change, and the kernel takes a read-only fd of a file the caller owns
// (allow_file_dedupe): each destination must be a file the tree may
// change, like the source. The kernel copies the whole struct in before it
// acts (ioctl_file_dedupe_range: memdup_user) and allows at most a page of
// it (ENOMEM past that), so the destinations read here are the ones used.
func (d *Decoder) dedupeOp(src *policy.Op) *policy.Op {
	arg := uintptr(d.Regs.Arg(2))
	hdr, err := d.Env.ReadBytes(arg, 24)
	if err != nil {
		d.Out = KernelFailsWith(syscall.EFAULT)
		return nil
	}
	n := int(binary.LittleEndian.Uint16(hdr[16:18]))
	if 24+32*n > 4096 {
		d.Out = PassOutcome() // the kernel refuses it (ENOMEM) before it acts
		return nil
	}
	ops := []*policy.Op{src}
	if n > 0 {
		b, err := d.Env.ReadBytes(arg+24, 32*n)
		if err != nil {
			d.Out = KernelFailsWith(syscall.EFAULT)
			return nil
		}
		for i := 0; i < n; i++ {
			fd := int64(binary.LittleEndian.Uint64(b[32*i:]))
			if fd < 0 || fd > math.MaxInt32 {
				continue // the kernel fails this destination alone (EBADF)
			}
			p, ok := d.FdPath(policy.Path{Role: "target", Given: "dest_fd " + strconv.Itoa(int(fd))}, int32(fd))
			if !ok {
				if d.Out.Failing() == syscall.EBADF {
					d.Out = Outcome{} // per destination, as above
					continue
				}
				return nil
			}
			ops = append(ops, &policy.Op{Kind: syscalls.KindIoctl, Syscall: d.Name, Ioctl: d.Flags, Paths: []policy.Path{p}})
		}
	}
	// The policy picks the destination that decides the call (decodeOp).
	d.Ops = ops
	return src
}

// asyncOp checks signal-driven I/O going on for the fd in argument 0 (fcntl F_SETFL with O_ASYNC, ioctl FIOASYNC). On most files
// it names no one: SIGIO goes to the owner set with F_SETOWN, which is
// checked, and to no one without. A terminal is different: the kernel makes
// its foreground process group the owner by itself (__tty_fasync), and
// F_SETSIG then chooses the signal. So on a character device it is allowed
// only for the tree's own ptys: a slave it made (ptys.owns) or a master it
// opened through a ptmx; never tracecell's own terminal, whose foreground
// group is the shell's job, nor another terminal of the user.
func (d *Decoder) asyncOp(on bool) *policy.Op {
	fd := d.Regs.Int32Arg(0)
	var dev DevID
	ok := false
	if on {
		dev, ok = d.Env.CharDev(fd)
	}
	if !ok {
		d.Out = PassOutcome() // off, a bad fd (the kernel answers), or no terminal
		return nil
	}
	p, ok := d.FdArgPath(fd)
	if !ok {
		return nil
	}
	return &policy.Op{Kind: syscalls.KindSignal, Syscall: d.Name, Paths: []policy.Path{p}, AsyncTTY: true, TargetInTree: d.Env.AsyncOwn(p.Resolved, dev)}
}

// ownerOp checks a SIGIO owner: a pid, or -pgid. The kernel would later
// send it signals on the tree's behalf.
func (d *Decoder) ownerOp(pid int) *policy.Op {
	if pid == 0 {
		d.Out = PassOutcome() // clears the owner
		return nil
	}
	return &policy.Op{Kind: syscalls.KindSignal, Syscall: d.Name, TargetPid: pid, TargetInTree: d.Env.PidInTree(pid)}
}

// fcntl handles the fcntl commands the filter traps: F_SETOWN and
// F_SETOWN_EX (a SIGIO owner), F_SETLEASE (a lease on the fd's file) and
// F_SETDELEG (forbidden).
func (d *Decoder) fcntl() *policy.Op {
	switch uint32(d.Regs.Arg(1)) {
	case syscalls.FcntlSetFl:
		fl := uint32(d.Regs.Arg(2))
		if fl&syscalls.OAsync == 0 {
			d.Out = PassOutcome() // O_NONBLOCK and the like
			return nil
		}
		d.Flags = "F_SETFL(O_ASYNC)"
		return d.asyncOp(true)
	case syscalls.FcntlSetOwn:
		d.Flags = "F_SETOWN"
		return d.ownerOp(int(d.Regs.Int32Arg(2)))
	case syscalls.FcntlSetOwnEx:
		d.Flags = "F_SETOWN_EX"
		b, err := d.Env.ReadBytes(uintptr(d.Regs.Arg(2)), 8)
		if err != nil {
			d.Out = KernelFailsWith(syscall.EFAULT)
			return nil
		}
		typ, pid := int32(binary.LittleEndian.Uint32(b)), int(int32(binary.LittleEndian.Uint32(b[4:])))
		if typ == 2 { // F_OWNER_PGRP
			pid = -pid
		}
		return d.ownerOp(pid)
	case syscalls.FcntlSetLease:
		typ := uint32(d.Regs.Arg(2)) // an int lease type: F_RDLCK, F_WRLCK, F_UNLCK
		if typ == syscalls.FcntlUnlck {
			d.Out = PassOutcome() // gives a lease up
			return nil
		}
		d.Flags = "F_SETLEASE(" + syscalls.FormatLeaseType(typ) + ")"
		return d.FdMeta(0, syscalls.KindLease)
	case syscalls.FcntlSetRwHint:
		d.Flags = "F_SET_RW_HINT"
		return d.FdMeta(0, syscalls.KindWrite)
	case syscalls.FcntlSetDeleg:
		d.Flags = "F_SETDELEG"
		return &policy.Op{Kind: syscalls.KindForbidden, Syscall: d.Name}
	}
	d.Out = PassOutcome()
	return nil
}
