package integration

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pipeReopenProg tries, from the tree, every /proc form of reopening for
// writing a pipe it holds read-only: the stdin pipe of a host process,
// opened read-only through /proc/<hostpid>/fd/0 (read-only opens are not
// checked), then reopened O_WRONLY through its own fd, and its times set
// through that fd (futimens). Once from a single thread and once with a
// second thread alive (the tree's calls then run frozen). It prints one
// line per attempt: "<single|threaded> <form> <errno or ok>".
const pipeReopenProg = `
import errno, os, sys, threading
host = int(sys.argv[1])
if len(sys.argv) > 2:
    # A root tree becomes the host process's user (it keeps CAP_SETUID).
    u = int(sys.argv[2])
    os.setgroups([])
    os.setresgid(u, u, u)
    os.setresuid(u, u, u)
def attempt(tag):
    r = os.open("/proc/%d/fd/0" % host, os.O_RDONLY | os.O_NONBLOCK)
    forms = {
        "self": "/proc/self/fd/%d" % r,
        "pid": "/proc/%d/fd/%d" % (os.getpid(), r),
        "task": "/proc/%d/task/%d/fd/%d" % (os.getpid(), threading.get_native_id(), r),
        "thread-self": "/proc/thread-self/fd/%d" % r,
        "devfd": "/dev/fd/%d" % r,
    }
    for name, p in forms.items():
        try:
            w = os.open(p, os.O_WRONLY)
        except OSError as e:
            print(tag, name, errno.errorcode.get(e.errno, e.errno))
            continue
        os.write(w, b"INJECTED-BY-TREE\n")
        os.close(w)
        print(tag, name, "ok")
    # Setting the pipe's times through the read-only fd (futimens) is
    # a write of the object as well.
    try:
        os.utime(r)
        print(tag, "futimens ok")
    except OSError as e:
        print(tag, "futimens", errno.errorcode.get(e.errno, e.errno))
    os.close(r)
attempt("single")
stop = threading.Event()
t = threading.Thread(target=stop.wait)
t.start()
try:
    attempt("threaded")
finally:
    stop.set()
    t.join()
`

// TestPipeReopenHostPipe: a tree must not write into a host process's pipe
// by opening it read-only through /proc/<hostpid>/fd/0 and reopening its
// own /proc/self/fd/N (or /dev/fd/N, task/<tid>/fd/N, thread-self) for
// writing. A red team made a host `cat` print its bytes this way, and a
// host `sleep 3 | sh` run its commands (F1). Ground truth outside the tree:
// what the host cat, reading that pipe, writes to its output file.
//
// The host cat runs as the tree's user: as the test's user when that is
// not root; when it is root, as nobody, with tracecell run as nobody too
// and as root with a tree that drops to nobody (a root tree lacks the
// capabilities of a root cat, and the kernel would refuse it the read-only
// open of its fd already).
func TestPipeReopenHostPipe(t *testing.T) {
	type variant struct {
		prefix  []string // how tracecell is started
		host    []string // how the host pipeline is started
		treeArg []string // extra program arguments (the uid to drop to)
		flags   []string // extra tracecell flags
	}
	variants := map[string]variant{"self": {}}
	if isRoot {
		nb := nobodyCmd(t)
		variants = map[string]variant{
			"nobody": {nb, nb, nil, nil},
			// A root tree keeps setuid only when asked (caps.DefaultKeep).
			"root-setuid": {nil, nb, []string{"65534"}, []string{"--keep-cap", "setuid", "--keep-cap", "setgid"}},
		}
	}
	for name, v := range variants {
		t.Run(name, func(t *testing.T) {
			testPipeReopenHostPipe(t, v.prefix, v.host, v.treeArg, v.flags)
		})
	}
}

// hostPipe is a host pipeline `producer | cat > OUT` started by the test,
// outside tracecell, by a host process of the tree's user (a pipe's inode
// is its creator's, mode 0600, and a reopen through /proc checks it). The
// producer writes HOST-LINE once the test says so (finish); the consumer
// writes its pid and becomes cat.
type hostPipe struct {
	pid  string // cat's
	out  string // cat's output file
	cmd  *exec.Cmd
	in   io.WriteCloser
	done bool
}

func startHostPipe(t *testing.T, prefix []string) *hostPipe {
	t.Helper()
	hd := openWorldDir(t)
	h := &hostPipe{out: filepath.Join(hd, "cat.out")}
	pidf := filepath.Join(hd, "cat.pid")
	script := `(read x; echo HOST-LINE) | sh -c 'echo $$ > "$PIDF"; exec cat > "$OUT"'`
	argv := append(append([]string{}, prefix...), "/bin/sh", "-c", script)
	h.cmd = exec.Command(argv[0], argv[1:]...)
	h.cmd.Env = append(os.Environ(), "PIDF="+pidf, "OUT="+h.out)
	var err error
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !h.done {
			h.in.Close()
			h.cmd.Wait()
		}
	})
	for i := 0; i < 500 && h.pid == ""; i++ {
		if b, err := os.ReadFile(pidf); err == nil && strings.HasSuffix(string(b), "\n") {
			h.pid = strings.TrimSpace(string(b))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.pid == "" {
		t.Fatal("the host pipeline wrote no pid")
	}
	// The consumer has exec'd cat once its /proc/<pid>/exe is cat's.
	for i := 0; i < 500; i++ {
		if exe, _ := os.Readlink("/proc/" + h.pid + "/exe"); strings.HasSuffix(exe, "/cat") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return h
}

// finish lets the producer write its line and end, waits for the pipeline
// and returns what cat wrote.
func (h *hostPipe) finish(t *testing.T) string {
	t.Helper()
	h.in.Write([]byte("\n"))
	h.in.Close()
	waitErr := make(chan error, 1)
	go func() { waitErr <- h.cmd.Wait() }()
	select {
	case err := <-waitErr:
		h.done = true
		if err != nil {
			t.Fatalf("host pipeline: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("host pipeline did not finish")
	}
	got, err := os.ReadFile(h.out)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// runTracedAs runs tracecell (started through prefix, e.g. as nobody)
// with sbx writable and reads its report back from a directory anyone
// may write.
func runTracedAs(t *testing.T, prefix []string, sbx string, flags []string, argv ...string) result {
	t.Helper()
	rp := filepath.Join(openWorldDir(t), "report.json")
	args := append(append([]string{}, prefix...), tcBin, "run", "--quiet", "--write", sbx, "--report", rp)
	args = append(append(append(args, flags...), "--"), argv...)
	r := execute(t, "", os.Environ(), args)
	r.report = readReport(t, rp, r)
	return r
}

func testPipeReopenHostPipe(t *testing.T, prefix, hostPrefix []string, treeArg, flags []string) {
	sbx := openWorldDir(t)
	h := startHostPipe(t, hostPrefix)
	r := runTracedAs(t, prefix, sbx, flags, append([]string{python, "-c", pipeReopenProg, h.pid}, treeArg...)...)
	got := h.finish(t)
	if strings.Contains(got, "INJECTED") {
		t.Errorf("ESCAPED: the tree wrote into the host process's pipe: the host cat wrote\n%s\ntree output:\n%s", got, r.stdout)
	}
	if got != "HOST-LINE\n" {
		t.Errorf("host cat wrote %q, want only its own line", got)
	}

	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 12 {
		t.Fatalf("tree printed %d lines, want 12 (5 forms and futimens, twice); status %d\nstdout:\n%s\nstderr:\n%s\ndenials:\n%s", len(lines), r.status, r.stdout, r.stderr, r.report.denialList())
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, " EACCES") {
			t.Errorf("reopen for writing %q, want EACCES", l)
		}
	}

	// Every attempt is reported: proc-write, EACCES, naming the pipe,
	// the fd and the tree's own pid.
	n := 0
	for _, e := range r.report.Denials {
		if e.Rule != "proc-write" {
			t.Errorf("unexpected denial: %v", e)
			continue
		}
		if (e.Syscall != "openat" && e.Syscall != "utimensat") || e.Errno != "EACCES" || e.Kind != "write" || len(e.Paths) == 0 ||
			!strings.HasPrefix(e.Paths[0].Special, "pipe:[") ||
			!strings.Contains(e.Reason, e.Paths[0].Special+" (fd ") || !strings.Contains(e.Reason, "not open for writing") {
			t.Errorf("denial does not name the read-only pipe: %v", e)
			continue
		}
		n++
	}
	if n != 12 {
		t.Errorf("%d proc-write denials reported, want 12:\n%s", n, r.report.denialList())
	}
}

// pipeReopenOwnProg reopens for writing what the tree holds open for
// writing: its stdout (a pipe), through /proc/self/fd/1 and /dev/stdout,
// and the write end of a pipe of its own (allowed); then the read end of
// that pipe (denied). With a second thread alive, so the opens run frozen.
const pipeReopenOwnProg = `
import errno, os, threading
stop = threading.Event()
t = threading.Thread(target=stop.wait)
t.start()
try:
    w = os.open("/proc/self/fd/1", os.O_WRONLY)
    os.write(w, b"via-proc-self-fd-1\n")
    os.close(w)
    with open("/dev/stdout", "w") as f:
        f.write("via-dev-stdout\n")
    rfd, wfd = os.pipe()
    w = os.open("/proc/self/fd/%d" % wfd, os.O_WRONLY)
    os.write(w, b"own-pipe")
    os.close(w)
    print("own write end:", os.read(rfd, 100).decode())
    try:
        os.open("/proc/self/fd/%d" % rfd, os.O_WRONLY)
        print("own read end: ok")
    except OSError as e:
        print("own read end:", errno.errorcode.get(e.errno, e.errno))
finally:
    stop.set()
    t.join()
`

// TestPipeReopenOwnWriteEnd: what the tree holds open for writing it may
// reopen for writing (/dev/stdout when stdout is a pipe, a pipe's write
// end); a read end it may not.
func TestPipeReopenOwnWriteEnd(t *testing.T) {
	sbx := realDir(t)
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--quiet"}, python, "-c", pipeReopenOwnProg)
	if r.status != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	for _, want := range []string{"via-proc-self-fd-1\n", "via-dev-stdout\n", "own write end: own-pipe\n", "own read end: EACCES\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if len(r.report.Denials) != 1 {
		t.Fatalf("%d denials, want 1 (the read end):\n%s", len(r.report.Denials), r.report.denialList())
	}
	if e := r.report.Denials[0]; e.Rule != "proc-write" || e.Errno != "EACCES" || len(e.Paths) == 0 ||
		!strings.HasPrefix(e.Paths[0].Special, "pipe:[") || !strings.Contains(e.Reason, "not open for writing") {
		t.Errorf("denial of the read end: %v", e)
	}
}

// TestPipeReopenRace: the fd a reopen names may change under the check.
// One thread flips fd 100 with dup2 (not checked) between the write end of
// the tree's own pipe and a host process's pipe opened read-only, while
// another reopens /proc/self/fd/100 for writing (testdata/escapes/
// pipereopen.c). Such an open walks /proc, so it is never run on a path
// page copy but with every other task of the tree stopped (uncopyable,
// tracer/pathpage.go): the fd the tracer read the mode of is the fd the
// kernel reopens. Ground truth: what the host cat wrote.
func TestPipeReopenRace(t *testing.T) {
	bin := cProgram(t, "TRACECELL_PIPEREOPEN_BIN", "escapes/pipereopen.c", "-pthread")
	var prefix []string
	if isRoot {
		prefix = nobodyCmd(t) // a root tree could not open a root cat's fd
	}
	sbx := openWorldDir(t)
	h := startHostPipe(t, prefix)
	r := runTracedAs(t, prefix, sbx, nil, bin, h.pid, "1500")
	got := h.finish(t)
	if strings.Contains(got, "INJECTED") {
		t.Errorf("ESCAPED: the tree wrote into the host process's pipe (%d bytes)\ntree: %s", len(got), r.stdout)
	}
	var own, host, denied, other int
	if _, err := fmt.Sscanf(resultOf(r.stdout), "pipereopen own=%d host=%d denied=%d other=%d", &own, &host, &denied, &other); err != nil {
		t.Fatalf("no result (status %d): %v\nstdout:\n%s\nstderr:\n%s", r.status, err, r.stdout, r.stderr)
	}
	t.Logf("own=%d host=%d denied=%d other=%d", own, host, denied, other)
	if host != 0 {
		t.Errorf("ESCAPED: %d reopens got the host's pipe", host)
	}
	if own == 0 || denied == 0 {
		t.Errorf("the race did not run both ways (own=%d denied=%d): the test proves nothing", own, denied)
	}
	if len(r.report.Denials) == 0 {
		t.Error("no denial reported")
	}
	for _, e := range r.report.Denials {
		if e.Rule != "proc-write" || e.Syscall != "openat" || e.Errno != "EACCES" {
			t.Errorf("unexpected denial: %v", e)
			break
		}
	}
}
