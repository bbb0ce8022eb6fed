package tracer

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// TestFutexMemWhy classifies real mappings of this process: anonymous and
// writable shared memory may hold shared futex words, a read-only shared
// mapping and an uncopied page of a private file mapping may not; a copied
// one may.
func TestFutexMemWhy(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "futex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	mp := func(prot, flags int, fd int) []byte {
		b, err := unix.Mmap(fd, 0, 4096, prot, flags)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Munmap(b) })
		return b
	}
	fd := int(f.Fd())
	anon := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, -1)
	anon[0] = 1
	shanon := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS, -1)
	shw := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED, fd)
	shr := mp(unix.PROT_READ, unix.MAP_SHARED, fd)
	priv := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE, fd)
	_ = priv[0] // faulted in: the file's page, not a copy
	cow := mp(unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE, fd)
	cow[0] = 1 // copied on write: anonymous now
	tid := unix.Gettid()
	for _, c := range []struct {
		name string
		b    []byte
		bad  string // "" when allowed; else a word of the reason
	}{
		{"private anonymous", anon, ""},
		{"shared anonymous", shanon, ""},
		{"shared writable file", shw, ""},
		{"shared read-only file", shr, "read-only shared mapping"},
		{"private file, not copied", priv, "not copied"},
		{"private file, copied", cow, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, err := readMaps(tid)
			if err != nil {
				t.Fatal(err)
			}
			addr := uint64(uintptr(unsafe.Pointer(&c.b[0])))
			var m mapping
			ok := false
			for _, x := range ms {
				if addr >= x.Start && addr < x.End {
					m, ok = x, true
				}
			}
			if !ok {
				t.Fatalf("%#x not in the maps", addr)
			}
			why := decode.FutexMemWhy(m, func() bool { return procfs.AnonPage(tid, addr) })
			if (why == "") != (c.bad == "") || !strings.Contains(why, c.bad) {
				t.Errorf("futexMemWhy = %q, want %q", why, c.bad)
			}
		})
	}
}

// TestKernelFails: which denied calls get the kernel's own errno instead of
// a denial, and that a deny-read or unreadable path never does.
func TestKernelFails(t *testing.T) {
	pol, err := policy.New(policy.Config{WriteRoots: []string{"/srv/sbx"}, DenyRead: []string{"/home/u/.ssh"}, Scratch: []string{"/dev/shm"}})
	if err != nil {
		t.Fatal(err)
	}
	polRead, err := policy.New(policy.Config{WriteRoots: []string{"/srv/sbx"}, ReadRoots: []string{"/data"}})
	if err != nil {
		t.Fatal(err)
	}
	ex := func(p string) policy.Path { return policy.Path{Given: p, Resolved: p, Exists: true} }
	gone := func(p string) policy.Path { return policy.Path{Given: p, Resolved: p} }
	dir := func(p string) policy.Path { return policy.Path{Given: p, Resolved: p, Exists: true, IsDir: true} }
	for _, c := range []struct {
		name  string
		pol   *policy.Policy
		call  string
		flags uint64 // open flags
		kind  syscalls.Kind
		paths []policy.Path
		want  syscall.Errno
	}{
		{"mkdir existing", pol, "mkdir", 0, syscalls.KindCreate, []policy.Path{ex("/etc")}, syscall.EEXIST},
		{"mkdir new", pol, "mkdir", 0, syscalls.KindCreate, []policy.Path{gone("/etc/x")}, 0},
		{"symlink existing", pol, "symlinkat", 0, syscalls.KindCreate, []policy.Path{ex("/etc/hosts")}, syscall.EEXIST},
		{"shm_unlink gone", pol, "unlink", 0, syscalls.KindDelete, []policy.Path{gone("/dev/shm/psm_1")}, syscall.ENOENT},
		{"unlink existing", pol, "unlink", 0, syscalls.KindDelete, []policy.Path{ex("/dev/shm/psm_1")}, 0},
		{"chmod gone", pol, "chmod", 0, syscalls.KindChmod, []policy.Path{gone("/etc/x")}, syscall.ENOENT},
		{"rename source gone", pol, "rename", 0, syscalls.KindRename, []policy.Path{gone("/etc/a"), ex("/etc/b")}, syscall.ENOENT},
		{"rename onto existing", pol, "rename", 0, syscalls.KindRename, []policy.Path{ex("/etc/a"), ex("/etc/b")}, 0},
		{"link onto existing", pol, "link", 0, syscalls.KindLink, []policy.Path{ex("/etc/a"), ex("/srv/sbx/b")}, syscall.EEXIST},
		{"link source gone", pol, "link", 0, syscalls.KindLink, []policy.Path{gone("/etc/a"), ex("/srv/sbx/b")}, syscall.ENOENT},
		{"O_CREAT|O_EXCL existing", pol, "openat", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{ex("/dev/shm/x")}, syscall.EEXIST},
		{"O_CREAT existing", pol, "openat", unix.O_CREAT | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{ex("/dev/shm/x")}, 0},
		{"O_WRONLY gone", pol, "openat", unix.O_WRONLY, syscalls.KindWrite, []policy.Path{gone("/etc/x")}, syscall.ENOENT},
		{"O_TMPFILE", pol, "openat", unix.O_TMPFILE | unix.O_WRONLY, syscalls.KindCreate, []policy.Path{gone("/etc/x")}, 0},
		// Directories (red team, round 44): EISDIR before permissions.
		{"O_WRONLY dir", pol, "openat", unix.O_WRONLY, syscalls.KindWrite, []policy.Path{dir("/etc")}, syscall.EISDIR},
		{"O_RDWR dir", pol, "openat", unix.O_RDWR, syscalls.KindWrite, []policy.Path{dir("/etc")}, syscall.EISDIR},
		{"O_RDONLY|O_TRUNC dir", pol, "openat", unix.O_TRUNC, syscalls.KindWrite, []policy.Path{dir("/etc")}, syscall.EISDIR},
		{"O_CREAT dir", pol, "openat", unix.O_CREAT | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{dir("/etc")}, syscall.EISDIR},
		{"O_CREAT|O_EXCL dir", pol, "openat", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{dir("/etc")}, syscall.EEXIST},
		{"O_CREAT new/", pol, "creat", unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, syscalls.KindCreate, []policy.Path{{Given: "/etc/new/", Resolved: "/etc/new"}}, syscall.EISDIR},
		{"O_CREAT|O_EXCL file/", pol, "openat", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{{Given: "/etc/hosts//", Resolved: "/etc/hosts", Exists: true}}, syscall.EISDIR},
		{"O_CREAT|O_EXCL dir/.", pol, "openat", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{{Given: "/etc/.", Resolved: "/etc", Exists: true, IsDir: true}}, 0},
		{"O_CREAT dir/..", pol, "openat", unix.O_CREAT | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{{Given: "/etc/x/../", Resolved: "/etc", Exists: true, IsDir: true}}, syscall.EISDIR},
		{"O_CREAT|O_DIRECTORY dir", pol, "openat", unix.O_CREAT | unix.O_DIRECTORY | unix.O_WRONLY, syscalls.KindWrite, []policy.Path{dir("/etc")}, 0},
		{"O_WRONLY deny-read dir", pol, "openat", unix.O_WRONLY, syscalls.KindWrite, []policy.Path{dir("/home/u/.ssh")}, 0},
		{"deny-read existing", pol, "mkdir", 0, syscalls.KindCreate, []policy.Path{ex("/home/u/.ssh/d")}, 0},
		{"deny-read gone", pol, "unlink", 0, syscalls.KindDelete, []policy.Path{gone("/home/u/.ssh/x")}, 0},
		{"outside read roots", polRead, "mkdir", 0, syscalls.KindCreate, []policy.Path{ex("/etc")}, 0},
		{"inside read roots", polRead, "mkdir", 0, syscalls.KindCreate, []policy.Path{ex("/data/d")}, syscall.EEXIST},
		{"fd path", pol, "fchmod", 0, syscalls.KindChmod, []policy.Path{{Given: "fd 3", Resolved: "/etc/x"}}, 0},
		{"proc special", pol, "unlink", 0, syscalls.KindDelete, []policy.Path{{Given: "/proc/1/fd/3", Resolved: "/proc/1/fd/3", Special: "pipe:[1]"}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, ok := syscalls.Lookup(c.call)
			if !ok {
				t.Fatalf("no spec %s", c.call)
			}
			tr := &tracer{pol: c.pol}
			cl := &call{spec: spec, name: c.call, Result: decode.Result{OpenFlags: c.flags, HasOpenFlags: spec.Handler == syscalls.HOpen}}
			op := &policy.Op{Kind: c.kind, Syscall: c.call, Paths: c.paths}
			if got := tr.kernelFails(cl, op); got != c.want {
				t.Errorf("kernelFails = %v, want %v", got, c.want)
			}
		})
	}
}

// TestMmAloneRemembers checks mmAlone on real processes: a single-threaded
// process (python3 with a second thread is one whose mm another task
// shares) is alone beside an unrelated one; the kcmp answers found apart
// are kept, so a task already compared is not compared again (its tid is
// pointed at a pid that does not exist: a kcmp on it would fail and say
// no); a task registered later is compared, and one sharing the mm makes
// the answer no.
func TestMmAloneRemembers(t *testing.T) {
	py := exec.Command("python3", "-c", `import threading, time, sys
ready = threading.Event()
def run():
    print(threading.get_native_id(), flush=True)
    ready.set()
    time.sleep(60)
threading.Thread(target=run, daemon=True).start()
ready.wait()
sys.stdin.read()`)
	out, err := py.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := py.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{py, other} {
		if err := c.Start(); err != nil {
			t.Skipf("start %s: %v", c.Path, err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	defer in.Close()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("python3 thread id: %v", err)
	}
	thread, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("python3 thread id %q: %v", line, err)
	}
	p, o := py.Process.Pid, other.Process.Pid
	// kcmp needs the kernel's CONFIG_CHECKPOINT_RESTORE.
	if _, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(p), uintptr(o), kcmpVM, 0, 0, 0); e == unix.ENOSYS {
		t.Skip("kcmp: ENOSYS (no CONFIG_CHECKPOINT_RESTORE)")
	}
	tr := &tracer{}
	tr.tree.init()
	tk := tr.tree.add(p, p) // its thread is not registered: one thread
	tr.tree.add(o, o)
	if !tr.mmAlone(tk) {
		t.Fatal("a one-thread process beside an unrelated one: not alone")
	}
	tr.tree.tasks[o].tid = noTid // compared already: not again
	if !tr.mmAlone(tk) {
		t.Fatal("a task found apart was compared again")
	}
	sharer := tr.tree.add(thread, noTid+5) // registered since, shares the mm
	if tr.mmAlone(tk) {
		t.Fatal("a task sharing the mm, registered after the first answer: alone")
	}
	tr.tree.remove(sharer.tid)
	tr.tree.add(noTid+7, noTid+7) // registered since, kcmp fails: no
	if tr.mmAlone(tk) {
		t.Fatal("a task kcmp cannot compare: alone")
	}
}
