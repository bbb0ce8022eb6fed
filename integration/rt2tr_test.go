package integration

// Red team pass 2, tracer side: F8 and F1 (a file with no name decided by
// its "<old name> (deleted)" link text), F6 (planting entries in another
// process's /dev/shm directory), F9 (errnos under a deny-read tree), F2
// (futex_waitv's array in shared memory). Ground truth is always checked
// outside the traced tree.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unlinkedHost is a process outside the traced tree that holds an unlinked
// file open (testdata/py/hold_unlinked.py).
type unlinkedHost struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *bufio.Reader
	pid, fd int
}

// startUnlinkedHost starts hold_unlinked.py on p. As root it runs with an
// empty capability bounding set: /proc/<pid>/fd of a process with more
// capabilities than the (capability-less) tree is closed to the tree by
// the kernel (cap_ptrace_access_check), which is not what is tested here.
func startUnlinkedHost(t *testing.T, p string) *unlinkedHost {
	t.Helper()
	argv := []string{python, pyScript("hold_unlinked.py"), p}
	if isRoot {
		sp, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skipf("setpriv (util-linux) is needed to drop the host's capabilities: %v", err)
		}
		argv = append([]string{sp, "--bounding-set=-all", "--inh-caps=-all"}, argv...)
	}
	if noPython != "" {
		t.Skip(noPython)
	}
	h := &unlinkedHost{}
	var so io.Reader
	h.cmd, h.stdin, so = startPiped(t, argv)
	h.out = bufio.NewReader(so)
	line, err := h.out.ReadString('\n')
	if _, err2 := fmt.Sscan(line, &h.pid, &h.fd); err != nil || err2 != nil {
		t.Fatalf("host said %q: %v %v", line, err, err2)
	}
	return h
}

// hostFileState is what the host sees of its unlinked file.
type hostFileState struct {
	Content string   `json:"content"`
	Mode    string   `json:"mode"`
	Mtime   int64    `json:"mtime"`
	Xattrs  []string `json:"xattrs"`
}

func (h *unlinkedHost) state(t *testing.T) hostFileState {
	t.Helper()
	fmt.Fprintln(h.stdin)
	line, err := h.out.ReadString('\n')
	var st hostFileState
	if err != nil || json.Unmarshal([]byte(line), &st) != nil {
		t.Fatalf("host state %q: %v", line, err)
	}
	return st
}

// TestRT2DeletedFile: F8 and F1. Another process's unlinked file, reached
// through /proc/<pid>/fd/N and through a read-only fd of the tree's own, is
// neither written, truncated, re-permissioned, re-timed nor given an xattr,
// whether or not the tree planted an entry named like the link text; every
// attempt is denied with EACCES and reported (rule deleted-file), none
// answered ENOENT in silence. The tree's own unlinked files stay its own.
func TestRT2DeletedFile(t *testing.T) {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm")
	}
	hostDir := realDir(t)
	os.Chmod(hostDir, 0o777) // a nobody host may create in it
	cases := []struct {
		name  string
		file  string
		spoof bool // the tree can plant an entry named like the link text
	}{
		{"shm", fmt.Sprintf("/dev/shm/tracecell-rt2-%d-%d", os.Getpid(), time.Now().UnixNano()), true},
		{"hostdir", filepath.Join(hostDir, "held"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startUnlinkedHost(t, tc.file)
			text := tc.file + " (deleted)"
			t.Cleanup(func() { os.Remove(text) })
			sbx := realDir(t)
			r := runTraced(t, sbx, runEnv(t, sbx), []string{"-q"}, python, pyScript("deleted_spoof.py"),
				strconv.Itoa(h.pid), strconv.Itoa(h.fd), sbx)
			st := h.state(t)
			if st.Content != "HOST-DATA" || st.Mode != "644" || st.Mtime < 1000 || len(st.Xattrs) != 0 {
				t.Errorf("ESCAPED: the host's unlinked file was changed: %+v\nstdout:\n%s", st, r.stdout)
			}
			if r.status != 0 {
				t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
			}
			want := map[string]string{
				"plain open-rdwr": "EACCES", "plain chmod": "EACCES", "plain truncate": "EACCES", "plain utime": "EACCES",
				"fd fchmod": "EACCES", "fd futimens": "EACCES", "fd fsetxattr": "EACCES",
				"own-root chmod": "OK", "own-root fchmod": "OK",
				// The tree's own unlinked file in its own /dev/shm
				// directory: that directory's name shows nothing (a host's
				// file unlinked with a directory of the same name reads
				// alike: TestScratchDeletedInRemadeDir), so it is denied.
				"own-shmdir chmod": "EACCES", "own-shmdir fchmod": "EACCES",
			}
			tags := []string{"self"}
			if tc.spoof {
				tags = append(tags, "spoof")
			}
			for _, tag := range tags {
				for _, k := range []string{" open-rdwr", " chmod", " truncate", " utime"} {
					want[tag+k] = "EACCES"
				}
			}
			got := attemptLines(r.stdout)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: got %q, want %s", k, got[k], v)
				}
			}
			// Every denied attempt is in the report, on the link text.
			n := 0
			for _, e := range r.report.Denials {
				if e.hasResolved(text) && e.Kind != "create" { // not the spoof's own create
					if e.Rule != "deleted-file" || e.Errno != "EACCES" {
						t.Errorf("denial %v: want rule deleted-file, EACCES", e)
					}
					n++
				}
			}
			denied := 0
			for k, v := range want {
				if v == "EACCES" && !strings.HasPrefix(k, "own-") { // the tree's own files have other paths
					denied++
				}
			}
			if n != denied {
				t.Errorf("%d denials on %q in the report, want %d (one per attempt):\n%s\nstdout:\n%s", n, text, denied, r.report.denialList(), r.stdout)
			}
		})
	}
}

// TestRT2ShmPlanting: F6. A directory under /dev/shm that the tree did not
// create (the test's, mode 0777 as a host program's shared one) gets no
// file, symlink, FIFO, directory, hard link or renamed-in entry from the
// tree; every attempt is denied (scratch-not-owned) and reported. In a
// directory the tree made itself all of them stay allowed.
func TestRT2ShmPlanting(t *testing.T) {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm")
	}
	host, err := os.MkdirTemp("/dev/shm", "tracecell-rt2-host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	os.Chmod(host, 0o777)
	sbx := realDir(t)
	mine := fmt.Sprintf("/dev/shm/tracecell-rt2-own-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { os.RemoveAll(mine); os.Remove(mine + "-src") })
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"-q"}, python, pyScript("shm_plant.py"), host, mine)
	if ents, err := os.ReadDir(host); err != nil || len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("ESCAPED: the tree planted %q in %s (%v)\nstdout:\n%s", names, host, err, r.stdout)
	}
	if r.status != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	got := attemptLines(r.stdout)
	for _, what := range []string{"file", "symlink", "fifo", "mkdir", "link", "rename-in"} {
		if got["host "+what] != "EACCES" {
			t.Errorf("host %s: got %q, want EACCES", what, got["host "+what])
		}
		if got["own "+what] != "OK" {
			t.Errorf("own %s: got %q, want OK", what, got["own "+what])
		}
	}
	n := 0
	for _, e := range r.report.Denials {
		for _, p := range e.Paths {
			if strings.HasPrefix(p.Resolved, host+"/") {
				if e.Rule != "scratch-not-owned" || e.Errno != "EACCES" {
					t.Errorf("denial %v: want rule scratch-not-owned, EACCES", e)
				}
				n++
			}
		}
	}
	if n != 6 {
		t.Errorf("%d denials in %s in the report, want 6:\n%s", n, host, r.report.denialList())
	}
}

// TestRT2DenyReadWalkErrno: F9. Under a --deny-read tree a create or change
// whose walk fails on a missing or non-directory component is the EACCES
// denial, reported with rule deny-read (README: no errno tells whether a
// path there exists), and changes nothing.
func TestRT2DenyReadWalkErrno(t *testing.T) {
	denied := realDir(t)
	mkdir(t, filepath.Join(denied, "sub"))
	writeFile(t, filepath.Join(denied, "sub", "exists"), "S", 0o644)
	before := snapshot(t, denied)
	sbx := realDir(t)
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"-q", "--deny-read", denied}, python, pyScript("denyread_errno.py"), denied)
	if d := diffSnap(before, snapshot(t, denied)); len(d) != 0 {
		t.Errorf("ESCAPED: the deny-read tree changed: %v", d)
	}
	if r.status != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		lines++
		if !strings.HasSuffix(l, " EACCES") {
			t.Errorf("%s: want EACCES (the deny-read denial)", l)
		}
	}
	if lines != 8 {
		t.Fatalf("%d results, want 8:\n%s", lines, r.stdout)
	}
	n := 0
	for _, e := range r.report.Denials {
		for _, p := range e.Paths {
			if strings.HasPrefix(p.Resolved, denied+"/") {
				if e.Rule != "deny-read" || e.Errno != "EACCES" {
					t.Errorf("denial %v: want rule deny-read, EACCES", e)
				}
				n++
				break
			}
		}
	}
	if n != 8 {
		t.Errorf("%d denials under %s in the report, want 8:\n%s\nstdout:\n%s", n, denied, r.report.denialList(), r.stdout)
	}
}

// TestRT2FutexWaitvArray: F2. futex_waitv's array in shared anonymous
// memory, rewritten by a forked child (no shared mm, so no freeze before),
// never queues a waiter of the tree on the futex of a host file the tree
// may only read. Ground truth: the host's FUTEX_WAKE on its word, repeated
// all along, wakes nobody. Bounded tries: a race test shows an escape with
// high probability, never its absence for sure.
func TestRT2FutexWaitvArray(t *testing.T) {
	hostFile := filepath.Join(realDir(t), "hostword")
	writeFile(t, hostFile, strings.Repeat("\x00", 4096), 0o644)
	f, err := os.OpenFile(hostFile, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	stop := make(chan struct{})
	woken := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				woken <- n
				return
			default:
			}
			// FUTEX_WAKE (shared: no FUTEX_PRIVATE_FLAG) of every waiter.
			r, _, _ := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&m[0])), 1, 0x7fffffff, 0, 0, 0)
			n += int(r)
			time.Sleep(time.Millisecond)
		}
	}()
	sbx := realDir(t)
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"-q"}, python, pyScript("futex_waitv_race.py"), hostFile, "400")
	close(stop)
	n := <-woken
	if strings.Contains(r.stdout, "ENOSYS") {
		t.Skip("no futex_waitv (Linux 5.16)")
	}
	if n != 0 {
		t.Errorf("ESCAPED: the host's FUTEX_WAKE woke %d waiter(s) of the tree\nstdout:\n%s", n, r.stdout)
	}
	if r.status != 0 || !strings.Contains(r.stdout, "outcomes") {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "EACCES") && !strings.Contains(r.stdout, "EPERM") {
		t.Errorf("no futex_waitv on the host's word was denied: the race never hit the check\nstdout:\n%s", r.stdout)
	}
}

// TestRT3UnlinkedInRootHeldOutside: a process outside the tree holds an
// unlinked file whose last directory is the tree's writable root (a
// TemporaryFile there, or a file it unlinked). The file never was the
// tree's to change once it had no name, and the link it is reached by,
// /proc/<host>/fd/N, is another process's: a write-open and a chmod through
// it are denied and reported (red team pass 3 wrote it and made it 0666).
func TestRT3UnlinkedInRootHeldOutside(t *testing.T) {
	sbx := realDir(t)
	os.Chmod(sbx, 0o777) // a nobody host may create in it
	h := startUnlinkedHost(t, filepath.Join(sbx, "held"))
	link := fmt.Sprintf("/proc/%d/fd/%d", h.pid, h.fd)
	code := fmt.Sprintf(`import os
for what, f in (("write", lambda: open(%[1]q, "r+").write("TREE")), ("chmod", lambda: os.chmod(%[1]q, 0o666))):
    try:
        f()
        print(what, "OK")
    except OSError as e:
        print(what, __import__("errno").errorcode[e.errno])
`, link)
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"-q"}, python, "-c", code)
	st := h.state(t)
	if st.Content != "HOST-DATA" || st.Mode != "644" {
		t.Errorf("ESCAPED: the host's unlinked file was changed: %+v\nstdout:\n%s", st, r.stdout)
	}
	for _, w := range []string{"write EACCES", "chmod EACCES"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("want %q in stdout:\n%s\nstderr:\n%s", w, r.stdout, r.stderr)
		}
	}
	n := 0
	for _, e := range r.report.Denials {
		if e.Rule == "deleted-file" && e.Errno == "EACCES" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d deleted-file denials, want 2:\n%s", n, r.report.denialList())
	}
}

// TestRT4NativeAIO: native AIO is forbidden. An O_DIRECT read submitted
// with io_submit completes on the device's schedule, writing the caller's
// buffer with no task running: after the tracer checked a path (or an
// f_owner_ex) there and before the kernel read it, so no freeze and no
// copy holds it (red team pass 4 made a directory outside the sandbox and
// sent SIGTERM to a process outside the tree this way). io_setup and
// io_submit are denied and reported; bare, io_setup works here.
func TestRT4NativeAIO(t *testing.T) {
	if noPython != "" {
		t.Skip(noPython)
	}
	code := `import ctypes, errno, platform
nr = {"x86_64": (206, 209), "aarch64": (0, 2)}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
ctx = ctypes.c_ulong(0)
r = libc.syscall(nr[0], 8, ctypes.byref(ctx))
print("io_setup", "OK" if r == 0 else errno.errorcode[ctypes.get_errno()])
r = libc.syscall(nr[1], ctx, 0, None)
print("io_submit", "OK" if r == 0 else errno.errorcode[ctypes.get_errno()])
`
	sbx := realDir(t)
	if r := runBare(t, sbx, runEnv(t, sbx), python, "-c", code); !strings.Contains(r.stdout, "io_setup OK") {
		t.Skipf("io_setup does not work bare here (%q): no native AIO to forbid", r.stdout)
	}
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"-q"}, python, "-c", code)
	for _, w := range []string{"io_setup EPERM", "io_submit EPERM"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("want %q in stdout:\n%s\nstderr:\n%s", w, r.stdout, r.stderr)
		}
	}
	for _, sys := range []string{"io_setup", "io_submit"} {
		if _, ok := denialBy(r, sys, "forbidden-syscall"); !ok {
			t.Errorf("no forbidden-syscall denial of %s:\n%s", sys, r.report.denialList())
		}
	}
}

// TestRT7MemfdSecret: red team pass 7. Memory of memfd_secret (5.14) is
// readable by the task itself (the kernel's copy of a call's arguments) but
// by no other process: the tracer could not read a path or a source route
// kept there, so the call was decided unread (a sendmsg's source route went
// out; c8759d5 let memfd_secret run). memfd_secret is forbidden and
// reported; process_mrelease (5.15) with it.
func TestRT7MemfdSecret(t *testing.T) {
	if noPython != "" {
		t.Skip(noPython)
	}
	code := `import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(447, 0)
print("memfd_secret", "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()])
`
	sbx := realDir(t)
	if r := runBare(t, sbx, runEnv(t, sbx), python, "-c", code); !strings.Contains(r.stdout, "memfd_secret OK") {
		t.Skipf("memfd_secret does not work bare here (%q): nothing to forbid", strings.TrimSpace(r.stdout))
	}
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"-q"}, python, "-c", code)
	if !strings.Contains(r.stdout, "memfd_secret EPERM") {
		t.Errorf("want memfd_secret EPERM in stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if _, ok := denialBy(r, "memfd_secret", "forbidden-syscall"); !ok {
		t.Errorf("no forbidden-syscall denial of memfd_secret:\n%s", r.report.denialList())
	}
}
