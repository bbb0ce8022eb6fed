package tracer

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/syscalls"
)

// pageReadOnly accepts only one private, anonymous, read-only mapping of
// exactly the page's range: memory nobody but the tracer can write. Checked
// on this test process's own maps (mapping memory here is harmless).
func TestPageReadOnly(t *testing.T) {
	addr, size := uintptr(syscalls.PathPageAddr), uintptr(syscalls.PathPageSize)
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	anon := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	cases := []struct {
		name        string
		length      uintptr
		prot, flags int
		fd          int
		want        bool
	}{
		{"private anonymous read-only", size, unix.PROT_READ, anon, -1, true},
		{"writable", size, unix.PROT_READ | unix.PROT_WRITE, anon, -1, false},
		{"shared: another mapping may write it", size, unix.PROT_READ, unix.MAP_SHARED | unix.MAP_ANONYMOUS, -1, false},
		{"a file: its writes show through", size, unix.PROT_READ, unix.MAP_PRIVATE, int(f.Fd()), false},
		{"only part of the range", size / 2, unix.PROT_READ, anon, -1, false},
		{"more than the range", size + 4096, unix.PROT_READ, anon, -1, false},
		{"nothing mapped", 0, 0, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.length > 0 {
				r, _, e := unix.Syscall6(unix.SYS_MMAP, addr, c.length, uintptr(c.prot),
					uintptr(c.flags|unix.MAP_FIXED_NOREPLACE), uintptr(c.fd), 0)
				if e != 0 || r != addr {
					t.Skipf("cannot map at %#x: %v (the range is taken in this process)", addr, e)
				}
				defer unix.Syscall(unix.SYS_MUNMAP, addr, c.length, 0)
			}
			if got := pageReadOnly(os.Getpid()); got != c.want {
				t.Errorf("pageReadOnly = %v, want %v", got, c.want)
			}
		})
	}
}

// Copyable calls whose check holds only while nothing else runs are
// decided again frozen (uncopyable): a path through /proc (what
// /proc/self/fd/N leads to changes with dup2, which is not checked) and
// unlink of a symlink (a directory made in its place would turn a walk
// checked through the symlink, and ".." after it, elsewhere). Other
// unlinks, and plain opens, still run on the page. A second thread, idle,
// makes the tree one where calls would freeze.
func TestUncopyableCallsFreeze(t *testing.T) {
	needPython(t)
	const n = 10
	script := `
import os, sys, threading
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
open("warm", "w").close()
mode, n = sys.argv[1], int(sys.argv[2])
if mode == "procfd":
    fd = os.open("f", os.O_RDONLY | os.O_CREAT, 0o644)
    for i in range(n):
        os.close(os.open("/proc/self/fd/%d" % fd, os.O_WRONLY))
        os.close(os.open("/dev/fd/%d" % fd, os.O_WRONLY))
elif mode == "unlink-symlink":
    for i in range(n):
        os.symlink("warm", "l%d" % i)
        os.unlink("l%d" % i)
elif mode == "unlink-file":
    for i in range(n):
        open("g%d" % i, "w").close()
        os.unlink("g%d" % i)
ev.set()
th.join()
print("ok")
`
	cases := []struct {
		mode                 string
		minFreezes, maxFreez int
		minCopies            int
	}{
		{"procfd", 2 * n, 1 << 30, 1},         // the opens through /proc freeze
		{"unlink-symlink", 2 * n, 1 << 30, 1}, // symlink and its unlink freeze
		{"unlink-file", 0, 0, 2*n + 1},        // create and unlink run on the page
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			o := runTraced(t, t.TempDir(), nil, python, "-c", script, c.mode, strconv.Itoa(n))
			if o.err != nil || o.stdout != "ok\n" {
				t.Fatalf("err %v stdout %q stderr %q", o.err, o.stdout, o.stderr)
			}
			if f, cp := o.res.Freezes, o.res.Copies; f < c.minFreezes || f > c.maxFreez || cp < c.minCopies {
				t.Errorf("%d freezes, %d copied calls; want %d..%d freezes and at least %d copied", f, cp, c.minFreezes, c.maxFreez, c.minCopies)
			}
		})
	}
}

// prctl(PR_SET_MM) is forbidden: its PR_SET_MM_MAP needs no capability and
// lets brk unmap the path page (a hint then maps writable memory where the
// tracer writes checked paths). Other prctls are not trapped.
func TestPrSetMMForbidden(t *testing.T) {
	needPython(t)
	script := `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(104)  # struct prctl_mm_map, garbage
r = libc.prctl(35, 14, buf, 104, 0)     # PR_SET_MM, PR_SET_MM_MAP
e = ctypes.get_errno()
n = libc.prctl(15, b"renamed", 0, 0, 0)  # PR_SET_NAME
print(r, os.strerror(e) if r else "", n)
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil || o.stdout != "-1 Operation not permitted 0\n" {
		t.Fatalf("err %v stdout %q stderr %q", o.err, o.stdout, o.stderr)
	}
	var found bool
	for _, e := range o.events {
		if e.Syscall == "prctl" && e.Flags == "PR_SET_MM" && e.Kind == syscalls.KindForbidden && e.Errno == "EPERM" {
			found = true
		}
	}
	if !found {
		t.Errorf("no forbidden prctl(PR_SET_MM) event: %+v", o.events)
	}
}

// A process under a seccomp filter of its own is not given the page: the
// injected mmap (MAP_FIXED_NOREPLACE) would meet that filter, and one that
// kills unusual mmap flags, as hardened sandboxes do, would kill the
// program for a call it never made. Its calls freeze instead.
func TestOwnSeccompFilterKeepsFreeze(t *testing.T) {
	needPython(t)
	script := `
import ctypes, platform, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 9, "aarch64": 222}[platform.machine()]  # mmap
ins = lambda code, jt, jf, k: struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    ins(0x20, 0, 0, 0),              # ld nr
    ins(0x15, 0, 3, nr),             # jeq mmap
    ins(0x20, 0, 0, 16 + 8 * 3),     # ld flags (low word)
    ins(0x45, 0, 1, 0x100000),       # jset MAP_FIXED_NOREPLACE
    ins(0x06, 0, 0, 0x80000000),     # ret KILL_PROCESS
    ins(0x06, 0, 0, 0x7fff0000),     # ret ALLOW
])
buf = ctypes.create_string_buffer(prog)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(6, ctypes.addressof(buf))
assert libc.prctl(38, 1, 0, 0, 0) == 0                   # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(fp), 0, 0) == 0    # PR_SET_SECCOMP, FILTER
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
for i in range(5):
    open("f%d" % i, "w").close()
ev.set()
th.join()
print("ok")
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil || o.stdout != "ok\n" || o.res.Signal != 0 {
		t.Fatalf("err %v signal %v stdout %q stderr %q", o.err, o.res.Signal, o.stdout, o.stderr)
	}
	if o.res.Copies != 0 || o.res.PageMaps != 0 || o.res.Freezes < 5 {
		t.Errorf("%d copied, %d page maps, %d freezes; want the freeze only", o.res.Copies, o.res.PageMaps, o.res.Freezes)
	}
}

// A program that maps over the page's range before any process has had the
// page (AddressSanitizer reserves its shadow gap, which covers 8 GiB, at
// start-up) keeps its mapping: the page is off for the run, and the calls
// of its threads freeze instead. Once a process has the page, the same
// call is denied.
func TestRangeTakenBeforeThePage(t *testing.T) {
	needPython(t)
	script := `
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def reserve():
    # PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED|MAP_NORESERVE, 1 GiB from 7.5 GiB
    r = libc.mmap(0x1e0000000, 1 << 30, 0, 0x4032, -1, 0)
    return "ok" if r == 0x1e0000000 else os.strerror(ctypes.get_errno())
first = reserve() if sys.argv[1] == "first" else None
def w(k):
    for i in range(10):
        open("w%d-%d" % (k, i), "w").write("x")
ts = [threading.Thread(target=w, args=(k,)) for k in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
print(first if first else reserve())
`
	for _, c := range []struct {
		when, want string
		copied     bool
	}{
		{"first", "ok\n", false},
		{"after", "Operation not permitted\n", true},
	} {
		t.Run(c.when, func(t *testing.T) {
			o := runTraced(t, t.TempDir(), nil, python, "-c", script, c.when)
			if o.err != nil || o.stdout != c.want {
				t.Fatalf("err %v stdout %q, want %q; stderr %q", o.err, o.stdout, c.want, o.stderr)
			}
			if (o.res.Copies > 0) != c.copied || (!c.copied && o.res.Freezes == 0) {
				t.Errorf("%d copied, %d freezes; want copied=%v", o.res.Copies, o.res.Freezes, c.copied)
			}
		})
	}
}

// Copied calls return what they return bare, whichever register holds the
// path: truncate and removexattr take it in the first argument (rdi on
// x86_64, which the tracer sets back at the syscall-exit stop; x0 on
// aarch64, which is also the return value and must be left alone there),
// unlink (unlinkat) and mkdir (mkdirat) in the second on aarch64. The calls
// go through libc by ctypes, so the raw return value is seen: a pointer
// left in x0 would show as the result. A second, idle thread makes the
// calls run on the path page.
func TestCopiedCallsReturnValues(t *testing.T) {
	needPython(t)
	script := `
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
out = []
def call(name, *a):
    ctypes.set_errno(0)
    r = getattr(libc, name)(*a)
    out.append("%s=%d/%s" % (name, r, os.strerror(ctypes.get_errno()) if r == -1 else ""))
for i in range(int(sys.argv[1])):
    p = b"f%d" % i
    with open(p, "w") as f:
        f.write("hello world")
    call("truncate", p, ctypes.c_long(3))
    out.append("size=%d" % os.path.getsize(p))
    call("removexattr", p, b"user.tracecell-none")
    call("unlink", p)
    call("mkdir", b"d%d" % i, 0o755)
    call("truncate", b"missing/x", ctypes.c_long(0))
ev.set()
th.join()
print(" ".join(out))
`
	const n = 5
	bareDir := t.TempDir()
	cmd := exec.Command(python, "-S", "-c", script, strconv.Itoa(n))
	cmd.Dir = bareDir
	bare, err := cmd.Output()
	if err != nil {
		t.Fatalf("bare run: %v", err)
	}
	o := runTraced(t, t.TempDir(), nil, python, "-S", "-c", script, strconv.Itoa(n))
	if o.err != nil || o.stdout != string(bare) {
		t.Fatalf("err %v\ntraced %q\nbare   %q\nstderr %q", o.err, o.stdout, bare, o.stderr)
	}
	if o.res.Copies < 3*n {
		t.Errorf("%d copied calls, want at least %d (the calls did not run on the path page)", o.res.Copies, 3*n)
	}
	t.Logf("%d copied calls, %d freezes; %s", o.res.Copies, o.res.Freezes, bare)
}

// The layout of a sendmsg copy (copy and freeze): the msghdr first with
// msg_name and msg_control pointed into the slot, the name after it, the
// control data after the name at an 8-byte boundary; the iovec pointer and
// the lengths kept; pointers not read kept; too big for a slot: nil.
func TestMsgCopy(t *testing.T) {
	const slot = 0x200003000
	hdr := make([]byte, unix.SizeofMsghdr)
	le := binary.LittleEndian
	le.PutUint64(hdr[0:], 0x7000)  // msg_name
	le.PutUint32(hdr[8:], 110)     // msg_namelen
	le.PutUint64(hdr[16:], 0x7100) // msg_iov
	le.PutUint64(hdr[24:], 1)      // msg_iovlen
	le.PutUint64(hdr[32:], 0x7200) // msg_control
	le.PutUint64(hdr[40:], 24)     // msg_controllen
	name := bytes.Repeat([]byte{'n'}, 110)
	ctl := bytes.Repeat([]byte{'c'}, 24)
	for _, c := range []struct {
		desc              string
		name, ctl         []byte
		wantName, wantCtl uint64
		wantLen, ctlOff   int
	}{
		{"name and control", name, ctl, slot + 56, slot + 168, 168 + 24, 168},
		{"name only", name, nil, slot + 56, 0x7200, 168, 0},
		{"control only", nil, ctl, 0x7000, slot + 56, 56 + 24, 56},
		{"neither", nil, nil, 0x7000, 0x7200, 56, 0},
		{"odd name", name[:3], ctl, slot + 56, slot + 64, 64 + 24, 64},
	} {
		t.Run(c.desc, func(t *testing.T) {
			b := msgCopy(hdr, c.name, c.ctl, slot)
			if len(b) != c.wantLen {
				t.Fatalf("len %d, want %d", len(b), c.wantLen)
			}
			if got := le.Uint64(b[0:]); got != c.wantName {
				t.Errorf("msg_name %#x, want %#x", got, c.wantName)
			}
			if got := le.Uint64(b[32:]); got != c.wantCtl {
				t.Errorf("msg_control %#x, want %#x", got, c.wantCtl)
			}
			if !bytes.Equal(b[8:32], hdr[8:32]) || !bytes.Equal(b[40:56], hdr[40:56]) {
				t.Errorf("lengths or iovec changed: % x", b[:56])
			}
			if c.name != nil && !bytes.Equal(b[56:56+len(c.name)], c.name) {
				t.Errorf("name not copied after the msghdr")
			}
			if c.ctl != nil && !bytes.Equal(b[c.ctlOff:], c.ctl) {
				t.Errorf("control data not at %d", c.ctlOff)
			}
		})
	}
	if b := msgCopy(hdr, name, make([]byte, 4096-168+1), slot); b != nil {
		t.Errorf("a msghdr one byte larger than a slot was laid out (%d bytes)", len(b))
	}
	if b := msgCopy(hdr, name, make([]byte, 4096-168), slot); len(b) != 4096 {
		t.Errorf("a msghdr filling a slot exactly: %d bytes, want 4096", len(b))
	}
}

// Frozen calls that read memory run on copies of it (copy and freeze): dirfd
// calls, two-path calls, socket addresses and sendmsg's msghdr. They return
// what they return bare, and the copies were used.
func TestFrozenCallsRunOnCopies(t *testing.T) {
	needPython(t)
	script := `
import ctypes, os, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
out = []
def call(name, *a):
    ctypes.set_errno(0)
    r = getattr(libc, name)(*a)
    out.append("%s=%d/%s" % (name, r, os.strerror(ctypes.get_errno()) if r == -1 else ""))
d = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
call("mkdirat", d, b"m", 0o755)
call("mkdirat", d, b"m", 0o755)
call("renameat", d, b"m", d, b"n")
os.close(os.open("f", os.O_CREAT | os.O_WRONLY))
call("linkat", d, b"f", d, b"g", 0)
call("fchmodat", d, b"g", 0o600, 0)
call("unlinkat", d, b"n", 0x200)
call("rename", b"f", b"h")
r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); r.bind("r.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
out.append("sendto=%d" % s.sendto(b"a", "r.sock"))
out.append("sendmsg=%d" % s.sendmsg([b"bc"], [], 0, "r.sock"))
import array
fds = array.array("i", [0])
out.append("sendmsg+fd=%d" % s.sendmsg([b"de"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())], 0, "r.sock"))
s.connect("r.sock")
out.append("got=%s,%s" % (r.recv(10), r.recv(10)))
msg, anc, _, _ = r.recvmsg(10, socket.CMSG_SPACE(4))
out.append("got=%s,%d-fd" % (msg, len(anc)))
ev.set()
th.join()
print(" ".join(out))
`
	bareDir := t.TempDir()
	cmd := exec.Command(python, "-S", "-c", script)
	cmd.Dir = bareDir
	bare, err := cmd.Output()
	if err != nil {
		t.Fatalf("bare run: %v", err)
	}
	o := runTraced(t, t.TempDir(), nil, python, "-S", "-c", script)
	if o.err != nil || o.stdout != string(bare) {
		t.Fatalf("err %v\ntraced %q\nbare   %q\nstderr %q", o.err, o.stdout, bare, o.stderr)
	}
	// mkdirat twice (the second fails EEXIST without running: the
	// tracer answers it), renameat 2, linkat 2, fchmodat, unlinkat,
	// rename 2, bind, sendto, sendmsg twice (the second with control
	// data: an fd passed), connect.
	if o.res.FrozenCopies < 13 {
		t.Errorf("%d arguments ran on copies, want at least 13; %s", o.res.FrozenCopies, bare)
	}
	t.Logf("%d frozen copies, %d copied calls, %d freezes; %s", o.res.FrozenCopies, o.res.Copies, o.res.Freezes, bare)
}
