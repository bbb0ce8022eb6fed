package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/ptytest"
	"github.com/tracecell/tracecell/policy"
)

// hostPty makes a pty outside the traced tree (another session's terminal,
// as far as the tree can tell): its master, unlocked, and the slave's path.
func hostPty(t *testing.T) (*os.File, string) { return ptytest.Open(t) }

// hostTerminal makes a pty outside the tree and opens its slave, to be
// given to the command as its terminal (tracecell's own, as if run on it).
func hostTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, _ = hostPty(t)
	idx, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(idx), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// wantStdout fails the test unless the run went and printed want.
func wantStdout(t *testing.T, o runOut, want string) {
	t.Helper()
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.stdout != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr %s\ndenials %+v", o.stdout, want, o.stderr, o.res.Denials)
	}
}

// masterGot reads what arrived at master m within a short while.
func masterGot(t *testing.T, m *os.File) string {
	t.Helper()
	got, err := ptytest.Output(m, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// ptyScript writes to a pty slave by name: "ok" or "errno N" per try.
const ptyScript = `
import fcntl, os, struct, sys, threading
def w(name, data=b"FROM-THE-TREE\n"):
    try:
        fd = os.open(name, os.O_WRONLY | os.O_NOCTTY)
        os.write(fd, data)
        os.close(fd)
        return "ok"
    except OSError as e:
        return "errno %d" % e.errno
`

// TestPtyOwnAndForeign: the tree writes the ptys it makes (openpty, and
// posix_openpt + ptsname through the multiplexer), also with threads (the
// call and the open run frozen); another pty is denied and reported, and a
// TIOCGPTN that fails records nothing even with that pty's index in memory.
func TestPtyOwnAndForeign(t *testing.T) {
	needPython(t)
	host, name := hostPty(t)
	script := ptyScript + `
foreign = sys.argv[1]
m, s = os.openpty()
print("openpty", w(os.ttyname(s)), os.read(m, 100) == b"FROM-THE-TREE\r\n")
libc = __import__("ctypes").CDLL("libc.so.6", use_errno=True)
libc.ptsname.restype = __import__("ctypes").c_char_p
m2 = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
libc.grantpt(m2)
libc.unlockpt(m2)
print("ptsname", w(libc.ptsname(m2).decode()))
# TIOCGPTNs that fail with the foreign index in their buffer: on a slave
# (ENOTTY), and on the tree's own master into a read-only page (EFAULT).
fidx = int(foreign.rsplit("/", 1)[1])
buf = bytearray(struct.pack("I", fidx))
try:
    fcntl.ioctl(s, 0x80045430, buf, True)
    print("tiocgptn on a slave worked")
except OSError as e:
    print("tiocgptn on a slave", e.errno)
import ctypes, mmap
page = mmap.mmap(-1, mmap.PAGESIZE)
page[:4] = struct.pack("I", fidx)
addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
libc.mprotect(ctypes.c_void_p(addr), mmap.PAGESIZE, mmap.PROT_READ)
r = libc.ioctl(m2, 0x80045430, ctypes.c_void_p(addr))
print("tiocgptn into a read-only page", r, ctypes.get_errno())
print("foreign", w(foreign))
stop = threading.Event()
th = threading.Thread(target=stop.wait)
th.start()
m3, s3 = os.openpty()
print("threaded", w(os.ttyname(s3)))
print("foreign threaded", w(foreign))
stop.set()
th.join()
`
	o := runTraced(t, t.TempDir(), nil, python, "-S", "-c", script, name)
	wantStdout(t, o, "openpty ok True\nptsname ok\ntiocgptn on a slave 25\ntiocgptn into a read-only page -1 14\n"+
		"foreign errno 13\nthreaded ok\nforeign threaded errno 13\n")
	if got := masterGot(t, host); got != "" {
		t.Errorf("the host pty got %q", got)
	}
	if len(o.res.Denials) != 2 {
		t.Fatalf("denials %+v, want the two foreign opens", o.res.Denials)
	}
	for _, d := range o.res.Denials {
		if d.Rule != policy.RuleForeignPty || d.Errno != "EACCES" || len(d.Paths) != 1 || d.Paths[0].Resolved != name {
			t.Errorf("denial %+v, want foreign-pty EACCES of %s", d, name)
		}
	}
	if o.res.Freezes == 0 {
		t.Error("no frozen call: the threaded part did not run with two tasks")
	}
}

// TestPtyIndexReused: the tree made pty N and closed it; a host process
// made the next pty, which devpts gave the freed index N. /dev/pts/N is no
// longer the tree's: same name and device number, another inode.
func TestPtyIndexReused(t *testing.T) {
	needPython(t)
	sbx := t.TempDir()
	script := ptyScript + `
m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(m, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlock
n = struct.unpack("I", fcntl.ioctl(m, 0x80045430, b"\0\0\0\0"))[0]
name = "/dev/pts/%d" % n
print("own", w(name))
os.close(m)
with open("n", "w") as f:
    f.write(str(n))
for _ in range(1000):
    if os.path.exists("go"):
        break
    threading.Event().wait(0.01)
print("reused", w(name))
`
	var host *os.File
	var hostName string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			b, err := os.ReadFile(filepath.Join(sbx, "n"))
			if err == nil && len(b) > 0 {
				// A later tick of the coarse clock than the tree's pty.
				time.Sleep(30 * time.Millisecond)
				fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
				if err == nil {
					host = os.NewFile(uintptr(fd), "/dev/ptmx")
					unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)
					n, _ := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
					hostName = "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
				}
				os.WriteFile(filepath.Join(sbx, "go"), nil, 0o644)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	o := runTraced(t, sbx, nil, python, "-S", "-c", script)
	<-done
	if host != nil {
		defer host.Close()
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	b, _ := os.ReadFile(filepath.Join(sbx, "n"))
	if treeName := "/dev/pts/" + string(b); hostName != treeName {
		t.Skipf("the host pty got %s, not the freed %s (another pty was made meanwhile)", hostName, treeName)
	}
	if o.stdout != "own ok\nreused errno 13\n" {
		t.Fatalf("stdout %q stderr %s denials %+v", o.stdout, o.stderr, o.res.Denials)
	}
	if got := masterGot(t, host); got != "" {
		t.Errorf("the host pty got %q", got)
	}
	if len(o.res.Denials) != 1 || o.res.Denials[0].Rule != policy.RuleForeignPty || o.res.Denials[0].Paths[0].Resolved != hostName {
		t.Errorf("denials %+v", o.res.Denials)
	}
}

// TestPtyStdio: the terminal tracecell's own stdio gives the command is
// writable by name (os.ttyname(1), /dev/stdout); another pty is not.
func TestPtyStdio(t *testing.T) {
	needPython(t)
	term, slave := hostTerminal(t)
	other, otherName := hostPty(t)
	script := ptyScript + `
print("tty", w(os.ttyname(1), b"BY-NAME\n"), file=sys.stderr)
print("stdout", w("/dev/stdout", b"BY-PROC\n"), file=sys.stderr)
print("other", w(sys.argv[1]), file=sys.stderr)
`
	o := runTraced(t, t.TempDir(), func(_ *policy.Config, c *Config) { c.Stdin, c.Stdout = slave, slave },
		python, "-S", "-c", script, otherName)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.stderr != "tty ok\nstdout ok\nother errno 13\n" {
		t.Fatalf("stderr %q denials %+v", o.stderr, o.res.Denials)
	}
	if got := masterGot(t, term); !strings.Contains(got, "BY-NAME") || !strings.Contains(got, "BY-PROC") {
		t.Errorf("the terminal got %q", got)
	}
	if got := masterGot(t, other); got != "" {
		t.Errorf("the other pty got %q", got)
	}
	if len(o.res.Denials) != 1 || o.res.Denials[0].Rule != policy.RuleForeignPty {
		t.Errorf("denials %+v", o.res.Denials)
	}
}

func TestFdinfoField(t *testing.T) {
	b := []byte("pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t91\ntty-index:\t7\n")
	for key, want := range map[string]int{"mnt_id:": 24, "tty-index:": 7, "pos:": 0} {
		if got, ok := fdinfoField(b, key); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, ok, want)
		}
	}
	if _, ok := fdinfoField(b, "lock:"); ok {
		t.Error("a missing key was found")
	}
	if _, ok := fdinfoField([]byte("tty-index:\tx\n"), "tty-index:"); ok {
		t.Error("a bad number was taken")
	}
}

// TestAsyncTTY: signal-driven I/O makes the kernel name a terminal's
// foreground group as the fd's SIGIO owner, and F_SETSIG picks any signal.
// It is denied on another terminal of the user (opened read-only, as open
// reads allow) and on tracecell's own terminal, through F_SETFL and
// FIOASYNC alike; the tree's own ptys, a pipe and O_NONBLOCK pass.
func TestAsyncTTY(t *testing.T) {
	needPython(t)
	_, slave := hostTerminal(t)
	_, foreign := hostPty(t)
	script := `
import fcntl, os, struct, sys
def setfl(fd, flag):
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | flag)
        return "ok"
    except OSError as e:
        return "errno %d" % e.errno
def fioasync(fd):
    try:
        fcntl.ioctl(fd, 0x5452, struct.pack("i", 1))
        return "ok"
    except OSError as e:
        return "errno %d" % e.errno
f = os.open(sys.argv[1], os.O_RDONLY | os.O_NOCTTY)
print("foreign nonblock", setfl(f, os.O_NONBLOCK))
print("foreign setfl", setfl(f, fcntl.FASYNC))
print("foreign fioasync", fioasync(f))
print("stdio setfl", setfl(0, fcntl.FASYNC))
m, s = os.openpty()
print("own master", setfl(m, fcntl.FASYNC), fioasync(m))
print("own slave", setfl(s, fcntl.FASYNC), fioasync(s))
r, w = os.pipe()
print("pipe", setfl(r, fcntl.FASYNC))
`
	o := runTraced(t, t.TempDir(), func(_ *policy.Config, c *Config) { c.Stdin = slave },
		python, "-S", "-c", script, foreign)
	wantStdout(t, o, "foreign nonblock ok\nforeign setfl errno 1\nforeign fioasync errno 1\nstdio setfl errno 1\n"+
		"own master ok ok\nown slave ok ok\npipe ok\n")
	if len(o.res.Denials) != 3 {
		t.Fatalf("denials %+v, want three", o.res.Denials)
	}
	for i, flags := range []string{"F_SETFL(O_ASYNC)", "FIOASYNC", "F_SETFL(O_ASYNC)"} {
		d := o.res.Denials[i]
		if d.Kind.String() != "signal" || d.Rule != policy.RuleOutsideTree || d.Errno != "EPERM" || d.Flags != flags || len(d.Paths) != 1 {
			t.Errorf("denial %d: %+v, want signal outside-tree EPERM %s", i, d, flags)
		}
	}
}

// TestPtyLearn: a TIOCGPTN's answer is recorded only when the kernel
// agrees with it (a master of tracecell's own ptmx, fdinfo's tty-index),
// and never past maxPtys. The "tree" is this test process.
func TestPtyLearn(t *testing.T) {
	master, name := hostPty(t)
	other, _ := hostPty(t)
	var idx [2]uint32
	for i, m := range []*os.File{master, other} {
		n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
		if err != nil {
			t.Fatal(err)
		}
		idx[i] = n
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	mfd, nfd := int32(master.Fd()), int32(null.Fd())
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", mfd))
	if err != nil {
		t.Fatal(err)
	}
	_, shown := fdinfoField(info, "tty-index:") // 4.19+
	full := func(l *ptyLedger) {
		for i := uint32(0); len(l.own) < maxPtys; i++ {
			if i != idx[0] {
				l.own[i] = ptyID{}
			}
		}
	}
	cases := []struct {
		name     string
		fd       int32
		n        uint32
		unfrozen bool
		prep     func(l *ptyLedger)
		want     bool
	}{
		{"its own master", mfd, idx[0], false, nil, true},
		{"its own master, unfrozen", mfd, idx[0], true, nil, shown},
		{"another pty's index in memory", mfd, idx[1], false, nil, !shown},
		{"not a master", nfd, idx[0], false, nil, false},
		{"no such fd", 1 << 20, idx[0], false, nil, false},
		{"a ptmx that is not tracecell's", mfd, idx[0], false, func(l *ptyLedger) { l.refs = nil }, false},
		{"the ledger full", mfd, idx[0], false, full, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newPtyLedger()
			if c.prep != nil {
				c.prep(l)
			}
			before := len(l.own)
			l.learn(os.Getpid(), unix.Gettid(), c.fd, c.n, c.unfrozen, zerolog.Nop())
			if got := len(l.own) > before; got != c.want {
				t.Errorf("recorded %v, want %v (tty-index shown: %v)", got, c.want, shown)
			}
			if c.want && c.n == idx[0] && !l.owns(name) {
				t.Errorf("%s recorded but not owned", name)
			}
		})
	}
}
