package decode

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// le32 and le64 lay out little-endian integers, as both ABIs store them.
func le32(v uint32) []byte { b := make([]byte, 4); binary.LittleEndian.PutUint32(b, v); return b }
func le64(v uint64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, v); return b }

// volArgs is a struct btrfs_ioctl_vol_args(_v2) naming name, with source
// fd sfd and, for v2, flags.
func volArgs(v2 bool, sfd int64, flags uint64, name string) string {
	b := make([]byte, syscalls.BtrfsVolArgsSize)
	binary.LittleEndian.PutUint64(b, uint64(sfd))
	off := syscalls.BtrfsNameOffV1
	if v2 {
		off = syscalls.BtrfsNameOffV2
		binary.LittleEndian.PutUint64(b[syscalls.BtrfsFlagsOffV2:], flags)
	}
	copy(b[off:], name)
	return string(b)
}

// dedupeRange is a struct file_dedupe_range with destination fds dests.
func dedupeRange(dests ...int64) string {
	b := make([]byte, 24+32*len(dests))
	binary.LittleEndian.PutUint16(b[16:], uint16(len(dests)))
	for i, fd := range dests {
		binary.LittleEndian.PutUint64(b[24+32*i:], uint64(fd))
	}
	return string(b)
}

func TestDecodeIoctl(t *testing.T) {
	tty := DevID{Dev: 5, Rdev: 0x8801}
	ttyEnv := func(e *fakeEnv) { e.chr = map[int32]DevID{4: tty}; e.stdio = map[DevID]bool{tty: true} }
	cases := []tcase{
		{name: "an allowed command passes", call: "ioctl", args: [6]uint64{4, 0x5401}, want: Pass},
		{name: "the command's high half is ignored", call: "ioctl", args: [6]uint64{4, 0xffffffff00005401}, want: Pass},
		{name: "chattr is a chmod of the fd's file", call: "ioctl", args: [6]uint64{4, 0x40086602}, kind: syscalls.KindChmod, flags: "FS_IOC_SETFLAGS",
			paths: []wantPath{{"path", "fd 4", "/home/u/f", true, 4, ""}}},
		{name: "chattr on a bad fd: EBADF", call: "ioctl", args: [6]uint64{40, 0x40086602}, want: KernelFails, errno: syscall.EBADF},
		{name: "FIFREEZE is forbidden, naming the fd's file", call: "ioctl", args: [6]uint64{5, 0xc0045877}, kind: syscalls.KindForbidden,
			paths: []wantPath{{"path", "fd 5", "/etc", true, 5, ""}},
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.Syscall != "ioctl(FIFREEZE)" {
					t.Errorf("syscall %q", op.Syscall)
				}
			}},
		{name: "a forbidden command on a bad fd is denied, not failed", call: "ioctl", args: [6]uint64{40, 0xc0045877}, kind: syscalls.KindForbidden, paths: []wantPath{}},
		{name: "a whole-fs family is forbidden", call: "ioctl", args: [6]uint64{4, 0xc0105801}, kind: syscalls.KindForbidden},
		{name: "an unknown command is decided on its fd", call: "ioctl", args: [6]uint64{4, 0x12345678}, kind: syscalls.KindIoctl,
			check: func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
				if op.Ioctl != r.Flags || op.Ioctl == "" {
					t.Errorf("ioctl %q flags %q", op.Ioctl, r.Flags)
				}
			}},
		{name: "TIOCGPTN passes, followed to its exit", call: "ioctl", args: [6]uint64{4, syscalls.TIOCGPTN, addr1}, want: Pass,
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if !r.FollowPty {
					t.Error("TIOCGPTN not followed")
				}
			}},
		{name: "TCSETS on tracecell's terminal passes", call: "ioctl", args: [6]uint64{4, 0x5402}, env: ttyEnv, want: Pass},
		{name: "TCSETS elsewhere writes the fd's file", call: "ioctl", args: [6]uint64{4, 0x5402}, kind: syscalls.KindWrite,
			env: func(e *fakeEnv) { e.chr = map[int32]DevID{4: tty} }},
		{name: "FIOSETOWN to a process outside", call: "ioctl", args: [6]uint64{4, 0x8901, addr1}, mem: map[uintptr]string{addr1: string(le32(1))},
			kind: syscalls.KindSignal,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != 1 || op.TargetInTree {
					t.Errorf("target %d in tree %v", op.TargetPid, op.TargetInTree)
				}
			}},
		{name: "FIOSETOWN 0 clears the owner", call: "ioctl", args: [6]uint64{4, 0x8901, addr1}, mem: map[uintptr]string{addr1: string(le32(0))}, want: Pass},
		{name: "FIOSETOWN bad pointer: EFAULT", call: "ioctl", args: [6]uint64{4, 0x8901, bad}, want: KernelFails, errno: syscall.EFAULT},
		{name: "FIOASYNC on a file passes", call: "ioctl", args: [6]uint64{4, 0x5452, addr1}, mem: map[uintptr]string{addr1: string(le32(1))}, want: Pass},
		{name: "FIOASYNC on a terminal not the tree's", call: "ioctl", args: [6]uint64{4, 0x5452, addr1}, mem: map[uintptr]string{addr1: string(le32(1))},
			env: func(e *fakeEnv) { e.chr = map[int32]DevID{4: tty} }, kind: syscalls.KindSignal,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !op.AsyncTTY || op.TargetInTree {
					t.Errorf("async tty %v in tree %v", op.AsyncTTY, op.TargetInTree)
				}
			}},
		{name: "FIOASYNC on the tree's pty", call: "ioctl", args: [6]uint64{4, 0x5452, addr1}, mem: map[uintptr]string{addr1: string(le32(1))},
			env: func(e *fakeEnv) { e.chr = map[int32]DevID{4: tty}; e.async = map[string]bool{"/home/u/f": true} }, kind: syscalls.KindSignal,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !op.TargetInTree {
					t.Error("the tree's own pty not in the tree")
				}
			}},
		{name: "FIOASYNC off passes", call: "ioctl", args: [6]uint64{4, 0x5452, addr1}, mem: map[uintptr]string{addr1: string(le32(0))},
			env: func(e *fakeEnv) { e.chr = map[int32]DevID{4: tty} }, want: Pass},
		{name: "btrfs subvolume create in the fd's directory", call: "ioctl", args: [6]uint64{3, syscalls.BtrfsIocSubvolCreate, addr1},
			mem: map[uintptr]string{addr1: volArgs(false, 0, 0, "vol")}, kind: syscalls.KindCreate,
			paths: []wantPath{{"target", "vol", "/home/u/d/vol", false, 3, "/home/u/d"}}},
		{name: "btrfs snapshot needs its source too", call: "ioctl", args: [6]uint64{3, syscalls.BtrfsIocSnapCreateV2, addr1},
			mem: map[uintptr]string{addr1: volArgs(true, 5, syscalls.BtrfsSubvolRdonly, "snap")}, kind: syscalls.KindCreate,
			paths: []wantPath{{"target", "snap", "/home/u/d/snap", false, 3, "/home/u/d"}, {"source", "fd 5", "/etc", true, 5, ""}}},
		{name: "btrfs v2 with qgroup flags is forbidden", call: "ioctl", args: [6]uint64{3, syscalls.BtrfsIocSubvolCreateV2, addr1},
			mem: map[uintptr]string{addr1: volArgs(true, 0, 1<<2, "vol")}, kind: syscalls.KindForbidden},
		{name: "btrfs name with a slash: EINVAL", call: "ioctl", args: [6]uint64{3, syscalls.BtrfsIocSubvolCreate, addr1},
			mem: map[uintptr]string{addr1: volArgs(false, 0, 0, "a/b")}, want: KernelFails, errno: syscall.EINVAL},
		{name: "btrfs name '..': EEXIST", call: "ioctl", args: [6]uint64{3, syscalls.BtrfsIocSubvolCreate, addr1},
			mem: map[uintptr]string{addr1: volArgs(false, 0, 0, "..")}, want: KernelFails, errno: syscall.EEXIST},
		{name: "btrfs in a file's fd: ENOTDIR", call: "ioctl", args: [6]uint64{4, syscalls.BtrfsIocSubvolCreate, addr1},
			mem: map[uintptr]string{addr1: volArgs(false, 0, 0, "vol")}, want: KernelFails, errno: syscall.ENOTDIR},
		{name: "btrfs in a pipe: ENOTTY", call: "ioctl", args: [6]uint64{6, syscalls.BtrfsIocSubvolCreate, addr1},
			mem: map[uintptr]string{addr1: volArgs(false, 0, 0, "vol")}, want: KernelFails, errno: syscall.ENOTTY},
		{name: "btrfs args unreadable: EFAULT", call: "ioctl", args: [6]uint64{3, syscalls.BtrfsIocSubvolCreate, bad}, want: KernelFails, errno: syscall.EFAULT},
		{name: "FIDEDUPERANGE: every destination is an operation", call: "ioctl", args: [6]uint64{4, syscalls.FIDEDUPERANGE, addr1},
			mem: map[uintptr]string{addr1: dedupeRange(5, 40, -1, 3)}, kind: syscalls.KindIoctl,
			check: func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
				if len(r.Ops) != 3 || r.Ops[0] != op {
					t.Fatalf("ops %d (the source first), want source and the two open destinations", len(r.Ops))
				}
				if r.Ops[1].Paths[0].Resolved != "/etc" || r.Ops[2].Paths[0].Resolved != "/home/u/d" || r.Ops[1].Paths[0].Role != "target" {
					t.Errorf("destinations %+v %+v", r.Ops[1].Paths, r.Ops[2].Paths)
				}
			}},
		{name: "FIDEDUPERANGE over a page: the kernel refuses it", call: "ioctl", args: [6]uint64{4, syscalls.FIDEDUPERANGE, addr1},
			mem: map[uintptr]string{addr1: dedupeRange(make([]int64, 128)...)}, want: Pass},
		{name: "FIDEDUPERANGE destinations unreadable: EFAULT", call: "ioctl", args: [6]uint64{4, syscalls.FIDEDUPERANGE, addr1},
			mem: map[uintptr]string{addr1: dedupeRange(5)[:24]}, want: KernelFails, errno: syscall.EFAULT},
	}
	run(t, cases)
}

func TestDecodeFcntl(t *testing.T) {
	tty := DevID{Dev: 5, Rdev: 0x8801}
	cases := []tcase{
		{name: "F_SETFL without O_ASYNC passes", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetFl, syscalls.ONonblock}, want: Pass},
		{name: "F_SETFL O_ASYNC on a file passes", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetFl, syscalls.OAsync}, want: Pass},
		{name: "F_SETFL O_ASYNC on a terminal", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetFl, syscalls.OAsync},
			env: func(e *fakeEnv) { e.chr = map[int32]DevID{4: tty} }, kind: syscalls.KindSignal, flags: "F_SETFL(O_ASYNC)"},
		{name: "F_SETOWN to a process outside", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetOwn, 1}, kind: syscalls.KindSignal, flags: "F_SETOWN",
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != 1 || op.TargetInTree {
					t.Errorf("target %d in tree %v", op.TargetPid, op.TargetInTree)
				}
			}},
		{name: "F_SETOWN to a group, negative int", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetOwn, uint64(uint32(0xfffffff6))}, kind: syscalls.KindSignal,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != -10 {
					t.Errorf("target %d, want -10", op.TargetPid)
				}
			}},
		{name: "F_SETOWN_EX F_OWNER_PGRP", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetOwnEx, addr1},
			mem: map[uintptr]string{addr1: string(le32(2)) + string(le32(10))}, kind: syscalls.KindSignal, flags: "F_SETOWN_EX",
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != -10 {
					t.Errorf("target %d, want -10", op.TargetPid)
				}
			}},
		{name: "F_SETOWN_EX F_OWNER_TID", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetOwnEx, addr1},
			mem: map[uintptr]string{addr1: string(le32(0)) + string(le32(10))}, kind: syscalls.KindSignal,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != 10 || !op.TargetInTree {
					t.Errorf("target %d in tree %v", op.TargetPid, op.TargetInTree)
				}
			}},
		{name: "F_SETOWN_EX bad pointer: EFAULT", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetOwnEx, bad}, want: KernelFails, errno: syscall.EFAULT},
		{name: "F_SETLEASE write lease", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetLease, 1}, kind: syscalls.KindLease, flags: "F_SETLEASE(F_WRLCK)",
			paths: []wantPath{{"path", "fd 4", "/home/u/f", true, 4, ""}}},
		{name: "F_SETLEASE F_UNLCK passes", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetLease, syscalls.FcntlUnlck}, want: Pass},
		{name: "F_SETDELEG is forbidden", call: "fcntl", args: [6]uint64{4, syscalls.FcntlSetDeleg}, kind: syscalls.KindForbidden, flags: "F_SETDELEG"},
		{name: "another command passes", call: "fcntl", args: [6]uint64{4, 1}, want: Pass},
	}
	run(t, cases)
}
