package worker

// The worker is untrusted: the code runs in it, its start-up files live in
// the sandbox (HOME), and it can write to its control pipe (fd 4). Nothing
// it says may make the host act on anything outside the worker's tree.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSleeper starts a process outside every traced tree and returns it
// with a channel that is closed when it exits.
func startSleeper(t *testing.T) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, exited
}

// TestWorkerPidFromTracer: a worker whose start-up code forges its pid (as
// a usercustomize.py or .pth in the user site-packages under HOME could)
// says another process's pid in its hello. The host must signal the
// process the tracer started, not that one: at a timeout the execution is
// interrupted, and the other process gets nothing.
func TestWorkerPidFromTracer(t *testing.T) {
	needPython(t)
	sleeper, exited := startSleeper(t)
	// The interpreter: python3 running, by its #! line, a start-up that
	// makes os.getpid lie before worker.py runs (the last argument).
	fake := filepath.Join(t.TempDir(), "forging-python")
	src := "#!" + python + "\n" +
		"import os, runpy, sys\n" +
		"_forged = int(os.environ['TC_FORGED_PID'])\n" +
		"os.getpid = lambda: _forged\n" +
		"sys.argv = sys.argv[-1:]\n" +
		"runpy.run_path(sys.argv[0], run_name='__main__')\n"
	if err := os.WriteFile(fake, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, func(c *HostConfig) {
		c.Python = fake
		c.Settings.Env = map[string]string{"TC_FORGED_PID": fmt.Sprint(sleeper.Process.Pid)}
	})
	if r := run(t, p, "import os; os.getpid()", 0); str(r.Result) != fmt.Sprint(sleeper.Process.Pid) {
		t.Fatalf("the fake interpreter does not forge its pid (getpid gives %s, stderr %q): the test tests nothing", str(r.Result), r.Stderr)
	}
	if got := p.Info().WorkerPid; got == sleeper.Process.Pid || got <= 0 {
		t.Fatalf("Info.WorkerPid = %d: the worker's own claim (the sleeper is %d), not the tracer's", got, sleeper.Process.Pid)
	}
	r := run(t, p, "import time\ntime.sleep(30)", 300*time.Millisecond)
	if !r.TimedOut || r.SessionLost || errName(r) != "KeyboardInterrupt" {
		t.Errorf("the timeout did not interrupt the worker: timed_out %v session_lost %v (%s) error %+v", r.TimedOut, r.SessionLost, r.LostReason, r.Error)
	}
	select {
	case <-exited:
		t.Fatalf("the process outside (pid %d) was signalled at the timeout: %v", sleeper.Process.Pid, sleeper.ProcessState)
	case <-time.After(200 * time.Millisecond):
	}
	if err := syscall.Kill(sleeper.Process.Pid, 0); err != nil {
		t.Fatalf("the process outside: %v", err)
	}
}

// TestWorkerIsolatedStartup: the worker's Python does not run the user
// site-packages (in HOME, the sandbox) nor take PYTHON* variables, so what
// the code leaves there does not run in the next worker before worker.py;
// the sandbox and the operator's PYTHONPATH are still importable.
func TestWorkerIsolatedStartup(t *testing.T) {
	needPython(t)
	sbx := t.TempDir()
	lib := t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "oplib.py"), []byte("X = 'operator'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := func(c *HostConfig) {
		c.Sandbox = sbx
		c.Settings.Env = map[string]string{"PYTHONPATH": lib, "PYTHONINSPECT": "1"}
	}
	p := startProc(t, mod)
	plant := `import os, site
d = site.getusersitepackages()
os.makedirs(d, exist_ok=True)
open(os.path.join(d, 'usercustomize.py'), 'w').write("open('/dev/null'); import builtins; builtins.PLANTED = 'usercustomize'\n")
open(os.path.join(d, 'planted.pth'), 'w').write("import builtins; builtins.PLANTED_PTH = 'pth'\n")
open('mine.py', 'w').write("Y = 'sandbox'\n")
d`
	r := run(t, p, plant, 0)
	if r.Error != nil || !strings.HasPrefix(str(r.Result), "'"+sbx) {
		t.Fatalf("plant: %+v %s", r.Error, str(r.Result))
	}
	p.Close()
	p2 := startProc(t, mod)
	r = run(t, p2, "import builtins, sys, mine, oplib\n(getattr(builtins, 'PLANTED', None), getattr(builtins, 'PLANTED_PTH', None), mine.Y, oplib.X, sys.flags.isolated)", 0)
	if want := "(None, None, 'sandbox', 'operator', 1)"; str(r.Result) != want {
		t.Errorf("after a restart: %s (error %+v), want %s", str(r.Result), r.Error, want)
	}
	// A module the code left in the sandbox is not what a preload imports
	// (its code would run at start-up, its denials belonging to no
	// execution); the code imports it from the sandbox as before.
	p2.Close()
	p3 := startProc(t, func(c *HostConfig) { mod(c); c.Preload = []string{"mine", "json"} })
	if info := p3.Info(); fmt.Sprint(info.Preloaded) != "[json]" || info.PreloadErrors["mine"] == "" {
		t.Errorf("preload of a module only the sandbox has: preloaded %v errors %v", info.Preloaded, info.PreloadErrors)
	}
	if r := run(t, p3, "import mine\nmine.Y", 0); str(r.Result) != "'sandbox'" {
		t.Errorf("the sandbox's module after the preload: %s %+v", str(r.Result), r.Error)
	}
}

// TestWorkerProtocolViolations: a message on fd 4 that is not the
// protocol's ends the worker, with the reason in the result; the host and
// its client live on, and a new worker starts.
func TestWorkerProtocolViolations(t *testing.T) {
	const cell = "import os, sys\ncell = int(sys._getframe().f_code.co_filename[6:-1])\n"
	for _, c := range []struct{ name, write string }{
		{"not JSON", "b'hello there\\n'"},
		{"two values", "b'{\"started\": %d} {}\\n' % cell"},
		{"unknown field", "b'{\"id\": %d, \"result\": \"1\", \"pid\": 1, \"evil\": 1}\\n' % cell"},
		{"wrong type", "b'{\"id\": %d, \"result\": 42}\\n' % cell"},
		{"second hello", "b'{\"hello\": true, \"pid\": 1, \"python\": \"/x\", \"version\": \"3.11.2\"}\\n'"},
		{"hello and response", "b'{\"hello\": true, \"pid\": 1, \"python\": \"/x\", \"version\": \"3.11.2\", \"id\": %d}\\n' % cell"},
		{"other execution", "b'{\"id\": %d, \"result\": \"1\"}\\n' % (cell + 5)"},
		{"started again", "b'{\"started\": %d}\\n' % cell"},
		{"artifact outside", "b'{\"id\": %d, \"artifacts\": [{\"path\": \"../../etc/passwd\", \"size\": 1, \"change\": \"created\", \"kind\": \"file\"}]}\\n' % cell"},
		{"negative duration", "b'{\"id\": %d, \"duration_ms\": -5}\\n' % cell"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startProc(t, nil)
			r := run(t, p, cell+"os.write(4, "+c.write+")\nimport time; time.sleep(5)", 20*time.Second)
			if !r.SessionLost || !strings.Contains(r.LostReason, "control pipe") {
				t.Fatalf("session_lost %v reason %q result %s error %+v: want the worker ended for its control pipe", r.SessionLost, r.LostReason, str(r.Result), r.Error)
			}
			if r.Result != nil {
				t.Errorf("a forged result was passed on: %s", str(r.Result))
			}
		})
	}
	// The client and a fresh worker after the violations.
	p := startProc(t, nil)
	if r := run(t, p, "1+1", 0); str(r.Result) != "2" {
		t.Fatalf("a new worker: %+v", r)
	}
}

// TestWorkerStartFailures: a worker that dies, or talks out of turn, before
// its hello is a start error naming the cause, and nothing is left running.
func TestWorkerStartFailures(t *testing.T) {
	needPython(t)
	for _, c := range []struct{ name, src, want string }{
		{"exits", "import sys\nsys.exit(3)\n", "exited with status 3"},
		{"no hello first", "import os, time\nos.write(4, b'{\"started\": 1}\\n')\ntime.sleep(30)\n", "first message was not its hello"},
		{"garbage", "import os, time\nos.write(4, b'not json\\n')\ntime.sleep(30)\n", "control pipe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := filepath.Join(t.TempDir(), "python")
			if err := os.WriteFile(fake, []byte("#!"+python+"\n"+c.src), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := HostConfig{Sandbox: t.TempDir(), Python: fake}
			start := time.Now()
			p, err := Start(t.Context(), cfg, testLog(t))
			if err == nil {
				p.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Start: %v, want %q", err, c.want)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
