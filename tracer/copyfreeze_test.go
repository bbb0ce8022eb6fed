package tracer

import (
	"strings"
	"testing"

	"github.com/tracecell/tracecell/syscalls"
)

// TestFrozenCopiesCalls: which frozen calls run on copies of the memory
// they are decided on. futex_waitv and futex_requeue do (their waiters
// array, read only by the kernel), and fsetxattr (its attribute name); the
// other futex calls name their words in registers; ioctl, fcntl and
// sendmmsg read memory the kernel reads in place (uncopiedRead,
// exitRewritten); fremovexattr and fchmod read none.
func TestFrozenCopiesCalls(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"futex_waitv", true},
		{"futex_requeue", true},
		{"futex", false},
		{"futex_wait", false},
		{"futex_wake", false},
		{"connect", true},
		{"sendmsg", true},
		{"sendmmsg", false},
		{"mkdirat", true},
		{"ioctl", false},
		{"fcntl", false},
		{"fsetxattr", true},
		{"fremovexattr", false},
		{"fchmod", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, ok := syscalls.Lookup(c.name)
			if !ok {
				t.Fatalf("no spec for %s", c.name)
			}
			if got := frozenCopies(&call{name: c.name, spec: spec}); got != c.want {
				t.Errorf("frozenCopies(%s) = %v, want %v", c.name, got, c.want)
			}
		})
	}
}

// TestUncopiedRead: a frozen call's read of memory that is not copied is
// recorded for exitWritable and marks the call uncopied, the tree's mm
// sharing judged before it; a call that is not frozen, and sendmsg and
// sendmmsg (which judge their reads themselves), are left as they were.
func TestUncopiedRead(t *testing.T) {
	for _, c := range []struct {
		name     string
		frozen   bool
		uncopied bool
	}{
		{"ioctl", true, true},
		{"fcntl", true, true},
		{"ioctl", false, false},
		{"sendmsg", true, false},
		{"sendmmsg", true, false},
	} {
		t.Run(c.name+map[bool]string{true: "/frozen", false: "/unfrozen"}[c.frozen], func(t *testing.T) {
			tr := &tracer{}
			cl := &call{tk: &task{tid: 1, tgid: 1}, name: c.name, frozen: c.frozen}
			s := span{Lo: 0x1000, Hi: 0x1008}
			tr.uncopiedRead(cl, s)
			tr.uncopiedRead(cl, span{Lo: 0x2000, Hi: 0x2004})
			if cl.uncopied != c.uncopied || cl.mmJudged != c.uncopied {
				t.Fatalf("uncopied %v judged %v, want %v", cl.uncopied, cl.mmJudged, c.uncopied)
			}
			if !c.uncopied {
				if len(cl.spans) != 0 || cl.noCopy != "" {
					t.Errorf("spans %v noCopy %q, want none", cl.spans, cl.noCopy)
				}
				return
			}
			if len(cl.spans) != 2 || cl.spans[0] != s || !strings.Contains(cl.noCopy, c.name) {
				t.Errorf("spans %v noCopy %q, want both spans and the call named", cl.spans, cl.noCopy)
			}
		})
	}
}

// TestFrozenUncopiedReads: fcntl F_SETOWN_EX and ioctl FIOSETOWN, run
// frozen (another thread lives), read their argument in place. In private
// memory no exit can write it: they run as bare. In a MAP_SHARED mapping a
// dying task's robust list could: they are denied (kernel-rewritten-input,
// EACCES) though the owner, the program itself, is allowed.
func TestFrozenUncopiedReads(t *testing.T) {
	needPython(t)
	script := `
import ctypes, fcntl, mmap, os, socket, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
stop = threading.Event()
threading.Thread(target=stop.wait).start()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
shm = mmap.mmap(-1, 4096)  # MAP_SHARED | MAP_ANONYMOUS
shm[0:8] = struct.pack("ii", 1, os.getpid())  # F_OWNER_PID
priv = ctypes.create_string_buffer(struct.pack("ii", 1, os.getpid()))
addr = ctypes.addressof(ctypes.c_char.from_buffer(shm))
out = []
def call(name, cmd, p):
    ctypes.set_errno(0)
    r = libc.ioctl(s.fileno(), cmd, ctypes.c_void_p(p)) if cmd == 0x8901 else libc.fcntl(s.fileno(), cmd, ctypes.c_void_p(p))
    out.append("%s=%d/%d" % (name, r, ctypes.get_errno() if r < 0 else 0))
call("setownex-private", 15, ctypes.addressof(priv))
call("setownex-shared", 15, addr)
call("fiosetown-private", 0x8901, ctypes.addressof(priv) + 4)
call("fiosetown-shared", 0x8901, addr + 4)
stop.set()
print(" ".join(out))
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := "setownex-private=0/0 setownex-shared=-1/13 fiosetown-private=0/0 fiosetown-shared=-1/13\n"
	if o.stdout != want {
		t.Fatalf("stdout %q, want %q\nstderr %q", o.stdout, want, o.stderr)
	}
	if len(o.res.Denials) != 2 {
		t.Fatalf("denials %+v, want the two shared ones", o.res.Denials)
	}
	for _, d := range o.res.Denials {
		if d.Rule != "kernel-rewritten-input" || d.Errno != "EACCES" || !strings.Contains(d.Reason, "shared mapping") {
			t.Errorf("denial %+v: want kernel-rewritten-input, EACCES, naming the shared mapping", d)
		}
	}
}

// TestFsetxattrRunsOnCopy: a frozen fsetxattr (another thread lives) runs
// on a copy of its attribute name, and sets what it sets bare.
func TestFsetxattrRunsOnCopy(t *testing.T) {
	needPython(t)
	script := `
import os, threading
stop = threading.Event()
threading.Thread(target=stop.wait).start()
fd = os.open("f", os.O_CREAT | os.O_RDWR, 0o644)
try:
    os.setxattr(fd, "user.tracecell", b"v1")
    print(os.getxattr("f", "user.tracecell"))
except OSError as e:
    print("errno", e.errno)
stop.set()
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.stdout == "errno 95\n" {
		t.Skip("no user xattrs on the temp dir's file system")
	}
	if o.stdout != "b'v1'\n" || len(o.res.Denials) != 0 {
		t.Fatalf("stdout %q denials %+v stderr %q", o.stdout, o.res.Denials, o.stderr)
	}
	if o.res.FrozenCopies < 1 {
		t.Errorf("%d arguments ran on copies, want fsetxattr's name", o.res.FrozenCopies)
	}
}
