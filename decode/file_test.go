package decode

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

func TestDecodeOpen(t *testing.T) {
	nofollow := func(o syscalls.OpenFlagBits) uint64 { return o.NoFollow }
	tmpfile := func(o syscalls.OpenFlagBits) uint64 { return syscalls.OTmpBit | o.Directory }
	openFlags := func(want uint64) func(*testing.T, *policy.Op, *Result, *fakeEnv) {
		return func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
			if !r.HasOpenFlags || r.OpenFlags&0xffff != want {
				t.Errorf("open flags %#o (%v), want %#o", r.OpenFlags, r.HasOpenFlags, want)
			}
		}
	}
	cases := []tcase{
		{name: "read relative to cwd", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "f"}, kind: syscalls.KindRead,
			paths: []wantPath{{"path", "f", "/home/u/f", true, unix.AT_FDCWD, "/home/u"}}, follows: []bool{true}},
		{name: "dirfd's high half ignored", call: "openat", args: [6]uint64{0xdeadbeef00000003, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "x"}, kind: syscalls.KindRead,
			paths: []wantPath{{"path", "x", "/home/u/d/x", false, 3, "/home/u/d"}}},
		{name: "absolute path ignores dirfd", call: "openat", args: [6]uint64{99, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/etc/passwd"}, kind: syscalls.KindWrite,
			paths: []wantPath{{"path", "/etc/passwd", "/etc/passwd", true, 99, ""}}},
		{name: "O_TRUNC alone writes", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_TRUNC},
			mem: map[uintptr]string{addr1: "f"}, kind: syscalls.KindWrite},
		{name: "O_PATH drops O_WRONLY, O_CREAT and O_TRUNC", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_PATH | unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, 0o4755},
			mem: map[uintptr]string{addr1: "new"}, kind: syscalls.KindRead, follows: []bool{true}},
		{name: "O_CREAT of a new name creates", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_CREAT | unix.O_WRONLY, 0o644},
			mem: map[uintptr]string{addr1: "new"}, kind: syscalls.KindCreate, follows: []bool{true}},
		{name: "O_CREAT of an existing name writes", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_CREAT | unix.O_WRONLY, 0o644},
			mem: map[uintptr]string{addr1: "f"}, kind: syscalls.KindWrite},
		{name: "O_CREAT|O_EXCL does not follow", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, 0o600},
			mem: map[uintptr]string{addr1: "ln"}, kind: syscalls.KindWrite, follows: []bool{false},
			paths: []wantPath{{"path", "ln", "/home/u/ln", true, unix.AT_FDCWD, "/home/u"}}},
		{name: "O_NOFOLLOW of the ABI does not follow", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY}, open: nofollow,
			mem: map[uintptr]string{addr1: "ln"}, kind: syscalls.KindRead, follows: []bool{false}},
		{name: "a symlink is followed", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "ln"}, kind: syscalls.KindRead, follows: []bool{true},
			paths: []wantPath{{"path", "ln", "/etc/passwd", true, unix.AT_FDCWD, "/home/u"}}},
		{name: "O_TMPFILE of the ABI creates in the directory", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDWR, 0o600}, open: tmpfile,
			mem: map[uintptr]string{addr1: "d"}, kind: syscalls.KindCreate, follows: []bool{true}},
		{name: "set-id mode of a create", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_CREAT | unix.O_WRONLY, 0o4755},
			mem: map[uintptr]string{addr1: "new"}, kind: syscalls.KindCreate,
			check: func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
				if op.SetID != policy.SetUID || r.Flags != "" {
					t.Errorf("SetID %#o flags %q, want setuid and the open flags left to the event", op.SetID, r.Flags)
				}
			}},
		{name: "mode ignored without O_CREAT", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY, 0o4755},
			mem: map[uintptr]string{addr1: "f"}, kind: syscalls.KindWrite,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.SetID != 0 {
					t.Errorf("SetID %#o without O_CREAT", op.SetID)
				}
			}},
		{name: "creat is O_CREAT|O_WRONLY|O_TRUNC", call: "creat", args: [6]uint64{addr1, 0o644},
			mem: map[uintptr]string{addr1: "new"}, kind: syscalls.KindCreate, check: openFlags(unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC)},
		{name: "open's flags", call: "open", args: [6]uint64{addr1, unix.O_WRONLY | unix.O_APPEND},
			mem: map[uintptr]string{addr1: "/home/u/f"}, kind: syscalls.KindWrite, check: openFlags(unix.O_WRONLY | unix.O_APPEND),
			paths: []wantPath{{"path", "/home/u/f", "/home/u/f", true, -1, ""}}},
		{name: "bad pointer: EFAULT", call: "openat", args: [6]uint64{atFdcwd, bad, unix.O_RDONLY},
			want: KernelFails, errno: syscall.EFAULT},
		{name: "NULL path: EFAULT", call: "openat", args: [6]uint64{atFdcwd, 0, unix.O_RDONLY},
			want: KernelFails, errno: syscall.EFAULT},
		{name: "empty path: ENOENT", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: ""}, want: KernelFails, errno: syscall.ENOENT},
		{name: "bad dirfd: EBADF", call: "openat", args: [6]uint64{42, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "f"}, want: KernelFails, errno: syscall.EBADF},
		{name: "negative dirfd: EBADF", call: "openat", args: [6]uint64{uint64(uint32(0xfffffff0)), addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "f"}, want: KernelFails, errno: syscall.EBADF},
		{name: "dirfd of a file: ENOTDIR", call: "openat", args: [6]uint64{4, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "f"}, want: KernelFails, errno: syscall.ENOTDIR},
		{name: "missing directory on the way: ENOENT", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "nodir/f"}, want: KernelFails, errno: syscall.ENOENT},
		{name: "walk error in a deny-read tree goes to the policy", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "/secret/nodir/f"}, kind: syscalls.KindRead,
			paths: []wantPath{{"path", "/secret/nodir/f", "/secret/nodir/f", false, unix.AT_FDCWD, ""}}},
		{name: "an errno of the walk fails as the kernel", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "loop"}, env: func(e *fakeEnv) { e.resErr = map[string]error{"/home/u/loop": syscall.ELOOP} },
			want: KernelFails, errno: syscall.ELOOP},
		{name: "unresolvable: fail closed, reported", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "weird"}, env: func(e *fakeEnv) { e.resErr = map[string]error{"/home/u/weird": errUnresolvable} },
			want: FailClosed, errno: syscall.EACCES,
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if r.Out.Path.Given != "weird" || r.Out.Why == "" {
					t.Errorf("fail-closed path %+v why %q", r.Out.Path, r.Out.Why)
				}
			}},
		{name: "EINVAL of the walk fails closed too", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "inval"}, env: func(e *fakeEnv) { e.resErr = map[string]error{"/home/u/inval": syscall.EINVAL} },
			want: FailClosed, errno: syscall.EACCES},
		{name: "cwd tracecell cannot name: fail closed", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "f"}, env: func(e *fakeEnv) { e.cwdErr = &BaseError{Link: "/proc/1/cwd", Text: "/x (deleted)", Why: "is gone"} },
			want: FailClosed, errno: syscall.EACCES,
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if r.Out.Path.Given != "f" || r.Out.Path.Dirfd == nil || *r.Out.Path.Dirfd != unix.AT_FDCWD {
					t.Errorf("fail-closed path %+v", r.Out.Path)
				}
			}},
		{name: "a pipe of an outside process through /proc", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if p := op.Paths[0]; p.Special != "pipe:[9]" || p.SpecialInTree || !p.ProcOutside {
					t.Errorf("special %q in tree %v proc outside %v", p.Special, p.SpecialInTree, p.ProcOutside)
				}
			}},
		{name: "a write end of the tree through /proc", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			env: func(e *fakeEnv) {
				e.inTree[77] = true
				e.fdFlags = map[string]uint64{"/proc/77/fd/3": unix.O_WRONLY | unix.O_NONBLOCK}
			},
			check: specialWritable(true, true)},
		{name: "an fd of the tree open read-write", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			env:   func(e *fakeEnv) { e.inTree[77] = true; e.fdFlags = map[string]uint64{"/proc/77/fd/3": unix.O_RDWR} },
			check: specialWritable(true, true)},
		{name: "a pipe the tree holds read-only", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			env: func(e *fakeEnv) {
				e.inTree[77] = true
				e.fdFlags = map[string]uint64{"/proc/77/fd/3": unix.O_RDONLY | unix.O_NONBLOCK}
			},
			check: specialWritable(true, false)},
		{name: "an O_PATH fd of the tree", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			env: func(e *fakeEnv) {
				e.inTree[77] = true
				e.fdFlags = map[string]uint64{"/proc/77/fd/3": unix.O_PATH | unix.O_WRONLY}
			},
			check: specialWritable(true, false)},
		{name: "an fd of the tree opened with access mode 3", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			env:   func(e *fakeEnv) { e.inTree[77] = true; e.fdFlags = map[string]uint64{"/proc/77/fd/3": unix.O_ACCMODE} },
			check: specialWritable(true, false)},
		{name: "fdinfo of the tree's fd unreadable", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			env:   func(e *fakeEnv) { e.inTree[77] = true },
			check: specialWritable(true, false)},
		{name: "a write end of an outside process", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_WRONLY},
			mem: map[uintptr]string{addr1: "/proc/77/fd/3"}, kind: syscalls.KindWrite,
			env:   func(e *fakeEnv) { e.fdFlags = map[string]uint64{"/proc/77/fd/3": unix.O_WRONLY} },
			check: specialWritable(false, false)},
		{name: "the tree's own pty", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDWR},
			mem: map[uintptr]string{addr1: "/dev/pts/3"}, kind: syscalls.KindWrite,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !op.Paths[0].OwnPty {
					t.Error("own pty not noted")
				}
			}},
		{name: "another pty", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDWR},
			mem: map[uintptr]string{addr1: "/dev/pts/4"}, kind: syscalls.KindWrite,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.Paths[0].OwnPty {
					t.Error("a pty the tree did not make is its own")
				}
			}},
		{name: "a block device through a symlink", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "/dev/disk/root"}, kind: syscalls.KindRead,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if p := op.Paths[0]; !p.BlockDevice || p.Resolved != "/dev/vda" {
					t.Errorf("%s: BlockDevice %v, want true", p.Resolved, p.BlockDevice)
				}
			}},
		{name: "a character device is no block device", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "/dev/null"}, kind: syscalls.KindRead,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.Paths[0].BlockDevice {
					t.Error("/dev/null taken for a block device")
				}
			}},
		{name: "the path argument is read for its copy", call: "openat", args: [6]uint64{atFdcwd, addr1, unix.O_RDONLY},
			mem: map[uintptr]string{addr1: "f"}, kind: syscalls.KindRead,
			check: func(t *testing.T, _ *policy.Op, _ *Result, e *fakeEnv) {
				if len(e.strArgs) != 1 || e.strArgs[0] != 1 {
					t.Errorf("strings read for arguments %v, want [1]", e.strArgs)
				}
			}},
	}
	run(t, cases)
}

// specialWritable checks SpecialInTree and SpecialWritable of the first path.
func specialWritable(inTree, writable bool) func(*testing.T, *policy.Op, *Result, *fakeEnv) {
	return func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
		if p := op.Paths[0]; p.Special == "" || p.SpecialInTree != inTree || p.SpecialWritable != writable {
			t.Errorf("special %q in tree %v writable %v, want %v %v", p.Special, p.SpecialInTree, p.SpecialWritable, inTree, writable)
		}
	}
}

func TestDecodePaths(t *testing.T) {
	cases := []tcase{
		{name: "mkdirat", call: "mkdirat", args: [6]uint64{atFdcwd, addr1, 0o755},
			mem: map[uintptr]string{addr1: "nd"}, kind: syscalls.KindCreate, follows: []bool{false},
			paths: []wantPath{{"path", "nd", "/home/u/nd", false, unix.AT_FDCWD, "/home/u"}}},
		{name: "fchmodat set-id mode in flags", call: "fchmodat", args: [6]uint64{atFdcwd, addr1, 0o2755},
			mem: map[uintptr]string{addr1: "f"}, kind: syscalls.KindChmod, flags: "mode=02755"},
		{name: "fchmodat2 flags and mode", call: "fchmodat2", args: [6]uint64{atFdcwd, addr1, 0o104755, unix.AT_SYMLINK_NOFOLLOW},
			mem: map[uintptr]string{addr1: "ln"}, kind: syscalls.KindChmod, flags: "AT_SYMLINK_NOFOLLOW mode=04755", follows: []bool{false}},
		{name: "mkdirat's mode is no set-id check", call: "mkdirat", args: [6]uint64{atFdcwd, addr1, 0o2755},
			mem: map[uintptr]string{addr1: "nd"}, kind: syscalls.KindCreate,
			check: func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
				if op.SetID != 0 || r.Flags != "" {
					t.Errorf("SetID %#o flags %q", op.SetID, r.Flags)
				}
			}},
		{name: "unlinkat with AT_REMOVEDIR", call: "unlinkat", args: [6]uint64{3, addr1, unix.AT_REMOVEDIR},
			mem: map[uintptr]string{addr1: "x"}, kind: syscalls.KindDelete, flags: "AT_REMOVEDIR", follows: []bool{false},
			paths: []wantPath{{"path", "x", "/home/u/d/x", false, 3, "/home/u/d"}}},
		{name: "renameat2 reads both paths, its own flag names", call: "renameat2", args: [6]uint64{atFdcwd, addr1, 5, addr2, unix.RENAME_NOREPLACE},
			mem: map[uintptr]string{addr1: "f", addr2: "g"}, kind: syscalls.KindRename, flags: "RENAME_NOREPLACE", follows: []bool{false, false},
			paths: []wantPath{{"source", "f", "/home/u/f", true, unix.AT_FDCWD, "/home/u"}, {"target", "g", "/etc/g", false, 5, "/etc"}}},
		{name: "renameat2's target unreadable: EFAULT", call: "renameat2", args: [6]uint64{atFdcwd, addr1, atFdcwd, bad},
			mem: map[uintptr]string{addr1: "f"}, want: KernelFails, errno: syscall.EFAULT},
		{name: "fchmodat follows", call: "fchmodat", args: [6]uint64{atFdcwd, addr1, 0o644},
			mem: map[uintptr]string{addr1: "ln"}, kind: syscalls.KindChmod, follows: []bool{true},
			paths: []wantPath{{"path", "ln", "/etc/passwd", true, unix.AT_FDCWD, "/home/u"}}},
		{name: "fchownat AT_SYMLINK_NOFOLLOW", call: "fchownat", args: [6]uint64{atFdcwd, addr1, 0, 0, unix.AT_SYMLINK_NOFOLLOW},
			mem: map[uintptr]string{addr1: "ln"}, kind: syscalls.KindChown, follows: []bool{false},
			paths: []wantPath{{"path", "ln", "/home/u/ln", true, unix.AT_FDCWD, "/home/u"}}},
		{name: "fchownat AT_EMPTY_PATH acts on the dirfd", call: "fchownat", args: [6]uint64{4, addr1, 0, 0, unix.AT_EMPTY_PATH},
			mem: map[uintptr]string{addr1: ""}, kind: syscalls.KindChown, follows: []bool{},
			paths: []wantPath{{"path", "", "/home/u/f", true, 4, ""}},
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.Paths[0].Null || op.Paths[0].Shown() != `""` {
					t.Errorf("empty path reported as %+v (shown %s)", op.Paths[0], op.Paths[0].Shown())
				}
			}},
		{name: "empty path without AT_EMPTY_PATH: ENOENT", call: "fchownat", args: [6]uint64{4, addr1, 0, 0, 0},
			mem: map[uintptr]string{addr1: ""}, want: KernelFails, errno: syscall.ENOENT},
		{name: "AT_EMPTY_PATH with a bad dirfd: EBADF", call: "fchownat", args: [6]uint64{40, addr1, 0, 0, unix.AT_EMPTY_PATH},
			mem: map[uintptr]string{addr1: ""}, want: KernelFails, errno: syscall.EBADF},
		{name: "utimensat NULL path acts on the dirfd", call: "utimensat", args: [6]uint64{4, 0, 0, 0},
			kind: syscalls.KindWrite, paths: []wantPath{{"path", "", "/home/u/f", true, 4, ""}},
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				// A NULL pointer is not an empty string (red team, round 66).
				if !op.Paths[0].Null || op.Paths[0].Shown() != "NULL" {
					t.Errorf("NULL path reported as %+v (shown %s)", op.Paths[0], op.Paths[0].Shown())
				}
			}},
		{name: "linkat follows only with AT_SYMLINK_FOLLOW", call: "linkat", args: [6]uint64{atFdcwd, addr1, atFdcwd, addr2, unix.AT_SYMLINK_FOLLOW},
			mem: map[uintptr]string{addr1: "ln", addr2: "l2"}, kind: syscalls.KindLink, follows: []bool{true, false}},
		{name: "linkat without it", call: "linkat", args: [6]uint64{atFdcwd, addr1, atFdcwd, addr2},
			mem: map[uintptr]string{addr1: "ln", addr2: "l2"}, kind: syscalls.KindLink, follows: []bool{false, false}},
		{name: "mknodat of a block device is forbidden", call: "mknodat", args: [6]uint64{atFdcwd, addr1, unix.S_IFBLK | 0o600, 0x801},
			mem: map[uintptr]string{addr1: "sda"}, kind: syscalls.KindForbidden, flags: "S_IFBLK"},
		{name: "mknodat of a character device is forbidden", call: "mknodat", args: [6]uint64{atFdcwd, addr1, unix.S_IFCHR | 0o600, 0x101},
			mem: map[uintptr]string{addr1: "mem"}, kind: syscalls.KindForbidden, flags: "S_IFCHR"},
		{name: "mknodat of a fifo creates", call: "mknodat", args: [6]uint64{atFdcwd, addr1, unix.S_IFIFO | 0o600},
			mem: map[uintptr]string{addr1: "fifo"}, kind: syscalls.KindCreate},
		{name: "setxattr names its attribute", call: "setxattr", args: [6]uint64{addr1, addr2, addr3, 4},
			mem: map[uintptr]string{addr1: "/home/u/f", addr2: "user.x"}, kind: syscalls.KindXattr, flags: "name=user.x",
			check: func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
				if op.Xattr != "user.x" || len(e.strArgs) != 2 || e.strArgs[1] != 1 {
					t.Errorf("xattr %q, strings read for %v", op.Xattr, e.strArgs)
				}
			}},
		{name: "setxattr's name unreadable: EFAULT", call: "setxattr", args: [6]uint64{addr1, bad},
			mem: map[uintptr]string{addr1: "/home/u/f"}, want: KernelFails, errno: syscall.EFAULT},
		{name: "inotify_add_watch IN_DONT_FOLLOW", call: "inotify_add_watch", args: [6]uint64{3, addr1, unix.IN_MODIFY | unix.IN_DONT_FOLLOW},
			mem: map[uintptr]string{addr1: "/home/u/ln"}, kind: syscalls.Kind(0),
			check: func(t *testing.T, _ *policy.Op, _ *Result, e *fakeEnv) {
				if len(e.follows) != 1 || e.follows[0] {
					t.Errorf("follows %v, want [false]", e.follows)
				}
			}},
	}
	// inotify_add_watch's kind is the table's: take it from there.
	if s, ok := syscalls.Lookup("inotify_add_watch"); ok {
		cases[len(cases)-1].kind = s.Kind
	}
	run(t, cases)
}

func TestDecodeFdMeta(t *testing.T) {
	cases := []tcase{
		{name: "fchmod", call: "fchmod", args: [6]uint64{4, 0o644}, kind: syscalls.KindChmod,
			paths: []wantPath{{"path", "fd 4", "/home/u/f", true, 4, ""}}},
		{name: "fchmod set-id", call: "fchmod", args: [6]uint64{4, 0o6755}, kind: syscalls.KindChmod, flags: "mode=06755",
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.SetID != policy.SetUID|policy.SetGID {
					t.Errorf("SetID %#o", op.SetID)
				}
			}},
		{name: "fchown bad fd: EBADF", call: "fchown", args: [6]uint64{40}, want: KernelFails, errno: syscall.EBADF},
		{name: "fchown negative fd: EBADF", call: "fchown", args: [6]uint64{uint64(uint32(0xffffffff))}, want: KernelFails, errno: syscall.EBADF},
		{name: "fsetxattr names its attribute", call: "fsetxattr", args: [6]uint64{4, addr1, addr2, 1},
			mem: map[uintptr]string{addr1: "security.evil"}, kind: syscalls.KindXattr, flags: "name=security.evil"},
		{name: "fsetxattr name unreadable: EFAULT", call: "fsetxattr", args: [6]uint64{4, bad}, want: KernelFails, errno: syscall.EFAULT},
		{name: "an unlinked file of another process", call: "fchmod", args: [6]uint64{7, 0o600}, kind: syscalls.KindChmod,
			env: func(e *fakeEnv) { delete(e.inTree, 5) },
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if p := op.Paths[0]; !p.Deleted || !p.HeldOutside {
					t.Errorf("deleted %v held outside %v", p.Deleted, p.HeldOutside)
				}
			}},
	}
	run(t, cases)
}

func TestDecodeExec(t *testing.T) {
	cases := []tcase{
		{name: "execve", call: "execve", args: [6]uint64{addr1, addr2, addr3},
			mem: map[uintptr]string{addr1: "/usr/bin/python3"}, kind: syscalls.KindExec,
			paths: []wantPath{{"program", "/usr/bin/python3", "/usr/bin/python3", true, -1, ""}}},
		{name: "execve of a missing program: ENOENT, not reported", call: "execve", args: [6]uint64{addr1},
			mem: map[uintptr]string{addr1: "/usr/bin/nope"}, want: KernelFails, errno: syscall.ENOENT},
		{name: "execve bad pointer: EFAULT", call: "execve", args: [6]uint64{bad}, want: KernelFails, errno: syscall.EFAULT},
		{name: "the root's initial exec is not read", call: "execve", args: [6]uint64{bad},
			env: func(e *fakeEnv) { e.initial = "/usr/bin/python3" }, kind: syscalls.KindExec,
			check: func(t *testing.T, op *policy.Op, _ *Result, e *fakeEnv) {
				if !op.Initial || op.Paths[0].Given != "/usr/bin/python3" || len(e.strArgs) != 0 {
					t.Errorf("initial %v given %q strings read %v", op.Initial, op.Paths[0].Given, e.strArgs)
				}
			}},
		{name: "the start chain's exec is initial", call: "execve", args: [6]uint64{addr1},
			mem: map[uintptr]string{addr1: "/usr/bin/python3"}, env: func(e *fakeEnv) { e.chain = map[string]bool{"/usr/bin/python3": true} },
			kind: syscalls.KindExec,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !op.Initial {
					t.Error("chain exec not initial")
				}
			}},
		{name: "execveat AT_EMPTY_PATH of a memfd", call: "execveat", args: [6]uint64{7, addr1, 0, 0, unix.AT_EMPTY_PATH},
			mem: map[uintptr]string{addr1: ""}, kind: syscalls.KindExec, flags: "AT_EMPTY_PATH",
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if p := op.Paths[0]; !p.Deleted || p.Role != "program" {
					t.Errorf("deleted %v role %q", p.Deleted, p.Role)
				}
			}},
		{name: "execveat AT_SYMLINK_NOFOLLOW", call: "execveat", args: [6]uint64{atFdcwd, addr1, 0, 0, unix.AT_SYMLINK_NOFOLLOW},
			mem: map[uintptr]string{addr1: "ln"}, kind: syscalls.KindExec, follows: []bool{false}},
		{name: "execveat of a directory's missing entry", call: "execveat", args: [6]uint64{3, addr1, 0, 0, 0},
			mem: map[uintptr]string{addr1: "prog"}, want: KernelFails, errno: syscall.ENOENT},
	}
	run(t, cases)
}

func TestDecodeCloneAndProcMem(t *testing.T) {
	cases := []tcase{
		{name: "clone of a thread passes at the limit", call: "clone", args: [6]uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND},
			env: func(e *fakeEnv) { e.procs = [2]int{4, 4} }, want: Pass},
		{name: "clone of a process at the limit", call: "clone", args: [6]uint64{uint64(syscall.SIGCHLD)},
			env: func(e *fakeEnv) { e.procs = [2]int{4, 4} }, want: Limit, kind: syscalls.KindProcess,
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if d := r.Out.Decision; d == nil || d.Errno != syscall.EAGAIN || d.Rule != "max-procs" {
					t.Errorf("limit %+v", d)
				}
			}},
		{name: "clone under the limit", call: "clone", args: [6]uint64{uint64(syscall.SIGCHLD)},
			env: func(e *fakeEnv) { e.procs = [2]int{3, 4} }, want: Pass},
		{name: "clone without a limit", call: "clone", args: [6]uint64{uint64(syscall.SIGCHLD)},
			env: func(e *fakeEnv) { e.procs = [2]int{300, 0} }, want: Pass},
		{name: "clone into a new namespace is forbidden", call: "clone", args: [6]uint64{unix.CLONE_NEWUSER | uint64(syscall.SIGCHLD)},
			kind: syscalls.KindForbidden},
		{name: "process_vm_readv of the tree", call: "process_vm_readv", args: [6]uint64{10}, kind: syscalls.KindProcess,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != 10 || !op.TargetInTree {
					t.Errorf("target %d in tree %v", op.TargetPid, op.TargetInTree)
				}
			}},
		{name: "process_vm_readv outside", call: "process_vm_readv", args: [6]uint64{1}, kind: syscalls.KindProcess,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != 1 || op.TargetInTree {
					t.Errorf("target %d in tree %v", op.TargetPid, op.TargetInTree)
				}
			}},
		{name: "process_vm_writev is forbidden", call: "process_vm_writev", args: [6]uint64{10}, kind: syscalls.KindForbidden},
	}
	run(t, cases)
}

func TestDecodeForbidden(t *testing.T) {
	cases := []tcase{
		{name: "prctl other than PR_SET_MM passes", call: "prctl", args: [6]uint64{unix.PR_SET_NAME}, want: Pass},
		{name: "prctl PR_SET_MM", call: "prctl", args: [6]uint64{syscalls.PrSetMM}, kind: syscalls.KindForbidden, flags: "PR_SET_MM"},
		{name: "PR_SCHED_CORE_SHARE_TO an outside process", call: "prctl", args: [6]uint64{syscalls.PrSchedCore, 2, 1}, kind: syscalls.KindProcess, flags: "PR_SCHED_CORE",
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if op.TargetPid != 1 || op.TargetInTree {
					t.Errorf("target %d in tree %v", op.TargetPid, op.TargetInTree)
				}
			}},
		{name: "PR_SCHED_CORE_CREATE for the caller", call: "prctl", args: [6]uint64{syscalls.PrSchedCore, 1, 0, 1}, kind: syscalls.KindProcess,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !op.TargetInTree {
					t.Errorf("pid 0 (the caller) taken as outside the tree")
				}
			}},
		{name: "PR_SCHED_CORE_GET passes", call: "prctl", args: [6]uint64{syscalls.PrSchedCore, syscalls.PrSchedCoreGet, 1}, want: Pass},
		{name: "PR_SET_DUMPABLE 0 is forbidden", call: "prctl", args: [6]uint64{syscalls.PrSetDumpable, 0}, kind: syscalls.KindForbidden, flags: "PR_SET_DUMPABLE"},
		{name: "PR_SET_DUMPABLE 2 is forbidden", call: "prctl", args: [6]uint64{syscalls.PrSetDumpable, 2}, kind: syscalls.KindForbidden, flags: "PR_SET_DUMPABLE"},
		{name: "PR_SET_DUMPABLE 1 passes", call: "prctl", args: [6]uint64{syscalls.PrSetDumpable, 1}, want: Pass},
		{name: "seccomp", call: "seccomp", args: [6]uint64{1, 8}, kind: syscalls.KindForbidden, flags: "SECCOMP_FILTER_FLAG_NEW_LISTENER"},
		{name: "mq_timedsend names its queue", call: "mq_timedsend", args: [6]uint64{5}, kind: syscalls.KindForbidden,
			paths: []wantPath{{"path", "fd 5", "/etc", true, 5, ""}}},
		{name: "mq_timedsend on a bad fd is denied all the same", call: "mq_timedsend", args: [6]uint64{40}, kind: syscalls.KindForbidden,
			paths: []wantPath{}},
		{name: "mount", call: "mount", args: [6]uint64{addr1}, kind: syscalls.KindForbidden},
	}
	run(t, cases)
}

func TestDecodeChdir(t *testing.T) {
	forgets := func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
		if !r.ForgetCwds {
			t.Error("the cwds are not forgotten")
		}
	}
	tracing := func(e *fakeEnv) { e.tracing = true }
	cases := []tcase{
		{name: "chdir passes, unread", call: "chdir", args: [6]uint64{bad}, want: Pass, check: forgets},
		{name: "fchdir passes", call: "fchdir", args: [6]uint64{3}, want: Pass, check: forgets},
		{name: "chdir traced names its target", call: "chdir", args: [6]uint64{addr1}, mem: map[uintptr]string{addr1: "d"}, env: tracing,
			want: Pass, kind: syscalls.KindChdir, paths: []wantPath{{"path", "d", "/home/u/d", true, -1, "/home/u"}}, check: forgets},
		{name: "a failing chdir traced still passes", call: "chdir", args: [6]uint64{bad}, env: tracing, want: Pass, kind: syscalls.KindChdir, check: forgets},
		{name: "fchdir traced", call: "fchdir", args: [6]uint64{3}, env: tracing, want: Pass, kind: syscalls.KindChdir,
			paths: []wantPath{{"path", "", "/home/u/d", true, 3, ""}}},
	}
	run(t, cases)
}
