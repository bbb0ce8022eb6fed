package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/syncbuf"
	"github.com/tracecell/tracecell/policy"
)

// TestRealPythonWrapper: `tracecell serve --python WRAPPER`, WRAPPER a
// "#!/usr/bin/env python3" script, starts (Run's probe worker starts through
// env's one exec of python3, the start chain) and runs code in sessions and
// one-shot; the session's own exec of the wrapper or of python3 is refused.
func TestRealPythonWrapper(t *testing.T) {
	needPython(t)
	dir, err := os.MkdirTemp("", "tc-wrap-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The wrapper runs the script the worker-host names last (worker.py)
	// in the interpreter env started.
	wrapper := filepath.Join(dir, "envpython")
	src := "#!/usr/bin/env python3\n" +
		"import runpy, sys\n" +
		"sys.argv = sys.argv[-1:]\n" +
		"runpy.run_path(sys.argv[0], run_name='__main__')\n"
	if err := os.WriteFile(wrapper, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	logs := &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		log := zerolog.New(logs)
		done <- Run(ctx, Options{
			Listen: "unix:" + sock, StateDir: filepath.Join(dir, "state"), PoolSize: 1,
			Python: wrapper,
			// env looks python3 up in the tree's PATH; the tester's own may
			// put a version manager's shims first.
			Settings: config.Settings{Env: map[string]string{"PATH": "/usr/bin:/bin"}},
			Starter:  RealStarter(log), Log: log, Ready: func(a string) { ready <- a },
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve --python %s did not start: %v", wrapper, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve --python %s not ready after 30s: %s", wrapper, logs)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	post := func(path, body string) (int, []byte) {
		t.Helper()
		resp, err := c.Post("http://x"+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	execute := func(path, code string) resultJSON {
		t.Helper()
		st, b := post(path, jsonf(`{"code":%q}`, code))
		if st != 200 {
			t.Fatalf("POST %s %q: %d %s", path, code, st, b)
		}
		var r resultJSON
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := execute("/v1/execute", "print(1)"); r.Stdout != "1\n" || r.Error != nil {
		t.Fatalf("one-shot print(1): %+v", r)
	}
	if st, b := post("/v1/sessions", `{"id":"w"}`); st != 201 {
		t.Fatalf("create: %d %s", st, b)
	}
	if r := execute("/v1/sessions/w/execute", "print(1)"); r.Stdout != "1\n" || r.Error != nil {
		t.Fatalf("session print(1): %+v", r)
	}
	// The chain was the start's: the session's code is refused the same execs.
	for _, prog := range []string{wrapper, "/usr/bin/python3"} {
		code := fmt.Sprintf("import os\ntry:\n    os.execv(%q, ['x', '-c', 'pass'])\nexcept PermissionError as e:\n    print('refused', e.errno)\n", prog)
		r := execute("/v1/sessions/w/execute", code)
		if r.Stdout != "refused 13\n" || r.SessionLost || len(r.Denials) != 1 || r.Denials[0].Rule != string(policy.RuleExecNotAllowed) {
			t.Errorf("exec of %s in the session: %+v", prog, r)
		}
	}
	if r := execute("/v1/sessions/w/execute", "print(2)"); r.Stdout != "2\n" {
		t.Fatalf("the session after the refused execs: %+v", r)
	}
}
