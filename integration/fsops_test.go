package integration

// File-system side channels (issue 16 findings 6, 7, 8; issue 17 item 7):
// futexes on a host program's named semaphore, POSIX message queues reached
// through an mqueue mount, set-id bits and file capabilities, xattr reads
// and inotify watches on deny-read paths, and the kernel's own errno where
// a denied call could not have changed anything. Each case checks the
// outside world from outside the tree: the host waiter is woken, the host
// queue keeps its message, the sandbox file has no set-id bit.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fsopsSeq numbers the host objects (shm names) the cases make.
var fsopsSeq atomic.Int64

// fsops returns testdata/fsops/fsops.c compiled (TRACECELL_FSOPS_BIN: already
// compiled, for machines without gcc).
func fsops(t *testing.T) string {
	return cProgram(t, "TRACECELL_FSOPS_BIN", "fsops/fsops.c", "-pthread")
}

// nobodyCmd is the prefix that runs a command as nobody, for the cases that
// run both as root and as an ordinary user (nil when not root: the run is
// unprivileged already).
func nobodyCmd(t *testing.T) []string {
	t.Helper()
	if !isRoot {
		return nil
	}
	sp, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skipf("setpriv (util-linux) is missing: %v", err)
	}
	return []string{sp, "--reuid", "65534", "--regid", "65534", "--clear-groups"}
}

// fsRun is one run of fsops under tracecell (prefix: how tracecell itself
// is started, e.g. as nobody).
type fsRun struct {
	result string // the "result: ..." line
	r      result
}

// runFsops runs fsops CASE ARGS under tracecell with sbx writable and the
// given flags; the report goes to a directory anyone may write.
func runFsops(t *testing.T, prefix []string, sbx string, flags []string, args ...string) fsRun {
	t.Helper()
	rd := openWorldDir(t)
	rp := filepath.Join(rd, "report.json")
	argv := append(append([]string{}, prefix...), tcBin, "run", "--write", sbx, "--report", rp)
	argv = append(argv, flags...)
	argv = append(argv, "--", fsops(t))
	argv = append(argv, args...)
	r := execute(t, "", os.Environ(), argv)
	r.report = readReport(t, rp, r)
	return fsRun{result: resultOf(r.stdout), r: r}
}

// openDir is a fresh directory anyone may reach and write (mode 0777 under
// the system temp dir; t.TempDir's parent is private to the test's user),
// symlinks expanded.
func openWorldDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tcfsops-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if d, err = filepath.EvalSymlinks(d); err != nil {
		t.Fatal(err)
	}
	return d
}

// runFsopsBare runs fsops CASE ARGS without tracecell.
func runFsopsBare(t *testing.T, prefix []string, args ...string) string {
	t.Helper()
	argv := append(append([]string{}, prefix...), fsops(t))
	r := execute(t, "", os.Environ(), append(argv, args...))
	return resultOf(r.stdout)
}

// denial finds a denial of syscall with rule in the report.
func (f fsRun) denial(syscall, rule string) (event, bool) {
	for _, e := range f.r.report.Denials {
		if e.Decision == "deny" && e.Syscall == syscall && e.Rule == rule {
			return e, true
		}
	}
	return event{}, false
}

// hostWaiter is a host program (outside the tree) waiting on a named
// semaphore it created.
type hostWaiter struct {
	name, file string
	cmd        *exec.Cmd
	done       chan string
}

func startWaiter(t *testing.T) *hostWaiter {
	t.Helper()
	return waiterOn(t, newSem(t))
}

// newSem names a fresh named semaphore and removes it after the test.
func newSem(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	name := fmt.Sprintf("/tcfsops-%d-%d", os.Getpid(), fsopsSeq.Add(1))
	file := "/dev/shm/sem." + name[1:]
	os.Remove(file)
	t.Cleanup(func() { os.Remove(file) })
	return name
}

// waiterOn starts the host waiter on semaphore name (created by it unless
// it exists).
func waiterOn(t *testing.T, name string) *hostWaiter {
	t.Helper()
	w := &hostWaiter{name: name, file: "/dev/shm/sem." + name[1:], done: make(chan string, 1)}
	// Its own timeout (20 s) is far above the time the test gives it
	// once posted: a waiter that was moved away times out; one still
	// there wakes at once.
	w.cmd = exec.Command(fsops(t), "semwait", name, "20")
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill(); w.cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("host waiter did not start: %q", sc.Text())
	}
	go func() {
		var last string
		for sc.Scan() {
			last = sc.Text()
		}
		w.done <- last
	}()
	// Wait until it sleeps in futex (/proc/<pid>/syscall names the call
	// it is blocked in), so the tree's call finds it queued.
	nr := map[bool]string{true: "202 ", false: "98 "}[isAMD64()]
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", w.cmd.Process.Pid))
		if strings.HasPrefix(string(b), nr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("host waiter not in futex after 5s: /proc/pid/syscall %q", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The tree (maybe nobody) maps it read-only.
	if err := os.Chmod(w.file, 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// postAndWoken posts the semaphore from another host process and says
// whether the host waiter woke within 5 s (ground truth).
func (w *hostWaiter) postAndWoken(t *testing.T) (bool, string) {
	t.Helper()
	if out, err := exec.Command(fsops(t), "sempost", w.name).CombinedOutput(); err != nil {
		t.Fatalf("sempost: %v\n%s", err, out)
	}
	select {
	case last := <-w.done:
		return last == "host: woken", last
	case <-time.After(5 * time.Second):
		return false, "still waiting 5s after sem_post: its waiter was moved away"
	}
}

// TestFsopsFutexSharedWord: a read-only mapping of a host program's named
// semaphore must not reach its futex (16.6).
func TestFsopsFutexSharedWord(t *testing.T) {
	cases := []struct {
		name string
		// moves: the bare call moves the host's waiter, so the
		// waiter's wake-up is the ground truth.
		moves bool
	}{
		{"futex-cmp-requeue", true},
		{"futex-requeue-private-map", true}, // an uncopied MAP_PRIVATE page is keyed by the file
		{"futex-requeue-to", false},         // the host's word as uaddr2
		{"futex-wake", false},
		{"futex-waitv", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := startWaiter(t)
			sbx := realDir(t)
			f := runFsops(t, nil, sbx, nil, c.name, w.file)
			if c.name == "futex-waitv" && f.result == "errno=ENOSYS" {
				t.Skip("futex_waitv (5.16) is not in this kernel")
			}
			woken, why := w.postAndWoken(t)
			if c.moves && !woken {
				t.Errorf("ESCAPED: the host's waiter was not woken by its sem_post (%s); tree saw %q", why, f.result)
			}
			if f.result != "errno=EPERM" {
				t.Errorf("tree saw %q, want errno=EPERM\nstderr:\n%s", f.result, f.r.stderr)
			}
			sys := "futex"
			if c.name == "futex-waitv" {
				sys = "futex_waitv"
			}
			e, ok := f.denial(sys, "futex-memory")
			if !ok || e.Kind != "futex" || !e.hasResolved(w.file) || e.Errno != "EPERM" {
				t.Errorf("no futex-memory denial naming %s; denials:\n%s", w.file, f.r.report.denialList())
			}
			if !strings.Contains(f.r.stderr, "tracecell: blocked futex") {
				t.Errorf("no notice; stderr:\n%s", f.r.stderr)
			}
		})
	}
}

// TestFsopsFutexSharedWordBare proves the ground truth: without tracecell
// the requeue moves the host's waiter, whose sem_post then wakes nobody.
func TestFsopsFutexSharedWordBare(t *testing.T) {
	w := startWaiter(t)
	if res := runFsopsBare(t, nil, "futex-cmp-requeue", w.file); res != "ok 1" {
		t.Fatalf("bare requeue: %q, want ok 1 (one waiter moved)", res)
	}
	if woken, _ := w.postAndWoken(t); woken {
		t.Fatal("the host waiter woke although it was moved: the ground truth cannot fail")
	}
}

// TestFsopsFutexOwnMemory: shared futexes on memory the tree may write
// (shared anonymous memory, a writable shared mapping of a sandbox file, a
// copied page of a private file mapping, private memory) are not denied.
func TestFsopsFutexOwnMemory(t *testing.T) {
	sbx := realDir(t)
	writeFile(t, filepath.Join(sbx, "w"), strings.Repeat("\x00", 4096), 0o644)
	f := runFsops(t, nil, sbx, nil, "futex-own", filepath.Join(sbx, "w"))
	if f.result != "ok 0" || len(f.r.report.Denials) != 0 {
		t.Errorf("result %q, denials:\n%s\nstderr:\n%s", f.result, f.r.report.denialList(), f.r.stderr)
	}
}

// mqueueDir finds a mount of the mqueue file system, or mounts one in a
// private mount namespace (root only): the prefix to run tracecell with
// and the directory the queues are in.
func mqueueDir(t *testing.T) (prefix []string, dir string) {
	t.Helper()
	for _, m := range mountTable(t) {
		if m.fstype == "mqueue" {
			return nil, m.point
		}
	}
	if !isRoot {
		t.Skip("no mqueue file system mounted (mount -t mqueue none /dev/mqueue), and only root could mount one")
	}
	us, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("no mqueue mount and no unshare(1): %v", err)
	}
	dir = t.TempDir()
	// The queues are the IPC namespace's: a mount in a private mount
	// namespace shows the host's queues without touching its mount table.
	return []string{us, "-m", "--propagation", "private", "sh", "-c", `mount -t mqueue mq "$0" && exec "$@"`, dir}, dir
}

// hostQueue creates a POSIX message queue from outside the tree with one
// message in it.
func hostQueue(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("/tcfsops-%d-%d", os.Getpid(), fsopsSeq.Add(1))
	if out, err := exec.Command(fsops(t), "mqhost", name).CombinedOutput(); err != nil {
		t.Fatalf("mqhost: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		p, _ := unix.BytePtrFromString(name[1:])
		unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	})
	return name
}

// queueState is what the host sees of its queue: "messages=N flags=F
// notify=free|EBUSY".
func queueState(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command(fsops(t), "mqcheck", name).CombinedOutput()
	if err != nil {
		t.Fatalf("mqcheck: %v\n%s", err, out)
	}
	return strings.TrimSpace(strings.TrimPrefix(string(out), "host: "))
}

// TestFsopsMqueue: a read-only open of /dev/mqueue/NAME is no way to a
// host queue (16.7).
func TestFsopsMqueue(t *testing.T) {
	prefix, dir := mqueueDir(t)
	mqRun := func(t *testing.T, args ...string) (fsRun, *exec.Cmd, func() fsRun) {
		t.Helper()
		sbx := realDir(t)
		rd := t.TempDir()
		rp := filepath.Join(rd, "report.json")
		argv := append(append([]string{}, prefix...), tcBin, "run", "--write", sbx, "--report", rp, "--", fsops(t))
		cmd := exec.Command(argv[0], append(argv[1:], args...)...)
		var se strings.Builder
		cmd.Stderr = &se
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var first string
		if sc.Scan() {
			first = sc.Text()
		}
		finish := func() fsRun {
			for sc.Scan() {
			}
			cmd.Wait()
			b, err := os.ReadFile(rp)
			if err != nil {
				t.Fatalf("no report: %v\nstderr:\n%s", err, se.String())
			}
			rep := &reportDoc{}
			if err := json.Unmarshal(b, rep); err != nil {
				t.Fatal(err)
			}
			return fsRun{result: strings.TrimPrefix(first, "result: "), r: result{stderr: se.String(), report: rep}}
		}
		return fsRun{result: strings.TrimPrefix(first, "result: ")}, cmd, finish
	}
	t.Run("receive", func(t *testing.T) {
		q := hostQueue(t)
		_, _, finish := mqRun(t, "mq-receive", filepath.Join(dir, q[1:]))
		f := finish()
		if st := queueState(t, q); !strings.HasPrefix(st, "messages=1 ") {
			t.Errorf("ESCAPED: the host queue lost its message: %s (tree saw %q)", st, f.result)
		}
		checkMqDenial(t, f, "mq_timedreceive", filepath.Join(dir, q[1:]))
	})
	t.Run("notify", func(t *testing.T) {
		q := hostQueue(t)
		// The tree holds its fd open for 3 s after its mq_notify; the
		// host looks meanwhile (a registration ends with the fd).
		_, cmd, finish := mqRun(t, "mq-notify", filepath.Join(dir, q[1:]), "3")
		st := queueState(t, q)
		f := finish()
		_ = cmd
		if !strings.HasSuffix(st, "notify=free") {
			t.Errorf("ESCAPED: the tree registered for the host queue's notification: %s (tree saw %q)", st, f.result)
		}
		checkMqDenial(t, f, "mq_notify", filepath.Join(dir, q[1:]))
	})
	for _, c := range []struct{ cs, sys string }{{"mq-setattr", "mq_getsetattr"}} {
		t.Run(c.cs, func(t *testing.T) {
			q := hostQueue(t)
			_, _, finish := mqRun(t, c.cs, filepath.Join(dir, q[1:]))
			f := finish()
			checkMqDenial(t, f, c.sys, filepath.Join(dir, q[1:]))
		})
	}
}

func checkMqDenial(t *testing.T, f fsRun, sys, queue string) {
	t.Helper()
	if f.result != "errno=EPERM" {
		t.Errorf("tree saw %q, want errno=EPERM\nstderr:\n%s", f.result, f.r.stderr)
	}
	e, ok := f.denial(sys, "forbidden-syscall")
	if !ok || !e.hasResolved(queue) {
		t.Errorf("no forbidden-syscall denial of %s naming %s; denials:\n%s", sys, queue, f.r.report.denialList())
	}
}

// TestFsopsSetID: the tree never makes a set-id file or gives a file
// capabilities, in its sandbox or anywhere (16.8). Ground truth: stat from
// outside. Run as the test's user and, when that is root, as nobody too.
func TestFsopsSetID(t *testing.T) {
	users := map[string][]string{"self": nil}
	if isRoot {
		users["nobody"] = nobodyCmd(t)
	}
	type setidCase struct {
		name  string
		args  func(sbx string) []string
		check string // the entry whose mode is looked at
		deny  bool
		sys   string
	}
	cases := []setidCase{
		{"chmod-4755", func(s string) []string { return []string{"chmod", s + "/prog", "4755"} }, "prog", true, "chmod"},
		{"fchmod-2755", func(s string) []string { return []string{"fchmod", s + "/prog", "2755"} }, "prog", true, "fchmod"},
		{"fchmodat-6755", func(s string) []string { return []string{"fchmodat", s + "/prog", "6755"} }, "prog", true, "fchmodat"},
		{"creat-4755", func(s string) []string { return []string{"creat", s + "/new", "4755"} }, "new", true, "openat"},
		{"mknod-4755", func(s string) []string { return []string{"mknod", s + "/new", "4755"} }, "new", true, "mknodat"},
		{"tmpfile-4755", func(s string) []string { return []string{"tmpfile", s + "/dir", "4755"} }, "dir/x", true, "openat"},
		// Allowed: S_ISGID on a directory (group inheritance), and mkdir,
		// whose set-id bits the kernel drops.
		{"chmod-dir-2775", func(s string) []string { return []string{"chmod", s + "/dir", "2775"} }, "", false, ""},
		{"mkdir-6777", func(s string) []string { return []string{"mkdir", s + "/newdir", "6777"} }, "newdir", false, ""},
	}
	for user, prefix := range users {
		for _, c := range cases {
			t.Run(user+"/"+c.name, func(t *testing.T) {
				sbx := openWorldDir(t)
				prog := filepath.Join(sbx, "prog")
				writeFile(t, prog, "#!/bin/sh\n", 0o755)
				mkdir(t, filepath.Join(sbx, "dir"))
				os.Chmod(filepath.Join(sbx, "dir"), 0o777)
				if user == "nobody" {
					os.Chown(prog, 65534, 65534)
					os.Chown(filepath.Join(sbx, "dir"), 65534, 65534)
				}
				f := runFsops(t, prefix, sbx, nil, c.args(sbx)...)
				if c.check != "" {
					var st unix.Stat_t
					if err := unix.Lstat(filepath.Join(sbx, c.check), &st); err == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
						t.Errorf("ESCAPED: %s has mode %#o", c.check, st.Mode&0o7777)
					}
				}
				if !c.deny {
					if !strings.HasPrefix(f.result, "ok") || len(f.r.report.Denials) != 0 {
						t.Errorf("result %q, denials:\n%s", f.result, f.r.report.denialList())
					}
					return
				}
				if f.result != "errno=EPERM" {
					t.Errorf("tree saw %q, want errno=EPERM\nstderr:\n%s", f.result, f.r.stderr)
				}
				sys := c.sys
				if sys == "chmod" && !isAMD64() {
					sys = "fchmodat" // arm64 has no chmod(2): glibc calls fchmodat
				}
				if _, ok := f.denial(sys, "set-id-bits"); !ok {
					t.Errorf("no set-id-bits denial of %s; denials:\n%s", c.sys, f.r.report.denialList())
				}
			})
		}
	}
	t.Run("setcap", func(t *testing.T) {
		sbx := realDir(t)
		prog := filepath.Join(sbx, "prog")
		writeFile(t, prog, "#!/bin/sh\n", 0o755)
		// Bare first, on a copy: can this user set file capabilities
		// here at all?
		probe := filepath.Join(realDir(t), "probe")
		writeFile(t, probe, "x", 0o755)
		if res := runFsopsBare(t, nil, "setcap", probe); res != "ok 0" {
			t.Skipf("bare setxattr(security.capability) gets %s here", res)
		}
		// A root tree keeps CAP_SETFCAP only when asked: ask, so that
		// only tracecell's check stands between it and the file.
		var flags []string
		if isRoot {
			flags = []string{"--keep-cap", "setfcap"}
		}
		f := runFsops(t, nil, sbx, flags, "setcap", prog)
		if sz, err := unix.Lgetxattr(prog, "security.capability", nil); err == nil && sz > 0 {
			t.Errorf("ESCAPED: %s has file capabilities (%d bytes)", prog, sz)
		}
		if f.result != "errno=EPERM" {
			t.Errorf("tree saw %q, want errno=EPERM", f.result)
		}
		if _, ok := f.denial("setxattr", "file-capabilities"); !ok {
			t.Errorf("no file-capabilities denial; denials:\n%s", f.r.report.denialList())
		}
	})
}

// TestFsopsKernelErrno: where a denied call could not have changed
// anything, the tree gets the kernel's answer (as bare), and no denial is
// reported; but never for a deny-read path (issue 17 item 7).
func TestFsopsKernelErrno(t *testing.T) {
	host := realDir(t)
	os.Chmod(host, 0o755)
	mkdir(t, filepath.Join(host, "sub"))
	writeFile(t, filepath.Join(host, "f"), "x", 0o644)
	secret := filepath.Join(host, "secret")
	mkdir(t, secret)
	mkdir(t, filepath.Join(secret, "d"))
	shmName := fmt.Sprintf("tcfsops-%d-%d", os.Getpid(), fsopsSeq.Add(1))
	shm := "/dev/shm/" + shmName
	writeFile(t, shm, "host", 0o644)
	t.Cleanup(func() { os.Remove(shm) })
	cases := []struct {
		name  string
		args  []string
		errno string
		rule  string // "" : no denial; else the denial's rule
	}{
		{"shm-unlink-missing", []string{"unlink", "/dev/shm/" + shmName + "-missing"}, "ENOENT", ""},
		{"shm-creat-excl-existing", []string{"creat-excl", shm}, "EEXIST", ""},
		{"mkdir-existing-outside", []string{"mkdir", filepath.Join(host, "sub"), "755"}, "EEXIST", ""},
		{"rmdir-missing-outside", []string{"rmdir", filepath.Join(host, "nope")}, "ENOENT", ""},
		{"open-write-missing-outside", []string{"open-write", filepath.Join(host, "nope")}, "ENOENT", ""},
		{"rename-missing-outside", []string{"rename", filepath.Join(host, "nope"), filepath.Join(host, "nope2")}, "ENOENT", ""},
		{"chmod-missing-outside", []string{"chmod", filepath.Join(host, "nope"), "644"}, "ENOENT", ""},
		// A directory opened for writing, or a create with a trailing
		// slash: EISDIR before any permission check (red team, round 44).
		{"open-write-dir-outside", []string{"open-write", filepath.Join(host, "sub")}, "EISDIR", ""},
		{"open-create-dir-outside", []string{"open-create", filepath.Join(host, "sub")}, "EISDIR", ""},
		{"open-trunc-dir-outside", []string{"open-trunc", filepath.Join(host, "sub")}, "EISDIR", ""},
		{"open-create-slash-outside", []string{"open-create", filepath.Join(host, "new") + "/"}, "EISDIR", ""},
		{"creat-excl-slash-outside", []string{"creat-excl", filepath.Join(host, "new2") + "/"}, "EISDIR", ""},
		{"open-write-dir-etc", []string{"open-write", "/etc"}, "EISDIR", ""},
		// Still denied: the call would change something.
		{"open-create-existing-outside", []string{"open-create", filepath.Join(host, "f")}, "EACCES", "outside-writable-roots"},
		{"unlink-existing-outside", []string{"unlink", filepath.Join(host, "f")}, "EACCES", "outside-writable-roots"},
		{"shm-unlink-not-owned", []string{"unlink", shm}, "EACCES", "scratch-not-owned"},
		// A deny-read path: no existence leaks, whatever the kernel says.
		{"mkdir-existing-deny-read", []string{"mkdir", filepath.Join(secret, "d"), "755"}, "EACCES", "deny-read"},
		{"unlink-missing-deny-read", []string{"unlink", filepath.Join(secret, "nope")}, "EACCES", "deny-read"},
		{"open-write-dir-deny-read", []string{"open-write", filepath.Join(secret, "d")}, "EACCES", "deny-read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sbx := realDir(t)
			f := runFsops(t, nil, sbx, []string{"--deny-read", secret}, c.args...)
			if f.result != "errno="+c.errno {
				t.Errorf("tree saw %q, want errno=%s\nstderr:\n%s", f.result, c.errno, f.r.stderr)
			}
			if c.rule == "" {
				if len(f.r.report.Denials) != 0 {
					t.Errorf("denials reported for a call the kernel fails anyway:\n%s", f.r.report.denialList())
				}
				// As bare: the same errno.
				if bare := runFsopsBare(t, nil, c.args...); bare != f.result {
					t.Errorf("bare run saw %q, traced %q", bare, f.result)
				}
			} else if _, ok := f.denial(f.sysOf(), c.rule); !ok {
				t.Errorf("no %s denial; denials:\n%s", c.rule, f.r.report.denialList())
			}
			if b, err := os.ReadFile(shm); err != nil || string(b) != "host" {
				t.Errorf("ESCAPED: host scratch entry %s changed: %q %v", shm, b, err)
			}
		})
	}
}

// TestFsopsOPathWriteFlags: O_PATH keeps only O_DIRECTORY, O_NOFOLLOW and
// O_CLOEXEC, so O_PATH|O_WRONLY|O_CREAT|O_TRUNC of a host file or directory
// opens a reference and changes nothing: as bare, no denial (it was
// refused, with EACCES and then EISDIR: red team, round 45). The host
// file's content is the ground truth that nothing was truncated.
func TestFsopsOPathWriteFlags(t *testing.T) {
	host := realDir(t)
	os.Chmod(host, 0o755)
	mkdir(t, filepath.Join(host, "sub"))
	writeFile(t, filepath.Join(host, "f"), "x", 0o644)
	for _, c := range []struct{ name, path, want string }{
		{"dir", filepath.Join(host, "sub"), "ok 0"},
		{"file", filepath.Join(host, "f"), "ok 0"},
		{"missing", filepath.Join(host, "new"), "errno=ENOENT"},
		{"missing-slash", filepath.Join(host, "new") + "/", "errno=ENOENT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if bare := runFsopsBare(t, nil, "open-path-write", c.path); bare != c.want {
				t.Fatalf("bare run saw %q, want %q", bare, c.want)
			}
			f := runFsops(t, nil, realDir(t), nil, "open-path-write", c.path)
			if f.result != c.want {
				t.Errorf("tree saw %q, want %q\nstderr:\n%s", f.result, c.want, f.r.stderr)
			}
			if len(f.r.report.Denials) != 0 {
				t.Errorf("denials for an O_PATH open:\n%s", f.r.report.denialList())
			}
			if b, err := os.ReadFile(filepath.Join(host, "f")); err != nil || string(b) != "x" {
				t.Errorf("ESCAPED: %s changed: %q %v", filepath.Join(host, "f"), b, err)
			}
			if _, err := os.Stat(filepath.Join(host, "new")); err == nil {
				t.Errorf("ESCAPED: %s was created", filepath.Join(host, "new"))
			}
		})
	}
}

// sysOf is the syscall of the run's first denial ("" when none).
func (f fsRun) sysOf() string {
	if len(f.r.report.Denials) == 0 {
		return ""
	}
	return f.r.report.Denials[0].Syscall
}

// TestFsopsSharedMemory: multiprocessing.shared_memory create, attach,
// unlink, and an unlink of a name that is gone (what its resource tracker
// does at exit) work under tracecell as bare: no denials.
func TestFsopsSharedMemory(t *testing.T) {
	sbx := realDir(t)
	env := runEnv(t, sbx)
	r := runTraced(t, sbx, env, []string{"--allow-exec", python}, python, pyScript("shm.py"))
	if r.status != 0 || !strings.Contains(r.stdout, "done") {
		t.Errorf("status %d, stdout %q\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	if len(r.report.Denials) != 0 {
		t.Errorf("denials:\n%s", r.report.denialList())
	}
	bare := runBare(t, sbx, env, python, pyScript("shm.py"))
	if bare.stdout != r.stdout {
		t.Errorf("bare stdout %q, traced %q", bare.stdout, r.stdout)
	}
}

// TestFsopsDenyReadMetadata: extended attributes and inotify watches of a
// deny-read path are reads of it.
func TestFsopsDenyReadMetadata(t *testing.T) {
	host := realDir(t)
	secret := filepath.Join(host, "secret")
	mkdir(t, secret)
	file := filepath.Join(secret, "key")
	writeFile(t, file, "k", 0o644)
	if err := unix.Setxattr(file, "user.secret", []byte("hunter2"), 0); err != nil {
		t.Skipf("no user xattrs on %s: %v", host, err)
	}
	for _, c := range []struct{ cs, sys, path string }{
		{"getxattr", "getxattr", file},
		{"listxattr", "listxattr", file},
		{"inotify", "inotify_add_watch", secret},
	} {
		t.Run(c.cs, func(t *testing.T) {
			sbx := realDir(t)
			if bare := runFsopsBare(t, nil, c.cs, c.path); !strings.HasPrefix(bare, "ok") {
				t.Fatalf("bare %s: %q: the case tests nothing", c.cs, bare)
			}
			f := runFsops(t, nil, sbx, []string{"--deny-read", secret}, c.cs, c.path)
			if f.result != "errno=EACCES" {
				t.Errorf("ESCAPED: tree saw %q, want errno=EACCES", f.result)
			}
			if e, ok := f.denial(c.sys, "deny-read"); !ok || !e.hasResolved(c.path) {
				t.Errorf("no deny-read denial of %s naming %s; denials:\n%s", c.sys, c.path, f.r.report.denialList())
			}
			// Outside the deny-read tree it works.
			writeFile(t, filepath.Join(sbx, "k"), "k", 0o644)
			unix.Setxattr(filepath.Join(sbx, "k"), "user.secret", []byte("x"), 0)
			p := filepath.Join(sbx, "k")
			if c.cs == "inotify" {
				p = sbx
			}
			if g := runFsops(t, nil, sbx, []string{"--deny-read", secret}, c.cs, p); !strings.HasPrefix(g.result, "ok") {
				t.Errorf("%s of a sandbox path: %q\nstderr:\n%s", c.cs, g.result, g.r.stderr)
			}
		})
	}
}

// TestFsopsReadPrefix: --read keeps what an interpreter's prefix holds for
// it readable, not the whole directory two levels above the program: for
// a program in a home directory that was /home, every user's ~/.ssh.
func TestFsopsReadPrefix(t *testing.T) {
	top := realDir(t) // stands for /home
	mkdir(t, filepath.Join(top, "u"))
	mkdir(t, filepath.Join(top, "v", ".ssh"))
	secret := filepath.Join(top, "v", ".ssh", "id_rsa")
	writeFile(t, secret, "PRIVATE KEY", 0o644)
	tool := filepath.Join(top, "u", "tool")
	b, err := os.ReadFile(fsops(t))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, tool, string(b), 0o755)
	sbx := realDir(t)
	rp := filepath.Join(t.TempDir(), "report.json")
	r := execute(t, "", os.Environ(), []string{tcBin, "run", "--write", sbx, "--read", sbx, "--report", rp, "--", tool, "read", secret})
	if res := resultOf(r.stdout); res != "errno=EACCES" {
		t.Errorf("ESCAPED: a program in %s read %s under --read %s: %q\nstderr:\n%s", filepath.Dir(tool), secret, sbx, res, r.stderr)
	}
	if !strings.Contains(r.stderr, "read-not-allowed") && !strings.Contains(r.stderr, "outside readable roots") {
		t.Errorf("no read-not-allowed notice:\n%s", r.stderr)
	}
}

// TestFsopsFutexRace: another thread flips the checked address between the
// tree's anonymous memory and a read-only mapping of the host's semaphore
// while the tree requeues from it. The check runs with the thread stopped
// (freeze), so no requeue reaches the host's waiter. The --no-freeze run
// shows that the attack can win when the mapping may change between check
// and use (logged, not required: it is a race).
func TestFsopsFutexRace(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
	}{{"frozen", nil}, {"no-freeze", []string{"--no-freeze"}}} {
		t.Run(c.name, func(t *testing.T) {
			w := startWaiter(t)
			f := runFsops(t, nil, realDir(t), c.flags, "futex-race", w.file, "1500")
			woken, why := w.postAndWoken(t)
			if c.flags != nil {
				t.Logf("without the freeze: %s; host waiter woken %v (%s)", f.result, woken, why)
				return
			}
			if !woken {
				t.Errorf("ESCAPED: the host's waiter was moved (%s); tree: %s", why, f.result)
			}
			if !strings.Contains(f.result, "denied=") || strings.Contains(f.result, "denied=0") {
				t.Errorf("tree %q: the race never met the read-only mapping", f.result)
			}
		})
	}
}

// restartTree starts fsops futex-restart on the host's semaphore file
// (prefix: tracecell run ... --, or nothing for the bare run) and waits
// until it calls restart_syscall. finish waits for its end.
func restartTree(t *testing.T, file string, prefix []string) (finish func() (string, string)) {
	t.Helper()
	argv := append(append([]string{}, prefix...), fsops(t), "futex-restart", file)
	cmd := exec.Command(argv[0], argv[1:]...)
	var se strings.Builder
	cmd.Stderr = &se
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "restarting" {
		t.Fatalf("tree did not reach its restart: %q\nstderr:\n%s", sc.Text(), se.String())
	}
	return func() (string, string) {
		var last string
		for sc.Scan() {
			last = sc.Text()
		}
		cmd.Process.Kill()
		cmd.Wait()
		return strings.TrimPrefix(last, "result: "), se.String()
	}
}

// TestFsopsFutexRestart: a timed shared wait on the tree's own word,
// interrupted by a signal whose handler maps the host's semaphore over the
// word and calls restart_syscall, must not queue on the host's futex (it
// would take the wake-up of the host's waiter, queued after it).
func TestFsopsFutexRestart(t *testing.T) {
	for _, traced := range []bool{true, false} {
		t.Run(map[bool]string{true: "traced", false: "bare"}[traced], func(t *testing.T) {
			name := newSem(t)
			file := "/dev/shm/sem." + name[1:]
			if out, err := exec.Command(fsops(t), "semcreate", name).CombinedOutput(); err != nil {
				t.Fatalf("semcreate: %v\n%s", err, out)
			}
			if err := os.Chmod(file, 0o644); err != nil {
				t.Fatal(err)
			}
			var prefix []string
			rp := filepath.Join(t.TempDir(), "report.json")
			if traced {
				prefix = []string{tcBin, "run", "--write", realDir(t), "--report", rp, "--"}
			}
			finish := restartTree(t, file, prefix)
			time.Sleep(300 * time.Millisecond) // queued on the host's futex, if it got there
			w := waiterOn(t, name)
			woken, why := w.postAndWoken(t)
			res, stderr := finish()
			if !traced {
				if woken {
					t.Fatalf("bare: the host waiter woke (%s): the ground truth cannot fail (tree %q)", why, res)
				}
				return
			}
			if !woken {
				t.Errorf("ESCAPED: the tree took the host's wake-up (%s); tree %q\nstderr:\n%s", why, res, stderr)
			}
			if res != "errno=EPERM" {
				t.Errorf("tree saw %q, want errno=EPERM\nstderr:\n%s", res, stderr)
			}
			b, err := os.ReadFile(rp)
			if err != nil {
				t.Fatal(err)
			}
			rep := &reportDoc{}
			if err := json.Unmarshal(b, rep); err != nil {
				t.Fatal(err)
			}
			if (fsRun{r: result{report: rep}}).sysOf() != "restart_syscall" || rep.Denials[0].Rule != "futex-memory" || !rep.Denials[0].hasResolved(file) {
				t.Errorf("no futex-memory denial of restart_syscall naming %s; denials:\n%s", file, rep.denialList())
			}
		})
	}
}

// TestFsopsFutexRestartBenign: once a handler has returned (rt_sigreturn
// drops the kernel's saved restart), a later restart_syscall is another
// call's (a sleep stopped and continued) and passes, even where the old
// wait's address now holds a read-only mapping of a host file.
func TestFsopsFutexRestartBenign(t *testing.T) {
	name := newSem(t)
	file := "/dev/shm/sem." + name[1:]
	if out, err := exec.Command(fsops(t), "semcreate", name).CombinedOutput(); err != nil {
		t.Fatalf("semcreate: %v\n%s", err, out)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	f := runFsops(t, nil, realDir(t), nil, "futex-restart-benign", file)
	if f.result != "ok 0" || len(f.r.report.Denials) != 0 {
		t.Errorf("nanosleep after a handled interrupt: %q, denials:\n%s\nstderr:\n%s", f.result, f.r.report.denialList(), f.r.stderr)
	}
}
