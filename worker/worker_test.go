package worker

// The worker-host is this test binary re-executed (host.go's init() hook),
// and the tracer's stub too: no separate binary is needed. The worker is the
// real /usr/bin/python3.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/caps"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/internal/syncbuf"
)

const python = "/usr/bin/python3"

func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not installed (make deps installs it)", python)
	}
}

func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// startProc starts a worker in a fresh sandbox; it is closed at the end of
// the test.
func startProc(t testing.TB, mod func(*HostConfig)) *Proc {
	t.Helper()
	needPython(t)
	cfg := HostConfig{Sandbox: t.TempDir(), Python: python, Grace: time.Second, DefaultTimeout: 30 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := Start(ctx, cfg, testLog(t))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// startLogged starts a worker whose host logs (warnings and above) go to
// the returned buffer; it is closed at the end of the test.
func startLogged(t testing.TB) (*Proc, *syncbuf.Buffer) {
	t.Helper()
	needPython(t)
	buf := &syncbuf.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := Start(ctx, HostConfig{Sandbox: t.TempDir(), Python: python}, zerolog.New(buf).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, buf
}

func run(t testing.TB, p *Proc, code string, timeout time.Duration) *Result {
	t.Helper()
	r, err := p.Execute(context.Background(), ExecRequest{Code: code, Timeout: timeout})
	if err != nil {
		t.Fatalf("Execute(%q): %v", code, err)
	}
	return r
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func errName(r *Result) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Name
}

// gone waits up to within for pid to exit (gone, or a zombie).
func gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		if !procfs.Runs(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// childrenOf lists the live processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

func fdCount(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestSession runs a sequence of executions in one worker: state persists,
// results, errors and output are per execution.
func TestSession(t *testing.T) {
	p := startProc(t, nil)
	steps := []struct {
		name, code     string
		result         string // "<nil>" for none
		stdout, stderr string
		errName        string
		errMsg         string
		tbHas          []string
	}{
		{name: "assign", code: "x = 41", result: "<nil>"},
		{name: "last expression", code: "x + 1", result: "42"},
		{name: "underscore", code: "_", result: "42"},
		{name: "import and function", code: "import math\ndef f(n):\n    return math.factorial(n)\n", result: "<nil>"},
		{name: "function persists", code: "f(5)", result: "120"},
		{name: "statements then expression", code: "y = f(3)\ny * 2", result: "12"},
		{name: "None is no result", code: "None", result: "<nil>"},
		{name: "trailing semicolon hides", code: "x;", result: "<nil>"},
		{name: "print", code: "print('hello')", result: "<nil>", stdout: "hello\n"},
		{name: "string repr", code: "'a' + 'b'", result: "'ab'"},
		{
			name: "exception", code: "def g():\n    return 1/0\ng()", result: "<nil>",
			errName: "ZeroDivisionError", errMsg: "division by zero",
			tbHas: []string{"Traceback (most recent call last):", `File "<cell-`, "in g", "return 1/0", "ZeroDivisionError: division by zero"},
		},
		{
			name: "syntax error", code: "z = (1,\n", result: "<nil>", errName: "SyntaxError",
			tbHas: []string{`File "<cell-`, "z = (1,", "^", "SyntaxError"},
		},
		{name: "state survives errors", code: "x", result: "41"},
		{
			name:   "stdout and stderr separated, C-level writes kept in order",
			code:   "import os, sys\nprint('o1')\nsys.stderr.write('e1\\n')\nos.write(1, b'c1\\n')\nos.write(2, b'c2\\n')\nprint('o2')",
			result: "<nil>", stdout: "o1\nc1\no2\n", stderr: "e1\nc2\n",
		},
		{
			name:   "forked child writes",
			code:   "pid = os.fork()\nif pid == 0:\n    os.write(1, b'child\\n')\n    os._exit(0)\nos.waitpid(pid, 0)\nprint('parent')",
			result: "<nil>", stdout: "child\nparent\n",
		},
		{name: "stdin is empty", code: "input()", result: "<nil>", errName: "EOFError"},
		{name: "SystemExit does not end the session", code: "import sys\nsys.exit(3)", result: "<nil>", errName: "SystemExit", errMsg: "3"},
		{name: "still alive", code: "x * 2", result: "82"},
		{name: "user exception class", code: "class Oops(Exception):\n    pass\nraise Oops('bad')", result: "<nil>", errName: "Oops", errMsg: "bad"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := run(t, p, s.code, 0)
			if got := str(r.Result); got != s.result {
				t.Errorf("result = %s, want %s", got, s.result)
			}
			if r.Stdout != s.stdout {
				t.Errorf("stdout = %q, want %q", r.Stdout, s.stdout)
			}
			if s.stderr != "" || s.errName == "" {
				if r.Stderr != s.stderr {
					t.Errorf("stderr = %q, want %q", r.Stderr, s.stderr)
				}
			}
			if errName(r) != s.errName {
				t.Fatalf("error = %+v, want %s", r.Error, s.errName)
			}
			if r.Error != nil {
				if s.errMsg != "" && r.Error.Message != s.errMsg {
					t.Errorf("message = %q, want %q", r.Error.Message, s.errMsg)
				}
				for _, w := range s.tbHas {
					if !strings.Contains(r.Error.Traceback, w) {
						t.Errorf("traceback lacks %q:\n%s", w, r.Error.Traceback)
					}
				}
				if strings.Contains(r.Error.Traceback, "worker.py") {
					t.Errorf("traceback shows the worker's own frames:\n%s", r.Error.Traceback)
				}
			}
			if r.TimedOut || r.SessionLost || r.Truncated {
				t.Errorf("flags: timed_out %v session_lost %v truncated %v", r.TimedOut, r.SessionLost, r.Truncated)
			}
			if r.DurationMS <= 0 {
				t.Errorf("duration_ms = %v", r.DurationMS)
			}
		})
	}
	t.Run("long repr is capped", func(t *testing.T) {
		r := run(t, p, "'x' * 50000", 0)
		if n := len(str(r.Result)); n < 10000 || n > 10200 || !strings.Contains(str(r.Result), "truncated") {
			t.Errorf("result of %d characters: %.80s…", n, str(r.Result))
		}
	})
	if !p.Alive() {
		t.Fatal("worker not alive after the session")
	}
}

func TestOutputCap(t *testing.T) {
	p := startProc(t, func(c *HostConfig) { c.MaxOutput = 1000 })
	r := run(t, p, "import os\nprint('a' * 5000)\nos.write(2, b'e' * 3000)\nprint('tail')", 0)
	if !r.Truncated {
		t.Error("truncated not set")
	}
	if len(r.Stdout) != 1000 || strings.Trim(r.Stdout, "a") != "" {
		t.Errorf("stdout: %d bytes, %.20q…", len(r.Stdout), r.Stdout)
	}
	if len(r.Stderr) != 1000 {
		t.Errorf("stderr: %d bytes", len(r.Stderr))
	}
	if len(r.Notes) == 0 || !strings.Contains(strings.Join(r.Notes, "\n"), "stdout truncated") {
		t.Errorf("notes = %q", r.Notes)
	}
	r = run(t, p, "print('ok')", 0)
	if r.Stdout != "ok\n" || r.Stderr != "" || r.Truncated {
		t.Errorf("next execution: stdout %q stderr %q truncated %v", r.Stdout, r.Stderr, r.Truncated)
	}
}

func TestBlockedWrite(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(outside)
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, nil)
	r := run(t, p, fmt.Sprintf("open(%q, 'a').write('x')", outside), 0)
	if errName(r) != "PermissionError" {
		t.Fatalf("error = %+v, want PermissionError", r.Error)
	}
	found := false
	for _, d := range r.Denials {
		for _, pa := range d.Paths {
			if pa.Resolved == resolved && d.Decision == "deny" {
				found = true
			}
		}
	}
	if !found {
		b, _ := json.Marshal(r.Denials)
		t.Errorf("no denial with path %s: %s", resolved, b)
	}
	if b, _ := os.ReadFile(outside); string(b) != "original\n" {
		t.Errorf("file outside changed: %q", b)
	}
	// The next execution has its own (no) denials.
	r = run(t, p, "open('inside.txt', 'w').write('ok')", 0)
	if r.Error != nil || len(r.Denials) != 0 {
		t.Errorf("inside write: error %+v, denials %d", r.Error, len(r.Denials))
	}
}

func TestArtifacts(t *testing.T) {
	p := startProc(t, nil)
	sbx := p.Info().Sandbox
	if err := os.WriteFile(filepath.Join(sbx, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sbx, "same.txt"), []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := `import os
open('new.txt', 'w').write('new')
open('old.txt', 'a').write('more\n')
os.makedirs('sub/dir', exist_ok=True)
open('sub/dir/data.csv', 'w').write('a,b\n1,2\n')
open(os.path.join(os.environ['TMPDIR'], 'scratch'), 'w').write('x')
os.makedirs('.cache/x', exist_ok=True)
open('.cache/x/c', 'w').write('x')
`
	r := run(t, p, code, 0)
	if r.Error != nil {
		t.Fatalf("error: %+v", r.Error)
	}
	got := map[string]Artifact{}
	for _, a := range r.Artifacts {
		got[a.Path] = a
	}
	want := map[string]Artifact{
		"new.txt":          {Path: "new.txt", Size: 3, Change: "created", Kind: "file", MIME: "text/plain"},
		"old.txt":          {Path: "old.txt", Size: 9, Change: "modified", Kind: "file", MIME: "text/plain"},
		"sub/dir/data.csv": {Path: "sub/dir/data.csv", Size: 8, Change: "created", Kind: "file", MIME: "text/csv"},
	}
	if len(got) != len(want) {
		t.Errorf("artifacts = %+v, want %+v", r.Artifacts, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("artifact %s = %+v, want %+v", k, got[k], w)
		}
	}

	t.Run("matplotlib figure", func(t *testing.T) {
		r := run(t, p, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.figure()\nplt.plot([3, 2, 1])", 0)
		if r.Error != nil {
			t.Fatalf("error: %+v\nstderr: %s", r.Error, r.Stderr)
		}
		var figs []Artifact
		for _, a := range r.Artifacts {
			if a.Kind == "figure" {
				figs = append(figs, a)
			}
		}
		if len(figs) != 2 {
			t.Fatalf("figures = %+v (all artifacts %+v, notes %q)", figs, r.Artifacts, r.Notes)
		}
		sort.Slice(figs, func(i, j int) bool { return figs[i].Path < figs[j].Path })
		for i, f := range figs {
			if !strings.HasPrefix(f.Path, "outputs/figure-") || !strings.HasSuffix(f.Path, fmt.Sprintf("-%d.png", i+1)) || f.MIME != "image/png" || f.Change != "created" {
				t.Errorf("figure artifact %+v", f)
			}
			b, err := os.ReadFile(filepath.Join(sbx, f.Path))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || int64(len(b)) != f.Size {
				t.Errorf("%s: %d bytes (artifact says %d), starts %q", f.Path, len(b), f.Size, b[:min(8, len(b))])
			}
		}
		r = run(t, p, "len(plt.get_fignums())", 0)
		if str(r.Result) != "0" || len(r.Artifacts) != 0 {
			t.Errorf("after: open figures %s, artifacts %+v", str(r.Result), r.Artifacts)
		}
	})

	t.Run("cap", func(t *testing.T) {
		p := startProc(t, func(c *HostConfig) { c.MaxArtifacts = 3 })
		r := run(t, p, "for i in range(5):\n    open('f%d.txt' % i, 'w').write('x')", 0)
		if len(r.Artifacts) != 3 || !r.Truncated {
			t.Errorf("artifacts %d, truncated %v", len(r.Artifacts), r.Truncated)
		}
	})
}

func TestTimeoutInterrupts(t *testing.T) {
	p := startProc(t, nil)
	run(t, p, "kept = 'yes'", 0)
	for _, c := range []struct{ name, code string }{
		{"busy loop", "while True:\n    pass"},
		{"sleep", "import time\ntime.sleep(100)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r := run(t, p, c.code, 300*time.Millisecond)
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v", el)
			}
			if !r.TimedOut || r.SessionLost || errName(r) != "KeyboardInterrupt" {
				t.Fatalf("timed_out %v session_lost %v error %+v", r.TimedOut, r.SessionLost, r.Error)
			}
			if !strings.Contains(r.Error.Traceback, "<cell-") {
				t.Errorf("traceback: %s", r.Error.Traceback)
			}
			r = run(t, p, "kept", 0)
			if str(r.Result) != "'yes'" || r.TimedOut {
				t.Errorf("after the timeout: result %s timed_out %v", str(r.Result), r.TimedOut)
			}
		})
	}
	t.Run("Interrupt", func(t *testing.T) {
		go func() {
			time.Sleep(300 * time.Millisecond)
			if err := p.Interrupt(); err != nil {
				t.Error(err)
			}
		}()
		r := run(t, p, "import time\ntime.sleep(30)", 0)
		if r.TimedOut || r.SessionLost || errName(r) != "KeyboardInterrupt" {
			t.Errorf("timed_out %v session_lost %v error %+v", r.TimedOut, r.SessionLost, r.Error)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		r, err := p.Execute(ctx, ExecRequest{Code: "while True:\n    pass"})
		if err != nil {
			t.Fatal(err)
		}
		if r.TimedOut || r.SessionLost || errName(r) != "KeyboardInterrupt" {
			t.Errorf("timed_out %v session_lost %v error %+v", r.TimedOut, r.SessionLost, r.Error)
		}
		if r = run(t, p, "kept", 0); str(r.Result) != "'yes'" {
			t.Errorf("after: %s", str(r.Result))
		}
	})
}

// TestTimeoutKills: code that does not stop at the interrupt is killed after
// the grace period, with its whole tree.
func TestTimeoutKills(t *testing.T) {
	for _, c := range []struct{ name, code string }{
		{"SIGINT ignored", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('spinning', flush=True)\nwhile True:\n    pass"},
		{"KeyboardInterrupt swallowed", "import time\nprint('spinning', flush=True)\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startProc(t, func(c *HostConfig) { c.Grace = 500 * time.Millisecond })
			info := p.Info()
			start := time.Now()
			r := run(t, p, c.code, 300*time.Millisecond)
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v", el)
			}
			if !r.TimedOut || !r.SessionLost || !strings.Contains(r.LostReason, "did not stop within") {
				t.Errorf("timed_out %v session_lost %v reason %q", r.TimedOut, r.SessionLost, r.LostReason)
			}
			if r.Stdout != "spinning\n" {
				t.Errorf("stdout = %q", r.Stdout)
			}
			if p.Alive() {
				t.Error("Alive() after the kill")
			}
			select {
			case <-p.Done():
			default:
				t.Error("Done() not closed")
			}
			for _, pid := range []int{info.HostPid, info.WorkerPid} {
				if !gone(pid, 2*time.Second) {
					t.Errorf("process %d still runs", pid)
				}
			}
			if _, err := p.Execute(context.Background(), ExecRequest{Code: "1"}); !errors.Is(err, ErrClosed) {
				t.Errorf("Execute after the loss: %v, want ErrClosed", err)
			}
		})
	}
}

func TestWorkerDeath(t *testing.T) {
	for _, c := range []struct{ name, code, reason string }{
		{"os._exit", "print('before')\nimport os\nos._exit(3)", "worker exited with status 3"},
		{"SIGKILL", "print('before')\nimport os\nos.kill(os.getpid(), 9)", "worker killed by SIGKILL"},
		{"segfault", "print('before')\nimport ctypes\nctypes.string_at(0)", "worker killed by SIGSEGV"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startProc(t, nil)
			info := p.Info()
			run(t, p, "x = 1", 0)
			r := run(t, p, c.code, 0)
			if !r.SessionLost || !strings.Contains(r.LostReason, c.reason) || r.TimedOut {
				t.Errorf("session_lost %v timed_out %v reason %q, want %q", r.SessionLost, r.TimedOut, r.LostReason, c.reason)
			}
			if r.Stdout != "before\n" {
				t.Errorf("stdout = %q", r.Stdout)
			}
			if p.Alive() {
				t.Error("Alive() after the death")
			}
			for _, pid := range []int{info.HostPid, info.WorkerPid} {
				if !gone(pid, 2*time.Second) {
					t.Errorf("process %d still runs", pid)
				}
			}
			_, err := p.Execute(context.Background(), ExecRequest{Code: "x"})
			if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("Execute after the death: %v", err)
			}
		})
	}
}

func TestFileSizeLimit(t *testing.T) {
	p := startProc(t, func(c *HostConfig) { c.Settings.MaxFileSize = config.Size(1 << 20) })
	r := run(t, p, "with open('big.bin', 'wb') as f:\n    f.write(b'x' * (2 << 20))", 0)
	if errName(r) != "OSError" || !strings.Contains(r.Error.Message, "[Errno 27]") {
		t.Fatalf("error = %+v, want OSError EFBIG", r.Error)
	}
	if r.SessionLost {
		t.Fatalf("session lost: %s", r.LostReason)
	}
	if r = run(t, p, "1 + 1", 0); str(r.Result) != "2" {
		t.Errorf("after: %s", str(r.Result))
	}
}

func TestPreload(t *testing.T) {
	p := startProc(t, func(c *HostConfig) { c.Preload = []string{"numpy", "no_such_module_xyz"} })
	info := p.Info()
	if len(info.Preloaded) != 1 || info.Preloaded[0] != "numpy" {
		t.Errorf("preloaded = %v", info.Preloaded)
	}
	if !strings.Contains(info.PreloadErrors["no_such_module_xyz"], "ModuleNotFoundError") {
		t.Errorf("preload errors = %v", info.PreloadErrors)
	}
	if info.PythonVersion == "" || info.Python == "" || info.WorkerPid <= 0 || info.HostPid <= 0 || info.StartupMS <= 0 {
		t.Errorf("info = %+v", info)
	}
	r := run(t, p, "import sys\n'numpy' in sys.modules", 0)
	if str(r.Result) != "True" || r.Stdout != "" || r.Stderr != "" {
		t.Errorf("result %s stdout %q stderr %q", str(r.Result), r.Stdout, r.Stderr)
	}
}

func TestBusy(t *testing.T) {
	p := startProc(t, nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		run(t, p, "import time\ntime.sleep(1)", 0)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		busy := p.busy
		p.mu.Unlock()
		if busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first execution never started")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := p.Execute(context.Background(), ExecRequest{Code: "1"}); !errors.Is(err, ErrBusy) {
		t.Errorf("concurrent Execute: %v, want ErrBusy", err)
	}
	wg.Wait()
	if r := run(t, p, "2", 0); str(r.Result) != "2" {
		t.Errorf("after: %s", str(r.Result))
	}
}

// TestCloseLeavesNothing: no process and no file descriptor survive Close.
func TestCloseLeavesNothing(t *testing.T) {
	needPython(t)
	cfg := HostConfig{Sandbox: t.TempDir(), Python: python}
	// A first cycle warms up what the Go runtime opens once (epoll).
	p, err := Start(context.Background(), cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	before := fdCount(t)
	p, err = Start(context.Background(), cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	info := p.Info()
	r := run(t, p, "import os\npid = os.fork()\nif pid == 0:\n    import time\n    time.sleep(100)\npid", 0)
	child, _ := strconv.Atoi(str(r.Result))
	if child <= 0 {
		t.Fatalf("child pid %s", str(r.Result))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, pid := range []int{info.HostPid, info.WorkerPid, child} {
		if !gone(pid, 2*time.Second) {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
	if kids := childrenOf(os.Getpid()); len(kids) > 0 {
		t.Errorf("children left: %v", kids)
	}
	if after := fdCount(t); after != before {
		t.Errorf("file descriptors: %d before, %d after", before, after)
	}
	if _, err := p.Execute(context.Background(), ExecRequest{Code: "1"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Execute after Close: %v", err)
	}
	if p.Alive() {
		t.Error("Alive() after Close")
	}
}

// TestServerKilled: when the process that started the worker is killed with
// SIGKILL, the worker-host and the worker die with it.
func TestServerKilled(t *testing.T) {
	if os.Getenv("TRACECELL_WORKER_TEST_SERVER") == "1" {
		serverHelper()
		return
	}
	needPython(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerKilled$")
	cmd.Env = append(os.Environ(), "TRACECELL_WORKER_TEST_SERVER=1", "TRACECELL_SANDBOX="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var info Info
	if err := json.NewDecoder(out).Decode(&info); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %v", err)
	}
	if !procfs.Runs(info.HostPid) || !procfs.Runs(info.WorkerPid) {
		t.Fatalf("host %d or worker %d not running", info.HostPid, info.WorkerPid)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for _, pid := range []int{info.HostPid, info.WorkerPid} {
		if !gone(pid, 3*time.Second) {
			t.Errorf("process %d survived its server", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// serverHelper is the "server" of TestServerKilled: it starts a worker from
// a goroutine that then ends (its thread may be reused or retired), prints
// the pids and waits to be killed.
func serverHelper() {
	var p *Proc
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, err = Start(context.Background(), HostConfig{Sandbox: os.Getenv("TRACECELL_SANDBOX"), Python: python}, zerolog.Nop())
	}()
	<-done
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(p.Info())
	time.Sleep(time.Minute)
	os.Exit(1)
}

// TestMeasure prints start-up and round-trip times (TRACECELL_MEASURE=1).
func TestMeasure(t *testing.T) {
	if os.Getenv("TRACECELL_MEASURE") == "" {
		t.Skip("set TRACECELL_MEASURE=1")
	}
	needPython(t)
	median := func(d []float64) float64 {
		sort.Float64s(d)
		return d[len(d)/2]
	}
	for _, pre := range [][]string{nil, {"numpy", "pandas", "matplotlib.pyplot"}} {
		var ms []float64
		for i := 0; i < 5; i++ {
			sbx := t.TempDir()
			p, err := Start(context.Background(), HostConfig{Sandbox: sbx, Python: python, Preload: pre}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, p.Info().StartupMS)
			p.Close()
		}
		t.Logf("start-up with preload %v: median %.1f ms of %v", pre, median(append([]float64{}, ms...)), ms)
	}
	p := startProc(t, nil)
	var rt []float64
	for i := 0; i < 50; i++ {
		s := time.Now()
		r := run(t, p, "1+1", 0)
		rt = append(rt, float64(time.Since(s).Microseconds())/1000)
		if str(r.Result) != "2" {
			t.Fatal(str(r.Result))
		}
	}
	t.Logf("execute 1+1 round trip: median %.2f ms (min %.2f, max %.2f)", median(rt), rt[0], rt[len(rt)-1])
}

// TestStreamSplit feeds a stream through a real pipe in awkward pieces: a
// marker cut in two, look-alikes that are not the marker, output after it.
func TestStreamSplit(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := newStream("test", r, 1<<20)
	go s.read()
	tok1, tok2 := newToken(), newToken()
	m1 := string(markerPrefix) + tok1 + "\x1e"
	m2 := string(markerPrefix) + tok2 + "\x1e"
	s.expect([]byte(m1))
	pieces := []string{
		"one\x1eTRACECELL-END-zz\n", // a look-alike: not a token
		"two\x1e", "TRACECELL-", "END-" + tok1[:5], tok1[5:] + "\x1e" + "next-",
	}
	for _, p := range pieces {
		w.Write([]byte(p))
		time.Sleep(2 * time.Millisecond)
	}
	out, dropped, seen := s.take(2 * time.Second)
	if !seen || dropped != 0 || string(out) != "one\x1eTRACECELL-END-zz\ntwo" {
		t.Errorf("first: seen %v dropped %d out %q", seen, dropped, out)
	}
	s.expect([]byte(m2))
	w.Write([]byte("exec" + m2 + "x"))
	out, _, seen = s.take(2 * time.Second)
	if !seen || string(out) != "next-exec" {
		t.Errorf("second: seen %v out %q", seen, out)
	}
	// A marker never comes: the output so far is returned.
	s.expect([]byte(string(markerPrefix) + newToken() + "\x1e"))
	out, _, seen = s.take(50 * time.Millisecond)
	if seen || string(out) != "x" {
		t.Errorf("third: seen %v out %q", seen, out)
	}
	w.Write([]byte("\x1eTRACECELL-END-ab"))
	w.Close()
	out, _, ended := s.takeAll(2 * time.Second)
	if !ended || string(out) != "\x1eTRACECELL-END-ab" {
		t.Errorf("at EOF: ended %v out %q", ended, out)
	}
}

func TestStreamsRestored(t *testing.T) {
	p := startProc(t, nil)
	for _, c := range []struct{ name, code, note string }{
		{"fd 1 redirected", "import os\nos.dup2(os.open(os.devnull, os.O_WRONLY), 1)", "fd 1 (stdout) was closed or redirected"},
		{"fd 2 closed", "import os\nos.close(2)", "fd 2 (stderr) was closed or redirected"},
		{"sys.stdout replaced", "import io, sys\nsys.stdout = io.StringIO()", "sys.stdout was replaced"},
		{"SIGINT handler replaced", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)", "SIGINT handler"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, p, c.code, 0)
			if !strings.Contains(strings.Join(r.Notes, "\n"), c.note) {
				t.Errorf("notes = %q, want %q", r.Notes, c.note)
			}
			r = run(t, p, "import os, sys\nprint('out')\nos.write(2, b'err')", 0)
			if r.Stdout != "out\n" || r.Stderr != "err" {
				t.Errorf("next execution: stdout %q stderr %q", r.Stdout, r.Stderr)
			}
		})
	}
	// The handler is the worker's again: a timeout interrupts, not kills.
	r := run(t, p, "while True:\n    pass", 300*time.Millisecond)
	if errName(r) != "KeyboardInterrupt" || r.SessionLost {
		t.Errorf("after the handler was put back: error %+v session_lost %v", r.Error, r.SessionLost)
	}
}

// TestInterruptWhileIdle: an interrupt that lands between executions does
// nothing (in particular, it does not hit the next one).
func TestInterruptWhileIdle(t *testing.T) {
	p := startProc(t, nil)
	run(t, p, "v = 7", 0)
	for i := 0; i < 3; i++ {
		if err := p.Interrupt(); err != nil {
			t.Fatal(err)
		}
	}
	// A signal sent straight to the worker while idle, as a late host
	// interrupt would be.
	if err := syscall.Kill(p.Info().WorkerPid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	r := run(t, p, "import time\ntime.sleep(0.2)\nv", 0)
	if r.Error != nil || str(r.Result) != "7" || !p.Alive() {
		t.Errorf("error %+v result %s alive %v", r.Error, str(r.Result), p.Alive())
	}
}

// TestDenialsPerExecution: a forked child's denial belongs to the execution
// that forked it; big output does not block the worker.
func TestDenialsPerExecution(t *testing.T) {
	p := startProc(t, nil)
	code := `import os
pid = os.fork()
if pid == 0:
    try:
        os.mkdir('/denied-by-child')
    except OSError:
        pass
    os._exit(0)
os.waitpid(pid, 0)
try:
    os.unlink('/etc/hostname')
except OSError as e:
    print(type(e).__name__)
`
	r := run(t, p, code, 0)
	if r.Stdout != "PermissionError\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
	var calls []string
	for _, d := range r.Denials {
		calls = append(calls, d.Syscall)
	}
	if len(r.Denials) != 2 || !strings.HasPrefix(calls[0], "mkdir") || !strings.HasPrefix(calls[1], "unlink") {
		t.Errorf("denials: %v", calls)
	}
	if r.Denials[0].Pid == r.Denials[1].Pid {
		t.Errorf("both denials from pid %d: the child's should be its own", r.Denials[0].Pid)
	}
	r = run(t, p, "import sys\nsys.stdout.write('y' * (8 << 20))\n'done'", 0)
	if str(r.Result) != "'done'" || !r.Truncated || len(r.Stdout) != defaultMaxOutput || len(r.Denials) != 0 {
		t.Errorf("big output: result %s truncated %v stdout %d bytes, denials %d", str(r.Result), r.Truncated, len(r.Stdout), len(r.Denials))
	}
}

func TestRestrictedReads(t *testing.T) {
	readable, secret := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(readable, "ok.txt"), []byte("ok"), 0o644)
	os.WriteFile(filepath.Join(secret, "no.txt"), []byte("no"), 0o644)
	p := startProc(t, func(c *HostConfig) { c.Settings.Read = []string{readable} })
	r := run(t, p, fmt.Sprintf("open(%q).read()", filepath.Join(readable, "ok.txt")), 0)
	if str(r.Result) != "'ok'" {
		t.Errorf("allowed read: %s %+v", str(r.Result), r.Error)
	}
	r = run(t, p, fmt.Sprintf("open(%q).read()", filepath.Join(secret, "no.txt")), 0)
	if errName(r) != "PermissionError" || len(r.Denials) != 1 {
		t.Errorf("denied read: error %+v, %d denials", r.Error, len(r.Denials))
	}
}

func TestKilledWithMemoryLimit(t *testing.T) {
	p := startProc(t, func(c *HostConfig) { c.Settings.Memory = config.Size(4 << 30) })
	r := run(t, p, "import os\nos.kill(os.getpid(), 9)", 0)
	if want := "worker killed by SIGKILL: out of memory? (memory limit 4 GiB)"; r.LostReason != want {
		t.Errorf("reason %q, want %q", r.LostReason, want)
	}
}

// TestHostKilled: the worker-host dies mid-execution (kill -9 from outside):
// the execution ends with SessionLost, not an error, and the worker is gone.
func TestHostKilled(t *testing.T) {
	p := startProc(t, nil)
	info := p.Info()
	go func() {
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(info.HostPid, syscall.SIGKILL)
	}()
	r := run(t, p, "import time\ntime.sleep(30)", 0)
	if !r.SessionLost || !strings.Contains(r.LostReason, "killed") {
		t.Errorf("session_lost %v reason %q", r.SessionLost, r.LostReason)
	}
	if p.Alive() {
		t.Error("Alive() after the host was killed")
	}
	if !gone(info.WorkerPid, 2*time.Second) {
		t.Errorf("worker %d survived its host", info.WorkerPid)
	}
}

// TestEarlyCancel: a context cancelled before the code even starts still
// interrupts it (the host holds the interrupt until the worker says the code
// runs), so the session is kept.
func TestEarlyCancel(t *testing.T) {
	p := startProc(t, func(c *HostConfig) { c.Grace = 3 * time.Second })
	run(t, p, "kept = 1", 0)
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		r, err := p.Execute(ctx, ExecRequest{Code: "while True:\n    pass"})
		if err != nil {
			t.Fatal(err)
		}
		if errName(r) != "KeyboardInterrupt" || r.SessionLost || time.Since(start) > 2*time.Second {
			t.Fatalf("try %d: error %+v session_lost %v after %v", i, r.Error, r.SessionLost, time.Since(start))
		}
	}
	if r := run(t, p, "kept", 0); str(r.Result) != "1" {
		t.Errorf("after: %s", str(r.Result))
	}
}

// TestControlPipeFlood: the code runs in worker.py's process and can write
// to fd 4, the worker's response pipe. A line longer than the host's cap
// (a forged result of 20 MiB, or a line never ended) must not be buffered,
// passed on past --max-output, or grow the host's memory: the worker is
// killed and the session is lost, with the reason.
func TestControlPipeFlood(t *testing.T) {
	for _, c := range []struct{ name, code string }{
		{"forged result", "import os, sys\ncell = int(sys._getframe().f_code.co_filename[6:-1])\n" +
			"os.write(4, b'{\"id\": %d, \"result\": \"' % cell)\nfor i in range(20):\n    os.write(4, b'A' * (1 << 20))\n" +
			"os.write(4, b'\"}\\n')\nimport time; time.sleep(5)"},
		{"unended line", "import os, time\nfor i in range(20):\n    os.write(4, b'A' * (1 << 20))\ntime.sleep(5)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startProc(t, func(c *HostConfig) { c.MaxOutput = 1000 })
			start := time.Now()
			r := run(t, p, c.code, 20*time.Second)
			if !r.SessionLost || !strings.Contains(r.LostReason, "control pipe") {
				t.Errorf("session_lost %v reason %q, want the control pipe named", r.SessionLost, r.LostReason)
			}
			if r.Result != nil && len(*r.Result) > maxResultChars+10 {
				t.Errorf("a forged result of %d bytes was passed on", len(*r.Result))
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v: the host waited for the timeout", d)
			}
		})
	}
}

// TestLargeExceptionCapped: an exception's message is not capped by
// --max-output; worker.py and the host cap it, and the session lives on.
func TestLargeExceptionCapped(t *testing.T) {
	p := startProc(t, nil)
	r := run(t, p, "raise ValueError('x' * 30_000_000)", 0)
	if r.SessionLost || errName(r) != "ValueError" {
		t.Fatalf("session_lost %v (%s), error %v", r.SessionLost, r.LostReason, errName(r))
	}
	if n, m := len(r.Error.Message), len(r.Error.Traceback); n > 100_000 || m > 100_000 {
		t.Errorf("error message %d bytes, traceback %d bytes: not capped", n, m)
	}
	if r2 := run(t, p, "1+1", 0); str(r2.Result) != "2" {
		t.Errorf("next execution: %v", str(r2.Result))
	}
}

// TestDenialsBytesCapped: 900 denials of 4 KiB paths are megabytes; the
// denials of one result are capped in bytes as well as in number.
func TestDenialsBytesCapped(t *testing.T) {
	p := startProc(t, nil)
	r := run(t, p, "import os\nfor i in range(900):\n    try: open('/usr' + '/.' * 1900 + '/x' + str(i), 'w')\n    except OSError: pass", 0)
	size := 0
	for _, d := range r.Denials {
		for _, pa := range d.Paths {
			size += len(pa.Given) + len(pa.Resolved)
		}
	}
	if size > maxDenialBytes || !r.Truncated || len(r.Denials) == 0 {
		t.Errorf("%d denials of %d path bytes, truncated %v", len(r.Denials), size, r.Truncated)
	}
}

// TestDenialLogCapped: a loop of denied calls must not write one log line
// per denial without end (megabytes per second into the server's log):
// beyond the per-execution cap they are counted in one line.
func TestDenialLogCapped(t *testing.T) {
	p, buf := startLogged(t)
	r := run(t, p, "for i in range(3000):\n    try: open('/usr/x%d' % i, 'w')\n    except OSError: pass", 0)
	if len(r.Denials) != maxDenials {
		t.Fatalf("%d denials listed", len(r.Denials))
	}
	p.Close()
	logged := strings.Count(buf.String(), `"rule":"outside-writable-roots"`)
	if logged > maxDenials || !strings.Contains(buf.String(), `"denials_not_logged":2000`) {
		t.Errorf("%d denials logged one by one (cap %d); summary line present: %v", logged, maxDenials,
			strings.Contains(buf.String(), "denials_not_logged"))
	}
}

// TestSessionCapabilities: a session started by a root server gets the same
// capabilities as a root `tracecell run` tree: the file-access set, and
// what keep_cap adds.
func TestSessionCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the capabilities of a tree started by root")
	}
	own, err := caps.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		keep []string
		want caps.Set
	}{
		{nil, caps.DefaultKeep},
		{[]string{"net_raw"}, caps.DefaultKeep | 1<<caps.NetRaw},
	} {
		p := startProc(t, func(c *HostConfig) { c.Settings.KeepCap = tc.keep })
		r := run(t, p, "import re\nint(re.search(r'CapBnd:\\s+(\\w+)', open('/proc/self/status').read()).group(1), 16)", 0)
		if want := fmt.Sprint(uint64(own.Bounding & tc.want)); str(r.Result) != want {
			t.Errorf("keep %q: CapBnd %s (error %+v), want %s", tc.keep, str(r.Result), r.Error, want)
		}
	}
}

// The worker-host gets only what it passes on (the kept variables, LC_*,
// the session's --keep-env names), TMPDIR and the Go runtime's variables:
// none of the server's other variables reach the host, let alone the
// worker. The host's /proc is closed to the user's programs (not dumpable):
// as an ordinary user the test cannot read it either; as root it checks
// the host's environment itself.
func TestHostEnvironment(t *testing.T) {
	t.Setenv("TC_TEST_KEPT", "kept-value")
	t.Setenv("TC_TEST_SECRET", "secret-value")
	t.Setenv("LC_TC_TEST", "lc-value")
	p := startProc(t, func(c *HostConfig) { c.Settings.KeepEnv = []string{"TC_TEST_KEPT"} })
	r := run(t, p, "import os\n[os.environ.get(k) for k in ('TC_TEST_KEPT', 'TC_TEST_SECRET', 'LC_TC_TEST')]", 0)
	if want := "['kept-value', None, 'lc-value']"; str(r.Result) != want {
		t.Errorf("worker sees %s, want %s (stderr %q)", str(r.Result), want, r.Stderr)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.Info().HostPid))
	switch {
	case os.Geteuid() != 0:
		if !errors.Is(err, os.ErrPermission) {
			t.Errorf("the host's environ as uid %d: %v, want permission denied (the host is not dumpable)", os.Geteuid(), err)
		}
	case err != nil:
		t.Fatal(err)
	case bytes.Contains(b, []byte("TC_TEST_SECRET")) || !bytes.Contains(b, []byte("TC_TEST_KEPT=kept-value")):
		t.Errorf("the host's environment: %q", bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
	}
}

func TestHostEnviron(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/root", "OPENAI_API_KEY=sk-x", "LC_ALL=C", "TMPDIR=/var/tmp", "GODEBUG=x=1", "KEEP=1", "BAD"}
	got := hostEnviron(in, []string{"KEEP"})
	want := []string{"PATH=/bin", "LC_ALL=C", "TMPDIR=/var/tmp", "GODEBUG=x=1", "KEEP=1"}
	if !slices.Equal(got, want) {
		t.Errorf("hostEnviron = %q, want %q", got, want)
	}
}

// TestDenialsWhileIdle: denials made while no execution runs, by code an
// earlier execution left running (a thread), are reported with the next
// execution and said to be not its own; when the session ends before
// another execution, its end reason and the log count them, the ones past
// the cap included. A red team hid a denied write this way (1000 denied
// fillers from a thread, then the write, then os._exit: nothing reported
// it anywhere).
func TestDenialsWhileIdle(t *testing.T) {
	t.Run("next execution", func(t *testing.T) {
		p := startProc(t, nil)
		r := run(t, p, `import threading, time
def bg():
    time.sleep(0.3)
    try: open('/usr/idle-denied', 'w')
    except OSError: pass
threading.Thread(target=bg, daemon=True).start()
'started'`, 0)
		if len(r.Denials) != 0 {
			t.Fatalf("first execution: %d denials", len(r.Denials))
		}
		time.Sleep(1500 * time.Millisecond)
		r = run(t, p, "try: open('/usr/own-denied', 'w')\nexcept OSError: pass", 0)
		var paths []string
		for _, d := range r.Denials {
			for _, q := range d.Paths {
				paths = append(paths, q.Given)
			}
		}
		if len(paths) != 2 || paths[0] != "/usr/idle-denied" || paths[1] != "/usr/own-denied" {
			t.Fatalf("denials of the second execution: %q", paths)
		}
		want := "the first 1 denials listed came while no execution was running"
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("notes %q: none says %q", r.Notes, want)
		}
		r = run(t, p, "1", 0)
		if len(r.Denials) != 0 || len(r.Notes) != 0 {
			t.Errorf("third execution: denials %d, notes %q", len(r.Denials), r.Notes)
		}
	})
	t.Run("past the cap, counted", func(t *testing.T) {
		p := startProc(t, nil)
		run(t, p, `import threading, time
def bg():
    time.sleep(0.3)
    for i in range(1003):
        try: open('/usr/idle-filler-%d' % i, 'w')
        except OSError: pass
threading.Thread(target=bg, daemon=True).start()
'started'`, 0)
		time.Sleep(3 * time.Second)
		r := run(t, p, "for i in range(1004):\n    try: open('/usr/own-filler-%d' % i, 'w')\n    except OSError: pass", 0)
		// 1000 listed (the idle ones first), the rest of both counted.
		if len(r.Denials) != 1000 || r.DenialsNotListed != 1003+1004-1000 || !r.Truncated {
			t.Errorf("listed %d, not listed %d, truncated %v; want 1000, %d, true", len(r.Denials), r.DenialsNotListed, r.Truncated, 1003+1004-1000)
		}
	})
	t.Run("session ends", func(t *testing.T) {
		p, buf := startLogged(t)
		run(t, p, `import threading, time, os
def bg():
    time.sleep(0.3)
    for i in range(1001):
        try: open('/usr/filler-%d' % i, 'w')
        except OSError: pass
    try: open('/usr/hidden-denied', 'w')
    except OSError: pass
    os._exit(0)
threading.Thread(target=bg, daemon=True).start()
'started'`, 0)
		deadline := time.Now().Add(20 * time.Second)
		for p.Alive() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_, err := p.Execute(context.Background(), ExecRequest{Code: "1"})
		want := "code it left running was denied 1002 actions"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Execute after the worker died while idle: %v, want %q in it", err, want)
		}
		// The host's log reaches buf through a pipe the client drains on
		// its own: it may come after the exit message.
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(buf.String(), `"denials_not_logged":2`) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(buf.String(), `"denials_not_logged":2`) {
			t.Errorf("no count of the denials not logged in the host's log:\n%.2000s", buf.String())
		}
	})
}
