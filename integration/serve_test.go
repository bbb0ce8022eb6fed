package integration

// The session server (tracecell serve, tracecell mcp) run as the operator
// runs it: the binary, a state directory, a socket. What the sessions' code
// tries is checked outside: processes the test started, the server's own
// answers, files of other sessions.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracecell/tracecell/internal/syncbuf"
)

// served is one tracecell serve or mcp process.
type served struct {
	t      *testing.T
	cmd    *exec.Cmd
	state  string
	listen string // "unix:PATH" or "127.0.0.1:PORT"
	base   string // URL prefix
	c      *http.Client
	stderr *syncbuf.Buffer
	exited chan struct{}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer starts `tracecell sub` (serve or mcp) with its own state
// directory, listening on its default Unix socket (serve) or on a loopback
// TCP port (mcp, or serve with tcp set); env nil means the test's
// environment. It waits until /healthz answers.
func startServer(t *testing.T, sub string, env []string, args ...string) *served {
	return startServerOn(t, sub, sub == "mcp", env, args...)
}

func startServerOn(t *testing.T, sub string, tcp bool, env []string, args ...string) *served {
	t.Helper()
	if noPython != "" {
		t.Skip(noPython)
	}
	// Not t.TempDir: a socket path is at most 107 bytes, and test names
	// are long.
	dir, err := os.MkdirTemp("", "tc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	s := &served{t: t, state: filepath.Join(dir, "state"), stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	argv := []string{sub, "--state-dir", s.state, "--python", python, "--log-format", "json"}
	for _, a := range args {
		if a == "--listen" {
			t.Fatal("startServer chooses the listen address")
		}
	}
	if tcp {
		s.listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	} else {
		s.listen = "unix:" + filepath.Join(s.state, "tracecell.sock")
	}
	argv = append(argv, "--listen", s.listen)
	argv = append(argv, args...)
	s.cmd = exec.Command(tcBin, argv...)
	if env != nil {
		s.cmd.Env = env
	}
	s.cmd.Stderr = s.stderr
	s.cmd.Stdout = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
	if sock, ok := strings.CutPrefix(s.listen, "unix:"); ok {
		s.base = "http://tracecell"
		s.c = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	} else {
		s.base = "http://" + s.listen
		s.c = &http.Client{}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := s.c.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case <-s.exited:
			t.Fatalf("tracecell %s exited (%v) before it answered:\n%s", sub, s.cmd.ProcessState, s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracecell %s did not answer within 60s: %v\n%s", sub, err, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends a request; the body is JSON text or "".
func (s *served) do(method, path, body string) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.c.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v (server running: %v)\n%s", method, path, err, s.running(), s.stderr.String())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *served) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *served) create(id string) {
	s.t.Helper()
	if st, b := s.do("POST", "/v1/sessions", fmt.Sprintf(`{"id":%q}`, id)); st != 201 {
		s.t.Fatalf("create session %s: %d %s", id, st, b)
	}
}

// cellResult is the part of an execute response the tests read.
type cellResult struct {
	Stdout, Stderr string
	Result         *string
	Error          *struct{ Name, Message string }
	Denials        []struct {
		Syscall, Rule, Decision, Reason string
		Address                         string
		Paths                           []struct{ Given, Resolved string }
	}
	TimedOut    bool   `json:"timed_out"`
	SessionLost bool   `json:"session_lost"`
	LostReason  string `json:"lost_reason"`
}

func (r cellResult) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

func (r cellResult) result() string {
	if r.Result == nil {
		return "<nil>"
	}
	return *r.Result
}

func (r cellResult) errName() string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Name
}

// exec runs code in session id ("" for a one-shot run); timeout 0: the
// server's.
func (s *served) exec(id, code string, timeout float64) cellResult {
	s.t.Helper()
	path := "/v1/sessions/" + id + "/execute"
	if id == "" {
		path = "/v1/execute"
	}
	body := fmt.Sprintf(`{"code":%q}`, code)
	if timeout > 0 {
		body = fmt.Sprintf(`{"code":%q,"timeout":%g}`, code, timeout)
	}
	st, b := s.do("POST", path, body)
	if st != 200 {
		s.t.Fatalf("execute %q: %d %s", code, st, b)
	}
	var r cellResult
	if err := json.Unmarshal(b, &r); err != nil {
		s.t.Fatalf("execute: %v: %s", err, b)
	}
	return r
}

// startSleeper starts a process outside every tree; the channel is closed
// when it exits.
func startSleeper(t *testing.T) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, exited
}

// TestServeForgedWorkerPid (issue 16.3): session code plants start-up code
// in its user site-packages (HOME is the sandbox) that makes the next
// worker's hello name another process: a sleeper outside, or the server
// itself. After a reset, a timeout interrupts the worker and nothing else:
// the sleeper is alive and the server serves.
func TestServeForgedWorkerPid(t *testing.T) {
	s := startServer(t, "serve", nil, "--pool-size", "0")
	for _, c := range []struct {
		name, file, text string
		server           bool // the forged pid is the server's, else a sleeper's outside
	}{
		{"usercustomize names a process outside", "usercustomize.py", "import os\nos.getpid = lambda: %d\n", false},
		{".pth names the server", "zz-forge.pth", "import os; os.getpid = lambda: %d\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sleeper, sleeperExited := startSleeper(t)
			pid := sleeper.Process.Pid
			if c.server {
				pid = s.cmd.Process.Pid
			}
			id := "forge" + strings.Fields(c.name)[0][:3]
			s.create(id)
			plant := fmt.Sprintf("import os, site\nd = site.getusersitepackages()\nos.makedirs(d, exist_ok=True)\n"+
				"open(os.path.join(d, %q), 'w').write(%q)\nd", c.file, fmt.Sprintf(c.text, pid))
			if r := s.exec(id, plant, 0); r.Error != nil || !strings.Contains(r.result(), s.state) {
				t.Fatalf("plant: %s", r)
			}
			if st, b := s.do("POST", "/v1/sessions/"+id+"/reset", "{}"); st != 200 {
				t.Fatalf("reset: %d %s", st, b)
			}
			r := s.exec(id, "import time\ntime.sleep(30)", 1)
			select {
			case <-sleeperExited:
				t.Fatalf("the process outside (pid %d) was signalled at the timeout: %v", sleeper.Process.Pid, sleeper.ProcessState)
			case <-time.After(300 * time.Millisecond):
			}
			if !s.running() {
				t.Fatalf("the server exited after the timeout:\n%s", s.stderr.String())
			}
			if st, b := s.do("GET", "/v1/sessions", ""); st != 200 || !strings.Contains(string(b), id) {
				t.Fatalf("the server after the timeout: %d %s", st, b)
			}
			if !r.TimedOut || r.SessionLost || r.errName() != "KeyboardInterrupt" {
				t.Errorf("the timeout did not interrupt the worker itself: %s", r)
			}
		})
	}
}

// readmePolicies returns the policy files the READMEs' shell examples
// write (cat > NAME.yaml <<'END' ... END), by README and name: the test
// runs them verbatim, so the READMEs and the code cannot drift apart.
func readmePolicies(t *testing.T) map[string]string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^cat > (\S+\.yaml) <<'(\w+)'\n((?s:.*?))\n(\w+)$`)
	out := map[string]string{}
	for _, readme := range []string{"README.md", "README.ko.md"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, readme))
		if err != nil {
			t.Fatalf("the README's policies: %v", err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if m[2] != m[4] {
				t.Fatalf("%s heredoc %s: ends with %s, not %s", readme, m[1], m[4], m[2])
			}
			out[readme+":"+m[1]] = m[3] + "\n"
		}
		for _, want := range []string{"policy.yaml", "gpt-oss.yaml"} {
			if out[readme+":"+want] == "" {
				t.Fatalf("%s has no `cat > %s <<'...'` policy (found %d: %v)", readme, want, len(out), out)
			}
		}
	}
	return out
}

// envWith is the test's environment with HOME replaced (or removed: "").
func envWith(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	if home != "" {
		env = append(env, "HOME="+home)
	}
	return env
}

// TestServeReadmePolicies (issue 17.1): the README's session and vLLM
// policies, which deny ~/.ssh, start serve and mcp, run a cell, and deny
// the server user's ~/.ssh (not the sandbox's, the worker's HOME).
func TestServeReadmePolicies(t *testing.T) {
	home := realDir(t)
	secret := filepath.Join(home, ".ssh", "id_test")
	mkdir(t, filepath.Dir(secret))
	writeFile(t, secret, "PRIVATE KEY", 0o600)
	os.Chmod(home, 0o755)
	for name, text := range readmePolicies(t) {
		pol := filepath.Join(realDir(t), filepath.Base(strings.ReplaceAll(name, ":", "-")))
		writeFile(t, pol, text, 0o644)
		for _, sub := range []string{"serve", "mcp"} {
			t.Run(name+"/"+sub, func(t *testing.T) {
				s := startServer(t, sub, envWith(home), "--policy", pol, "--pool-size", "0")
				code := fmt.Sprintf("try:\n    open(%q).read()\nexcept PermissionError as e:\n    print('denied', e.errno)\nprint(6 * 7)", secret)
				var out string
				if sub == "serve" {
					r := s.exec("", code, 0)
					out = r.Stdout
					if len(r.Denials) == 0 || r.Denials[0].Rule != "deny-read" || r.Denials[0].Paths[0].Resolved != secret {
						t.Errorf("the read of %s: %s", secret, r)
					}
				} else {
					out = mcpCall(t, s, code)
				}
				if !strings.Contains(out, "denied 13") || !strings.Contains(out, "42") || strings.Contains(out, "PRIVATE") {
					t.Errorf("the cell under %s: %q\n%s", name, out, s.stderr.String())
				}
			})
		}
	}
}

// mcpCall runs code through the MCP python tool (Streamable HTTP) in a
// connection of its own and returns the text of the result.
func mcpCall(t *testing.T, s *served, code string) string {
	t.Helper()
	cs := mcpConnect(t, s)
	defer cs.Close()
	return mcpPython(t, s, cs, code)
}

// mcpConnect opens an MCP connection (one Python session: the
// connection's) to s.
func mcpConnect(t *testing.T, s *served) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v\n%s", err, s.stderr.String())
	}
	return cs
}

// mcpPython calls the python tool on cs and returns the text of the result.
func mcpPython(t *testing.T, s *served, cs *mcp.ClientSession, code string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "python", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatalf("MCP python: %v\n%s", err, s.stderr.String())
	}
	var out bytes.Buffer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out.WriteString(tc.Text)
		}
	}
	return out.String()
}

// TestMCPForgedWorkerPid (issue 16.3 through MCP, by the model alone): the
// code plants a .pth naming a process outside, makes the worker restart by
// ignoring the interrupt past the grace period, and times out again: the
// outside process lives, the server serves.
func TestMCPForgedWorkerPid(t *testing.T) {
	s := startServer(t, "mcp", nil, "--pool-size", "0", "--exec-timeout", "1s")
	sleeper, sleeperExited := startSleeper(t)
	cs := mcpConnect(t, s)
	defer cs.Close()
	plant := fmt.Sprintf("import os, site\nd = site.getusersitepackages()\nos.makedirs(d, exist_ok=True)\n"+
		"open(os.path.join(d, 'zz-forge.pth'), 'w').write('import os; os.getpid = lambda: %d\\n')\nprint('planted', d)", sleeper.Process.Pid)
	if out := mcpPython(t, s, cs, plant); !strings.Contains(out, "planted") {
		t.Fatalf("plant: %s", out)
	}
	// Past the grace period: the worker is killed and restarted on the
	// same sandbox, where the .pth now is.
	out := mcpPython(t, s, cs, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(30)")
	if !strings.Contains(strings.ToLower(out), "lost") && !strings.Contains(strings.ToLower(out), "restart") {
		t.Fatalf("the worker was not restarted: %s", out)
	}
	mcpPython(t, s, cs, "import time\ntime.sleep(30)")
	select {
	case <-sleeperExited:
		t.Fatalf("the process outside (pid %d) was signalled at the timeout: %v", sleeper.Process.Pid, sleeper.ProcessState)
	case <-time.After(300 * time.Millisecond):
	}
	if !s.running() {
		t.Fatalf("the server exited:\n%s", s.stderr.String())
	}
	if out := mcpPython(t, s, cs, "print(6 * 7)"); !strings.Contains(out, "42") {
		t.Fatalf("after the timeout: %s", out)
	}
}

// TestServeStartupFailure (issue 17.1): a server whose workers cannot start
// says so at start-up, in one line, and exits non-zero without listening.
func TestServeStartupFailure(t *testing.T) {
	if noPython != "" {
		t.Skip(noPython)
	}
	dir := realDir(t)
	pol := filepath.Join(dir, "home.yaml")
	writeFile(t, pol, "deny_read: [~/.ssh]\n", 0o644)
	noPy := filepath.Join(dir, "no-such-python3")
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no interpreter", nil, []string{"--python", noPy}, noPy},
		{"~ without HOME", envWith(""), []string{"--policy", pol}, "~/.ssh"},
	} {
		for _, sub := range []string{"serve", "mcp"} {
			t.Run(c.name+"/"+sub, func(t *testing.T) {
				dir, err := os.MkdirTemp("", "tc")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(dir)
				state := filepath.Join(dir, "state")
				listen := "unix:" + filepath.Join(state, "s.sock")
				if sub == "mcp" {
					listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
				}
				argv := append([]string{sub, "--state-dir", state, "--listen", listen, "--pool-size", "0", "--python", python}, c.args...)
				cmd := exec.Command(tcBin, argv...)
				cmd.Env = c.env
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if err == nil {
						t.Fatalf("exit 0; want a failure:\n%s", stderr.String())
					}
				case <-time.After(30 * time.Second):
					cmd.Process.Kill()
					<-done
					t.Fatalf("still running 30s after the start, its workers unable to start:\n%s", stderr.String())
				}
				var last string
				for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
					if strings.Contains(l, "listening") {
						t.Errorf("it said it listens: %s", l)
					}
					last = l
				}
				if !strings.HasPrefix(last, "tracecell: ") || !strings.Contains(last, c.want) {
					t.Errorf("last line %q: want one line starting \"tracecell: \" that names %s", last, c.want)
				}
			})
		}
	}
}

// TestServeOwnSocketUnreachable (issue 16.4): whatever the net mode, the
// code of a session cannot reach the server's own listener, Unix socket or
// TCP port, and so cannot list the sessions, create one, or run code in
// another. Ground truth from outside: no session was created, and the
// other session's secret was not disclosed.
func TestServeOwnSocketUnreachable(t *testing.T) {
	for _, c := range []struct {
		name, sub, net string
		tcp            bool
	}{
		{"serve unix net allow", "serve", "allow", false},
		{"serve tcp net loopback", "serve", "loopback", true},
		{"serve tcp net allow", "serve", "allow", true},
		{"mcp tcp net allow", "mcp", "allow", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServerOn(t, c.sub, c.tcp, nil, "--pool-size", "0", "--net", c.net)
			s.create("victim")
			if r := s.exec("victim", "secret = 'sk-victim-' + 'x' * 3", 0); r.Error != nil {
				t.Fatalf("victim: %s", r)
			}
			s.create("attacker")
			var addrs []string
			if sock, ok := strings.CutPrefix(s.listen, "unix:"); ok {
				addrs = []string{fmt.Sprintf("(socket.AF_UNIX, %q)", sock)}
			} else {
				_, port, _ := net.SplitHostPort(s.listen)
				addrs = []string{
					fmt.Sprintf("(socket.AF_INET, ('127.0.0.1', %s))", port),
					fmt.Sprintf("(socket.AF_INET, ('0.0.0.0', %s))", port),
					fmt.Sprintf("(socket.AF_INET6, ('::ffff:127.0.0.1', %s))", port),
				}
			}
			for i, a := range addrs {
				for _, how := range []string{"connect", "sendto"} {
					if how == "sendto" && !c.tcp {
						continue // sendto on an unconnected stream socket: ENOTCONN for AF_UNIX
					}
					t.Run(fmt.Sprintf("%s %d", how, i), func(t *testing.T) {
						id := fmt.Sprintf("evil%d%s", i, how)
						body := fmt.Sprintf(`{"id":%q}`, id)
						req := fmt.Sprintf("POST /v1/sessions HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
						send := "s.connect(addr)\n    s.sendall(req)"
						if how == "sendto" {
							// TCP Fast Open: sendto with an address connects.
							send = "s.sendto(req, socket.MSG_FASTOPEN, addr)"
						}
						code := fmt.Sprintf("import socket\nfam, addr = %s\nreq = %q.encode()\ns = socket.socket(fam, socket.SOCK_STREAM)\n"+
							"try:\n    %s\n    s.settimeout(5)\n    print('reply', s.recv(65536))\nexcept OSError as e:\n    print('refused', e.errno)", a, req, send)
						r := s.exec("attacker", code, 0)
						if st, b := s.do("GET", "/v1/sessions", ""); st != 200 || strings.Contains(string(b), id) {
							t.Fatalf("the code's request reached the server: it created session %s (%d %s); output %s", id, st, b, r)
						}
						if !strings.Contains(r.Stdout, "refused 13") {
							t.Errorf("want EACCES: %s", r)
						}
						found := false
						for _, d := range r.Denials {
							found = found || (d.Rule == "never-reachable" && d.Decision == "deny")
						}
						if !found {
							t.Errorf("no never-reachable denial reported: %s", r)
						}
					})
				}
			}
			// What the code would have asked for: the victim's variable.
			steal := "import socket\n"
			if sock, ok := strings.CutPrefix(s.listen, "unix:"); ok {
				steal += fmt.Sprintf("s = socket.socket(socket.AF_UNIX)\ns.connect(%q)\n", sock)
			} else {
				_, port, _ := net.SplitHostPort(s.listen)
				steal += fmt.Sprintf("s = socket.create_connection(('127.0.0.1', %s))\n", port)
			}
			body := `{"code":"secret"}`
			steal += fmt.Sprintf("s.sendall(%q.encode())\nprint(s.recv(65536))", fmt.Sprintf("POST /v1/sessions/victim/execute HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
			r := s.exec("attacker", steal, 0)
			if strings.Contains(r.Stdout+r.Stderr, "sk-victim-") {
				t.Fatalf("the victim's secret was disclosed: %s", r)
			}
			if r.errName() != "PermissionError" {
				t.Errorf("want PermissionError: %s", r)
			}
		})
	}
}

// TestServeSessionsShm: the sessions of one server share /dev/shm, but one
// session's POSIX shared memory (multiprocessing.shared_memory's shm_open)
// is not another's to read: the read is denied and reported, the bytes
// never reach the other session. Its maker reads it as before.
func TestServeSessionsShm(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skipf("no /dev/shm here: %v", err)
	}
	s := startServer(t, "serve", nil, "--pool-size", "0")
	s.create("maker")
	s.create("reader")
	name := fmt.Sprintf("tc-shm-%d", os.Getpid())
	path := filepath.Join("/dev/shm", name)
	t.Cleanup(func() { os.Remove(path) })
	mk := fmt.Sprintf("import _posixshmem, os, mmap\nfd = _posixshmem.shm_open(%q, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)\n"+
		"os.ftruncate(fd, 4096)\nm = mmap.mmap(fd, 4096)\nm[:16] = b'sk-shm-secret-42'\nopen(%q, 'rb').read(16)", "/"+name, path)
	if r := s.exec("maker", mk, 0); r.Error != nil || r.result() != "b'sk-shm-secret-42'" || len(r.Denials) != 0 {
		t.Fatalf("the maker's own shared memory: %s", r)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(b, []byte("sk-shm-secret-42")) {
		t.Fatalf("the shared memory object outside: %v %q", err, b[:min(len(b), 16)])
	}
	for _, c := range []struct{ name, code string }{
		{"open", fmt.Sprintf("open(%q, 'rb').read(16)", path)},
		{"shm_open read-only", fmt.Sprintf("import _posixshmem, os\nfd = _posixshmem.shm_open(%q, os.O_RDONLY, 0)\nos.read(fd, 16)", "/"+name)},
		{"listing then open", "import os\n[open('/dev/shm/' + n, 'rb').read(16) for n in os.listdir('/dev/shm') if n.startswith('tc-shm-')]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.exec("reader", c.code, 0)
			if strings.Contains(r.Stdout+r.result()+r.String(), "sk-shm-secret") {
				t.Fatalf("another session read the shared memory: %s", r)
			}
			if r.errName() != "PermissionError" || len(r.Denials) == 0 || r.Denials[0].Rule != "scratch-not-owned" || r.Denials[0].Paths[0].Resolved != path {
				t.Fatalf("want a reported scratch-not-owned denial of %s: %s", path, r)
			}
		})
	}
	// Shared memory that has no name: a memfd (or an unlinked file) of the
	// maker's worker, reached through its /proc/<pid>/fd.
	r := s.exec("maker", "import os\nmfd = os.memfd_create('tcmem')\nos.write(mfd, b'sk-memfd-secret-7')\n(os.getpid(), mfd)", 0)
	var pid, fd int
	if _, err := fmt.Sscanf(r.result(), "(%d, %d)", &pid, &fd); err != nil {
		t.Fatalf("memfd: %s", r)
	}
	memfd := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	r = s.exec("reader", fmt.Sprintf("open(%q, 'rb').read()", memfd), 0)
	if strings.Contains(r.String(), "sk-memfd-secret") {
		t.Fatalf("another session read the maker's memfd through %s: %s", memfd, r)
	}
	if r.errName() != "PermissionError" || len(r.Denials) == 0 || r.Denials[0].Rule != "proc-read" {
		t.Fatalf("want a reported proc-read denial of %s: %s", memfd, r)
	}
	if r := s.exec("maker", fmt.Sprintf("open('/proc/self/fd/%d', 'rb').read()", fd), 0); r.result() != "b'sk-memfd-secret-7'" {
		t.Fatalf("the maker's own memfd: %s", r)
	}
	// The reader's own semaphores and queues (sem_open in /dev/shm) work.
	code := "import multiprocessing as mp\nctx = mp.get_context('fork')\nq = ctx.Queue()\nl = ctx.Lock()\n" +
		"def f(x):\n    with l:\n        q.put(x * 2)\nps = [ctx.Process(target=f, args=(i,)) for i in range(3)]\n" +
		"[p.start() for p in ps]\n[p.join() for p in ps]\nsorted(q.get(timeout=10) for _ in ps)"
	if r = s.exec("reader", code, 0); r.Error != nil || r.result() != "[0, 2, 4]" || len(r.Denials) != 0 {
		t.Fatalf("the reader's own multiprocessing: %s", r)
	}
}
