package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sameAsBare runs argv bare in one fresh sandbox and under tracecell in
// another, with the same environment, and checks identical stdout, identical
// sandbox contents, exit 0 and no denials.
func sameAsBare(t *testing.T, flags []string, argv ...string) (bare, traced result) {
	t.Helper()
	sa, sb := realDir(t), realDir(t)
	bare = runBare(t, sa, runEnv(t, sa), argv...)
	traced = runTraced(t, sb, runEnv(t, sb), flags, argv...)
	if bare.status != 0 {
		t.Fatalf("bare run failed with status %d: the test itself is broken\nstderr:\n%s", bare.status, bare.stderr)
	}
	if traced.status != 0 || traced.report.Exit.Status != 0 {
		t.Errorf("traced status %d (report %+v), want 0\nstderr:\n%s", traced.status, traced.report.Exit, traced.stderr)
	}
	if bare.stdout != traced.stdout {
		t.Errorf("stdout differs\nbare:\n%s\ntraced:\n%s", clip(bare.stdout), clip(traced.stdout))
	}
	if len(traced.report.Denials) != 0 || traced.report.Counts.Denied != 0 {
		t.Errorf("ordinary work was denied (%d):\n%s\nstderr:\n%s", traced.report.Counts.Denied, traced.report.denialList(), traced.stderr)
	}
	if d := diffTrees(treeFiles(t, sa), treeFiles(t, sb)); len(d) > 0 {
		t.Errorf("sandbox contents differ:\n  %s", strings.Join(d, "\n  "))
	}
	return bare, traced
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:2000] + "\n...\n" + s[len(s)-2000:]
	}
	return s
}

// TestSandboxWork: ordinary work inside the sandbox behaves exactly as bare.
func TestSandboxWork(t *testing.T) {
	for _, c := range []string{"files", "mkdirs", "tempfile", "sqlite", "zipfile", "devnull", "stdout", "pty"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			bare, traced := sameAsBare(t, nil, python, pyScript("work.py"), c)
			if c == "stdout" && !strings.Contains(traced.stderr, "stderr too") {
				t.Errorf("the program's stderr was lost; bare %q, traced:\n%s", bare.stderr, traced.stderr)
			}
		})
	}
	t.Run("c-write-sandbox", func(t *testing.T) {
		t.Parallel()
		sameAsBare(t, nil, escapeBin, "write-sandbox", "out.txt")
	})
	t.Run("dev-shm-own-entry", func(t *testing.T) {
		t.Parallel()
		p := fmt.Sprintf("/dev/shm/tracecell-it-own-%d-%d", os.Getpid(), time.Now().UnixNano())
		t.Cleanup(func() { os.Remove(p) })
		sbx := realDir(t)
		r := runTraced(t, sbx, runEnv(t, sbx), nil, python, pyScript("escape.py"), "shm-create-delete", p)
		if res := resultOf(r.stdout); res != "ok" || r.status != 0 {
			t.Errorf("creating and deleting its own /dev/shm entry: %q status %d\nreport:\n%s\nstderr:\n%s", res, r.status, r.report.denialList(), r.stderr)
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s still exists", p)
		}
	})
}

// TestAllowExec: --allow-exec lets exactly that program run.
func TestAllowExec(t *testing.T) {
	t.Parallel()
	touch := mustReal(t, "/usr/bin/touch")
	sbx := realDir(t)
	code := `import subprocess; print(subprocess.run(["/usr/bin/touch", "made"]).returncode)`
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", touch}, python, "-c", code)
	if r.status != 0 || strings.TrimSpace(r.stdout) != "0" {
		t.Errorf("status %d stdout %q, want 0 and touch's status 0\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(sbx, "made")); err != nil {
		t.Errorf("the allowed touch did not run: %v", err)
	}
	if len(r.report.Denials) != 0 {
		t.Errorf("denials:\n%s", r.report.denialList())
	}
	if r.report.Counts.Execs < 2 {
		t.Errorf("counts.execs = %d, want >= 2 (python and touch)", r.report.Counts.Execs)
	}
}

// TestNetLoopback: --net loopback lets a connection to 127.0.0.1 through.
func TestNetLoopback(t *testing.T) {
	t.Parallel()
	w := &world{t: t, sbx: realDir(t), host: realDir(t)}
	port := tcpListener(w)
	r := runTraced(t, w.sbx, runEnv(t, w.sbx), []string{"--net", "loopback"},
		python, pyScript("escape.py"), "tcp-connect", "127.0.0.1", strconv.Itoa(port))
	if res := resultOf(r.stdout); res != "ok" {
		t.Errorf("connect under --net loopback: %q\nreport:\n%s\nstderr:\n%s", res, r.report.denialList(), r.stderr)
	}
	if got, why := w.escaped(r); !got {
		t.Errorf("listener got nothing: %s", why)
	} else if !strings.Contains(why, "ESCAPED") {
		t.Errorf("listener: %s, want the payload", why)
	}
}

// TestAuditMode: --mode audit lets the write happen and reports it.
func TestAuditMode(t *testing.T) {
	t.Parallel()
	w := &world{t: t, sbx: realDir(t), host: realDir(t)}
	w.populate()
	victim := w.p("f")
	r := runTraced(t, w.sbx, runEnv(t, w.sbx), []string{"--mode", "audit"}, python, pyScript("escape.py"), "open-w", victim)
	if res := resultOf(r.stdout); res != "ok" || r.status != 0 {
		t.Errorf("audit mode: program saw %q, status %d; want ok, 0\nstderr:\n%s", res, r.status, r.stderr)
	}
	if got := readTrim(victim); got != "ESCAPED" {
		t.Errorf("audit mode: %s holds %q, want the write to have happened", victim, got)
	}
	found := false
	for _, e := range r.report.Denials {
		if e.Decision == "audit" && e.hasResolved(victim) && contains(writeKinds, e.Kind) {
			found = true
		}
		if e.Decision == "deny" {
			t.Errorf("audit mode denied: %s", e)
		}
	}
	if !found {
		t.Errorf("no audit event naming %s:\n%s", victim, r.report.denialList())
	}
	ok := false
	for _, l := range noticeLines(r.stderr) {
		ok = ok || (strings.HasPrefix(l, "tracecell: would block ") && strings.Contains(l, victim))
	}
	if !ok {
		t.Errorf("no 'would block' notice naming %s; stderr:\n%s", victim, r.stderr)
	}
}

// TestExitStatus: tracecell exits like the command (or 124/126/127).
func TestExitStatus(t *testing.T) {
	cases := []struct {
		name   string
		flags  []string
		argv   func(sbx string) []string
		status int
		check  func(t *testing.T, sbx string, r result)
	}{
		{name: "exit-3", status: 3,
			argv: func(string) []string { return []string{python, "-c", "import sys; sys.exit(3)"} },
			check: func(t *testing.T, _ string, r result) {
				if r.report.Exit.Code != 3 || r.report.Exit.Signal != "" {
					t.Errorf("report exit %+v, want code 3", r.report.Exit)
				}
			}},
		{name: "kill-9-self", status: 137,
			argv: func(string) []string { return []string{python, "-c", "import os; os.kill(os.getpid(), 9)"} },
			check: func(t *testing.T, _ string, r result) {
				if r.report.Exit.Signal != "SIGKILL" {
					t.Errorf("report exit %+v, want signal SIGKILL", r.report.Exit)
				}
			}},
		{name: "timeout-kills-tree", status: 124, flags: []string{"--timeout", "1s"},
			argv: func(sbx string) []string {
				// A parent and a forked child, both asleep; both pids go to a file.
				code := `import os, time
pid = os.fork()
if pid == 0:
    time.sleep(60)
    os._exit(0)
with open("pids", "w") as f:
    f.write(f"{os.getpid()} {pid}")
time.sleep(60)`
				return []string{python, "-c", code}
			},
			check: func(t *testing.T, sbx string, r result) {
				if !r.report.Exit.TimedOut {
					t.Errorf("report exit %+v, want timed_out", r.report.Exit)
				}
				if r.wall > 20*time.Second {
					t.Errorf("took %v with --timeout 1s", r.wall)
				}
				b, err := os.ReadFile(filepath.Join(sbx, "pids"))
				if err != nil {
					t.Fatalf("the program did not start: %v", err)
				}
				for _, f := range strings.Fields(string(b)) {
					pid, _ := strconv.Atoi(f)
					deadline := time.Now().Add(5 * time.Second)
					for procState(pid) != "" && procState(pid) != "Z" && time.Now().Before(deadline) {
						time.Sleep(50 * time.Millisecond)
					}
					if st := procState(pid); st != "" && st != "Z" {
						t.Errorf("pid %d of the tree is still alive (state %s) after the timeout", pid, st)
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}},
		{name: "not-found-absolute", status: 127,
			argv: func(sbx string) []string { return []string{filepath.Join(sbx, "no-such-program")} }},
		{name: "not-found-path", status: 127,
			argv: func(string) []string { return []string{"tracecell-no-such-command"} }},
		{name: "not-executable", status: 126,
			argv: func(sbx string) []string {
				p := filepath.Join(sbx, "script.txt")
				if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
					panic(err)
				}
				return []string{p}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sbx := realDir(t)
			r := runTraced(t, sbx, runEnv(t, sbx), c.flags, c.argv(sbx)...)
			if r.status != c.status {
				t.Errorf("status %d, want %d\nstderr:\n%s", r.status, c.status, r.stderr)
			}
			if r.report.Exit.Status != r.status {
				t.Errorf("report exit.status %d, tracecell exited %d", r.report.Exit.Status, r.status)
			}
			if c.check != nil {
				c.check(t, sbx, r)
			}
		})
	}
}

// TestListen: listen is allowed on a socket whose bind was checked and
// succeeded (an inet socket bound to loopback under --net loopback, an
// AF_UNIX socket in the sandbox), and denied on one that a failed bind left
// unbound, which the kernel would bind to every interface.
func TestListen(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		name, net string
		args      func(w *world) []string
		want      string // result line
		serves    bool   // an outside client gets the payload
	}{
		{"loopback bound", "loopback", func(w *world) []string {
			return []string{"tcp-bind-listen", "127.0.0.1", "0", w.s("port")}
		}, "ok", true},
		{"bind failed, then listen", "loopback", func(w *world) []string {
			return []string{"tcp-bind-listen", "127.0.0.1", busyPort, w.s("port")}
		}, "errno=EACCES", false},
		{"unix in the sandbox", "deny", func(w *world) []string {
			return []string{"unix-listen", w.s("srv.sock")}
		}, "ok", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &world{t: t, sbx: realDir(t), host: realDir(t)}
			args := tc.args(w)
			got := make(chan string, 1)
			go func() {
				for i := 0; i < 250; i++ {
					time.Sleep(20 * time.Millisecond)
					b, err := os.ReadFile(w.s("port"))
					if err != nil {
						continue
					}
					c, err := net.DialTimeout("tcp", "127.0.0.1:"+string(b), time.Second)
					if err != nil {
						got <- err.Error()
						return
					}
					c.SetReadDeadline(time.Now().Add(2 * time.Second))
					buf := make([]byte, 64)
					n, _ := c.Read(buf)
					c.Close()
					got <- string(buf[:n])
					return
				}
				got <- "no port"
			}()
			r := runTraced(t, w.sbx, runEnv(t, w.sbx), []string{"--net", tc.net},
				append([]string{python, pyScript("escape.py")}, args...)...)
			if res := resultOf(r.stdout); res != tc.want {
				t.Fatalf("result %q, want %q\nstdout:\n%s\nreport:\n%s", res, tc.want, r.stdout, r.report.denialList())
			}
			if tc.name == "unix in the sandbox" {
				if len(r.report.Denials) != 0 {
					t.Errorf("denials: %s", r.report.denialList())
				}
				return
			}
			served := <-got
			if (served == "ESCAPED\n") != tc.serves {
				t.Errorf("outside client: %q, want served=%v", served, tc.serves)
			}
			if !tc.serves {
				found := false
				for _, e := range r.report.Denials {
					found = found || (e.Syscall == "listen" && e.Kind == "bind")
				}
				if !found {
					t.Errorf("no listen denial in the report:\n%s", r.report.denialList())
				}
			}
		})
	}
}

// TestDenyReadParentRename: a deny-read file inside the sandbox cannot be
// made readable by renaming a directory above it.
func TestDenyReadParentRename(t *testing.T) {
	t.Parallel()
	sbx := realDir(t)
	mkdir(t, filepath.Join(sbx, "conf"))
	writeFile(t, filepath.Join(sbx, "conf", ".env"), "SECRET\n", 0o600)
	script := `import os, sys
try:
    os.rename(sys.argv[1] + "/conf", sys.argv[1] + "/c2")
    print("result: ok")
except OSError as e:
    print("result: errno=" + __import__("errno").errorcode[e.errno])
`
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--deny-read", filepath.Join(sbx, "conf", ".env")},
		python, "-c", script, sbx)
	if res := resultOf(r.stdout); res != "errno=EACCES" {
		t.Errorf("rename: %q, want errno=EACCES", res)
	}
	if _, err := os.Stat(filepath.Join(sbx, "conf", ".env")); err != nil {
		t.Errorf("the directory moved: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(sbx, "c2")); err == nil {
		t.Error("c2 exists")
	}
	found := false
	for _, e := range r.report.Denials {
		found = found || (e.Kind == "rename" && e.Rule == "deny-read" && e.hasResolved(filepath.Join(sbx, "conf")))
	}
	if !found {
		t.Errorf("no deny-read rename denial naming %s/conf:\n%s", sbx, r.report.denialList())
	}
}
