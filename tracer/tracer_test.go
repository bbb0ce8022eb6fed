package tracer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// The command is forked from the tracer thread (fork_unsafe_linux.go): no
// helper binary is needed.

const python = "/usr/bin/python3"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not installed (make test installs it)", python)
	}
}

type runOut struct {
	res    *Result
	err    error
	stdout string
	stderr string
	events []report.Event
}

func runTraced(t *testing.T, sbx string, cfgMod func(*policy.Config, *Config), argv ...string) runOut {
	t.Helper()
	real, err := filepath.EvalSymlinks(sbx)
	if err != nil {
		t.Fatal(err)
	}
	pc := policy.Config{WriteRoots: []string{real}, Devices: policy.DefaultDevices(), Scratch: []string{}}
	var out, errb bytes.Buffer
	var events []report.Event
	cfg := &Config{
		Path: argv[0], Argv: argv, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + real}, Dir: real,
		Stdout: &out, Stderr: &errb, Log: zerolog.Nop(),
		OnEvent: func(e *report.Event) { events = append(events, *e) },
	}
	if cfgMod != nil {
		cfgMod(&pc, cfg)
	}
	pol, err := policy.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy = pol
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, cfg)
	return runOut{res, err, out.String(), errb.String(), events}
}

func TestRunTrue(t *testing.T) {
	o := runTraced(t, t.TempDir(), nil, "/bin/true")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.ExitCode != 0 || o.res.Signal != 0 {
		t.Fatalf("exit %d signal %v", o.res.ExitCode, o.res.Signal)
	}
	if o.res.Counts.Execs != 1 {
		t.Errorf("execs = %d, want 1", o.res.Counts.Execs)
	}
}

// TestOnRunning: the hook runs once, on the tracer thread, once the
// command's own program is loaded (its exe is the command's, not
// tracecell's start code), and not at all when the command never starts.
func TestOnRunning(t *testing.T) {
	needPython(t)
	want, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Fatal(err)
	}
	var calls, pid, startTid, runTid int
	var exe string
	o := runTraced(t, t.TempDir(), func(_ *policy.Config, c *Config) {
		c.OnStart = func(p int) { pid, startTid = p, unix.Gettid() }
		c.OnRunning = func() {
			calls++
			runTid = unix.Gettid()
			exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		}
	}, python, "-c", "import time; time.sleep(0.2)")
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("run: %v %+v %s", o.err, o.res, o.stderr)
	}
	if calls != 1 || runTid != startTid || exe != want {
		t.Fatalf("OnRunning: %d calls on thread %d (OnStart's %d), the command's exe %q; want 1 call on OnStart's thread, exe %q", calls, runTid, startTid, exe, want)
	}
	calls = 0
	o = runTraced(t, t.TempDir(), func(_ *policy.Config, c *Config) {
		c.OnRunning = func() { calls++ }
	}, "/nonexistent/prog")
	if calls != 0 {
		t.Fatalf("OnRunning called %d times for a command that never started (%v)", calls, o.err)
	}
}

func TestExitStatusAndSignal(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		code int
		sig  syscall.Signal
	}{
		{"exit3", []string{"/bin/sh", "-c", "exit 3"}, 3, 0},
		{"kill9", []string{"/bin/sh", "-c", "kill -9 $$"}, -1, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runTraced(t, t.TempDir(), nil, tc.argv...)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.res.ExitCode != tc.code || o.res.Signal != tc.sig {
				t.Fatalf("exit %d signal %v, want %d %v", o.res.ExitCode, o.res.Signal, tc.code, tc.sig)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	o := runTraced(t, t.TempDir(), nil, "/nonexistent/prog")
	var se *StartError
	if !errors.As(o.err, &se) || se.Status != 127 {
		t.Fatalf("err = %v, want StartError 127", o.err)
	}
}

func TestWriteOutsideDenied(t *testing.T) {
	needPython(t)
	sbx, host := t.TempDir(), t.TempDir()
	victim := filepath.Join(host, "victim.txt")
	os.WriteFile(victim, []byte("orig"), 0o644)
	script := `
import os, sys
try:
    open(sys.argv[1], "a").write("x")
    print("wrote")
except PermissionError as e:
    print("denied", e.errno)
open("inside.txt", "w").write("ok")
print(open("inside.txt").read())
`
	o := runTraced(t, sbx, nil, python, "-c", script, victim)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if got := o.stdout; got != "denied 13\nok\n" {
		t.Fatalf("stdout %q, stderr %q", got, o.stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "orig" {
		t.Fatalf("victim changed: %q", b)
	}
	if len(o.res.Denials) != 1 {
		t.Fatalf("denials = %+v", o.res.Denials)
	}
	d := o.res.Denials[0]
	if d.Paths[0].Resolved != victim || d.Kind.String() != "write" || d.Errno != "EACCES" {
		t.Errorf("denial = %+v", d)
	}
	if !strings.Contains(d.Notice(), victim) {
		t.Errorf("notice %q does not name %s", d.Notice(), victim)
	}
}

func TestAuditAllows(t *testing.T) {
	needPython(t)
	sbx, host := t.TempDir(), t.TempDir()
	victim := filepath.Join(host, "new.txt")
	o := runTraced(t, sbx, func(pc *policy.Config, _ *Config) { pc.Mode = policy.Audit },
		python, "-c", "import sys; open(sys.argv[1], 'w').write('a')", victim)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("audit mode blocked the write: %v", err)
	}
	if o.res.Counts.Audited != 1 || len(o.res.Denials) != 1 || o.res.Denials[0].Decision != report.Audit {
		t.Fatalf("counts %+v denials %+v", o.res.Counts, o.res.Denials)
	}
}

func TestExecDeniedAndTreeKilled(t *testing.T) {
	needPython(t)
	sbx := t.TempDir()
	script := `
import subprocess, os, time
try:
    subprocess.run(["/bin/echo", "hi"])
    print("ran")
except PermissionError:
    print("denied")
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
print("parent done")
`
	start := time.Now()
	o := runTraced(t, sbx, nil, python, "-c", script)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.stdout != "denied\nparent done\n" {
		t.Fatalf("stdout %q stderr %q", o.stdout, o.stderr)
	}
	if o.res.Counts.KilledAtExit != 1 {
		t.Errorf("killed at exit = %d, want 1", o.res.Counts.KilledAtExit)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("the sleeping child was not killed with the main program")
	}
	found := false
	for _, d := range o.res.Denials {
		if d.Kind.String() == "exec" && len(d.Paths) > 0 && (d.Paths[0].Resolved == "/usr/bin/echo" || d.Paths[0].Resolved == "/bin/echo") {
			found = true
		}
	}
	if !found {
		t.Errorf("no exec denial naming /bin/echo: %+v", o.res.Denials)
	}
}

func TestTimeoutKillsTree(t *testing.T) {
	o := runTraced(t, t.TempDir(), func(_ *policy.Config, c *Config) { c.Timeout = 500 * time.Millisecond },
		"/bin/sh", "-c", "( while :; do :; done ) & while :; do :; done")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !o.res.TimedOut || o.res.Signal != syscall.SIGKILL {
		t.Fatalf("timed out %v signal %v", o.res.TimedOut, o.res.Signal)
	}
}

// Signalling a tree process that exited but is not reaped yet (what
// multiprocessing does when it terminates a pool) is allowed, and a pid
// that does not exist gets ESRCH, not a denial.
func TestSignalZombieAndGone(t *testing.T) {
	needPython(t)
	script := `
import os, time, signal
pid = os.fork()
if pid == 0:
    os._exit(0)
time.sleep(0.3)
os.kill(pid, signal.SIGTERM)
print("zombie ok")
os.waitpid(pid, 0)
try:
    os.kill(pid, signal.SIGTERM)
except ProcessLookupError:
    print("gone ESRCH")
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.stdout != "zombie ok\ngone ESRCH\n" || len(o.res.Denials) != 0 {
		t.Fatalf("stdout %q stderr %q denials %+v", o.stdout, o.stderr, o.res.Denials)
	}
}

// TestExtraFiles: Config.ExtraFiles reach the command at fd 3, 4, ... and
// nothing of the tracer's own (the start error pipe) leaks past them, nor
// a file tracecell itself inherited without close-on-exec (a write through
// an inherited fd would never be checked).
func TestExtraFiles(t *testing.T) {
	needPython(t)
	outside := filepath.Join(t.TempDir(), "host-file")
	leak, err := syscall.Open(outside, syscall.O_WRONLY|syscall.O_CREAT, 0o600) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leak)
	for _, n := range []int{1, 2, 3} {
		t.Run(strings.Repeat("f", n), func(t *testing.T) {
			var readers []*os.File
			var writers []*os.File
			for i := 0; i < n; i++ {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				readers = append(readers, r)
				writers = append(writers, w)
			}
			// Each fd 3..3+n-1 gets its own number; then list the open fds.
			script := "import os\n"
			for i := 0; i < n; i++ {
				script += "os.write(" + string(rune('3'+i)) + ", b'fd" + string(rune('3'+i)) + "\\n')\n"
			}
			script += "print(' '.join(sorted(os.listdir('/proc/self/fd'))))"
			o := runTraced(t, t.TempDir(), func(_ *policy.Config, c *Config) { c.ExtraFiles = writers },
				python, "-S", "-c", script)
			for _, w := range writers {
				w.Close()
			}
			if o.err != nil || o.res.ExitCode != 0 {
				t.Fatalf("err %v res %+v stderr %s", o.err, o.res, o.stderr)
			}
			for i, r := range readers {
				b := make([]byte, 64)
				k, _ := r.Read(b)
				if want := "fd" + string(rune('3'+i)) + "\n"; string(b[:k]) != want {
					t.Errorf("fd %d carried %q, want %q", 3+i, b[:k], want)
				}
				r.Close()
			}
			// listdir's own directory fd is the one past ours; nothing else.
			fds := strings.Fields(o.stdout)
			if len(fds) != 3+n+1 {
				t.Errorf("open fds in the command: %v, want 0..%d plus listdir's own", fds, 2+n)
			}
		})
	}
}

// TestInitialChain: a "#!/usr/bin/env python3" script starts when python3 is
// its start chain; without the chain env's exec is denied; the chain is
// one exec, not a standing permission.
func TestInitialChain(t *testing.T) {
	needPython(t)
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Fatal(err)
	}
	sbx := t.TempDir()
	script := filepath.Join(sbx, "s.py")
	body := "#!/usr/bin/env python3\nimport subprocess\nprint('started')\n" +
		"try:\n    subprocess.run(['" + python + "', '-c', 'pass'])\n    print('second exec ran')\n" +
		"except PermissionError:\n    print('second exec denied')\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		chain []string
		want  string
	}{
		{"with-chain", []string{real}, "started\nsecond exec denied\n"},
		{"without-chain", nil, ""},
		{"other-chain", []string{"/usr/bin/perl"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runTraced(t, sbx, func(_ *policy.Config, c *Config) { c.InitialChain = tc.chain }, script)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.stdout != tc.want {
				t.Errorf("stdout %q, want %q (stderr %q)", o.stdout, tc.want, o.stderr)
			}
			if tc.want == "" && o.res.ExitCode == 0 {
				t.Errorf("the script started without its chain: exit 0")
			}
			denied := 0
			for _, e := range o.events {
				if e.Decision == report.Deny && e.Syscall == "execve" {
					denied++
				}
			}
			if denied == 0 {
				t.Errorf("no exec denial recorded: %+v", o.events)
			}
		})
	}
}

// TestNoForcedSSBD: the tree runs with the same Speculative Store Bypass
// state as the same program run bare. On kernels whose default is
// spec_store_bypass_disable=seccomp (before 5.16, RHEL 8) a filter loaded
// without SECCOMP_FILTER_FLAG_SPEC_ALLOW forces the mitigation on
// ("thread force mitigated") and slows every traced program down.
func TestNoForcedSSBD(t *testing.T) {
	needPython(t)
	code := "print([l.split(':',1)[1].strip() for l in open('/proc/self/status') if l.startswith('Speculation_Store_Bypass')])"
	bare, err := exec.Command(python, "-S", "-c", code).Output()
	if err != nil {
		t.Fatal(err)
	}
	o := runTraced(t, t.TempDir(), nil, python, "-S", "-c", code)
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("err %v res %+v stderr %s", o.err, o.res, o.stderr)
	}
	if o.stdout != string(bare) {
		t.Errorf("traced: %s bare: %s", strings.TrimSpace(o.stdout), strings.TrimSpace(string(bare)))
	}
}

// A path the tracer cannot resolve is denied (fail closed) and reported
// as such; in audit mode it is let through and reported as an audit. A
// call the kernel would fail anyway (a missing directory) is counted as
// failed, not as a denial.
func TestUnresolvableAndFailedCalls(t *testing.T) {
	orig := resolvePath
	t.Cleanup(func() { resolvePath = orig })
	resolvePath = func(tk pathres.Task, base string, p string, follow bool, c *pathres.DirCache) (pathres.Result, error) {
		if strings.Contains(p, "unresolvable") {
			return pathres.Result{}, errors.New("injected resolver failure")
		}
		return orig(tk, base, p, follow, c)
	}
	for _, tc := range []struct {
		name   string
		audit  bool
		exists bool
		dec    string
		script string
	}{
		{"enforce", false, false, report.Deny, ""},
		{"audit", true, true, report.Audit, ""},
		// Two tasks (a forked subshell counting): the call is checked under
		// a freeze, and the tree goes on after the denial.
		{"enforce-frozen", false, false, report.Deny, "( i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done ) & "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbx := t.TempDir()
			o := runTraced(t, sbx, func(pc *policy.Config, _ *Config) {
				if tc.audit {
					pc.Mode = policy.Audit
				}
			}, "/bin/sh", "-c", tc.script+"echo x > unresolvable.txt; echo x > missing-dir/f.txt; wait")
			if o.err != nil {
				t.Fatal(o.err)
			}
			if _, err := os.Stat(filepath.Join(sbx, "unresolvable.txt")); (err == nil) != tc.exists {
				t.Errorf("unresolvable.txt exists = %v, want %v", err == nil, tc.exists)
			}
			var got []report.Event
			for _, e := range o.events {
				if e.Rule == "unresolvable-path" {
					got = append(got, e)
				}
			}
			if len(got) != 1 {
				t.Fatalf("unresolvable-path events = %+v (all: %+v)", got, o.events)
			}
			e := got[0]
			if e.Decision != tc.dec || e.Kind.String() != "write" || len(e.Paths) != 1 ||
				e.Paths[0].Given != "unresolvable.txt" || !strings.Contains(e.Reason, "injected resolver failure") {
				t.Errorf("event = %+v", e)
			}
			if (e.Errno == "") != tc.audit {
				t.Errorf("errno %q in %s mode", e.Errno, tc.name)
			}
			if o.res.Counts.Failed < 1 {
				t.Errorf("counts.failed = %d, want >= 1 (the missing directory)", o.res.Counts.Failed)
			}
			for _, e := range o.events {
				for _, p := range e.Paths {
					if strings.Contains(p.Given, "missing-dir") {
						t.Errorf("a call the kernel fails by itself was reported: %+v", e)
					}
				}
			}
		})
	}
}

// fcntl(F_SETDELEG) (Linux 6.19) is denied and reported as a forbidden
// call on every kernel; other commands pass untouched.
func TestFcntlSetDelegDenied(t *testing.T) {
	needPython(t)
	script := `
import fcntl, os
fd = os.open(".", os.O_RDONLY)
try:
    fcntl.fcntl(fd, 1040, 0)
    print("allowed")
except OSError as e:
    print("errno", e.errno)
print("getfl", fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE)
`
	o := runTraced(t, t.TempDir(), nil, python, "-c", script)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.stdout != "errno 1\ngetfl 0\n" {
		t.Fatalf("stdout %q stderr %q", o.stdout, o.stderr)
	}
	if len(o.res.Denials) != 1 || o.res.Denials[0].Kind.String() != "forbidden-syscall" ||
		o.res.Denials[0].Flags != "F_SETDELEG" || o.res.Denials[0].Errno != "EPERM" {
		t.Fatalf("denials %+v", o.res.Denials)
	}
}

// fcntl(F_SETLEASE): a lease on a file of the sandbox is taken and given
// up as bare; one on a host file, through a read-only fd, is denied as a
// lease of what the fd points to (the holder would hold back the file's
// writers). With a second thread alive, so the allowed lease runs frozen.
func TestFcntlSetLease(t *testing.T) {
	needPython(t)
	if b, err := os.ReadFile("/proc/sys/fs/leases-enable"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("leases are disabled on this machine (fs.leases-enable = 0)")
	}
	sbx, host := t.TempDir(), t.TempDir()
	hostFile := filepath.Join(host, "data.csv")
	if err := os.WriteFile(hostFile, []byte("a,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostFile, _ = filepath.EvalSymlinks(hostFile)
	script := `
import fcntl, os, sys, threading
F_SETLEASE, F_GETLEASE = 1024, 1025
stop = threading.Event()
threading.Thread(target=stop.wait).start()
def lease(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
        held = fcntl.fcntl(fd, F_GETLEASE)
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
        return "held %d released %d" % (held, fcntl.fcntl(fd, F_GETLEASE))
    except OSError as e:
        return "errno %d" % e.errno
    finally:
        os.close(fd)
with open("mine.csv", "w") as f:
    f.write("x\n")
print("sbx", lease("mine.csv"))
print("host", lease(sys.argv[1]))
stop.set()
`
	o := runTraced(t, sbx, nil, python, "-c", script, hostFile)
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := fmt.Sprintf("sbx held %d released %d\nhost errno %d\n", unix.F_RDLCK, unix.F_UNLCK, unix.EACCES)
	if o.stdout != want {
		t.Fatalf("stdout %q, want %q; stderr %q", o.stdout, want, o.stderr)
	}
	if len(o.res.Denials) != 1 {
		t.Fatalf("denials %+v, want one", o.res.Denials)
	}
	d := o.res.Denials[0]
	if d.Kind != syscalls.KindLease || d.Syscall != "fcntl" || d.Flags != "F_SETLEASE(F_RDLCK)" || d.Errno != "EACCES" ||
		d.Rule != policy.RuleOutsideRoots || len(d.Paths) != 1 || d.Paths[0].Resolved != hostFile {
		t.Fatalf("denial %+v", d)
	}
	if o.res.Counts.Freezes == 0 {
		t.Errorf("no freeze: the allowed lease ran with the other thread running")
	}
}

// With reads trapped (a deny-read entry), the environment, command line and
// pipes of a process outside the tree are not readable through /proc; its
// status and the tree's own /proc entries are.
func TestProcOfOutsideProcess(t *testing.T) {
	needPython(t)
	// Its stdin is a pipe.
	pid := startOutside(t, "echo | HF_TOKEN=hf_secret_123 sleep 30 >/dev/null 2>&1")
	script := `
import os, sys
pid = sys.argv[1]
for p in ["/proc/%s/environ" % pid, "/proc/%s/cmdline" % pid, "/proc/%s/fd/0" % pid,
          "/proc/%s/status" % pid, "/proc/self/environ"]:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        data = os.read(fd, 100000)
        os.close(fd)
        print(p.replace(pid, "PID"), "read", b"hf_secret" in data)
    except OSError as e:
        print(p.replace(pid, "PID"), "errno", e.errno)
`
	o := runTraced(t, t.TempDir(), func(pc *policy.Config, _ *Config) {
		pc.DenyRead = []string{"/nonexistent-tracecell-deny"}
	}, python, "-c", script, strconv.Itoa(pid))
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := "/proc/PID/environ errno 13\n/proc/PID/cmdline errno 13\n/proc/PID/fd/0 errno 13\n" +
		"/proc/PID/status read False\n/proc/self/environ read False\n"
	if o.stdout != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr %s", o.stdout, want, o.stderr)
	}
	rules := map[policy.Rule]int{}
	for _, d := range o.res.Denials {
		rules[d.Rule]++
	}
	if rules["proc-read"] != 3 {
		t.Errorf("denials %+v", o.res.Denials)
	}
}

// startOutside starts the shell command cmd in the background, outside this
// process's children (the tracer's wait4(-1) would reap a child of the test:
// a thread group shares its children), and returns its pid; it is killed at
// the end of the test.
func startOutside(t *testing.T, cmd string) int {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", cmd+" & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}
