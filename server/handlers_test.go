package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/config"
)

type testEnv struct {
	t       *testing.T
	s       *Server
	hs      *httptest.Server
	fs      *fakeStarter
	state   string
	outside string // a canary directory outside every sandbox
	token   string
}

func newEnv(t *testing.T, mut func(*Options)) *testEnv {
	t.Helper()
	base := t.TempDir()
	e := &testEnv{t: t, fs: &fakeStarter{}, state: filepath.Join(base, "state"), outside: filepath.Join(base, "outside")}
	if err := os.MkdirAll(e.outside, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.outside, "canary.txt"), []byte("canary"), 0o644)
	o := Options{StateDir: e.state, Starter: e.fs.start, PoolSize: 1, IdleTimeout: -1, Log: zerolog.Nop(),
		ExecTimeout: 10 * time.Second}
	if mut != nil {
		mut(&o)
	}
	e.token = o.Token
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	e.hs = httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		e.hs.Close()
		s.Close()
		if n := e.fs.alive(); n != 0 {
			t.Errorf("%d fake workers still alive after Close", n)
		}
	})
	return e
}

// do sends a request and returns the status and the body.
func (e *testEnv) do(method, path, body string) (int, []byte) {
	e.t.Helper()
	st, b, err := e.tryDo(method, path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	return st, b
}

// tryDo is do for any goroutine: it returns a request that could not be
// made or sent as an error instead of failing the test, since t.Fatal
// must be called on the test's own goroutine.
func (e *testEnv) tryDo(method, path, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.hs.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

func (e *testEnv) create(id string) SessionInfo {
	e.t.Helper()
	st, b := e.do("POST", "/v1/sessions", fmt.Sprintf(`{"id":%q}`, id))
	if st != 201 {
		e.t.Fatalf("create %s: %d %s", id, st, b)
	}
	var in SessionInfo
	if err := json.Unmarshal(b, &in); err != nil {
		e.t.Fatal(err)
	}
	return in
}

func (e *testEnv) exec(id, code string) map[string]any {
	e.t.Helper()
	m, err := e.tryExec(id, code)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// tryExec is exec for any goroutine: a failed execution is returned as an
// error for the test goroutine to report.
func (e *testEnv) tryExec(id, code string) (map[string]any, error) {
	st, b, err := e.tryDo("POST", "/v1/sessions/"+id+"/execute", fmt.Sprintf(`{"code":%q}`, code))
	if err != nil {
		return nil, err
	}
	if st != 200 {
		return nil, fmt.Errorf("execute %q in %s: %d %s", code, id, st, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("execute %q in %s: %w", code, id, err)
	}
	return m, nil
}

// goExec runs exec on a goroutine of its own; the channel receives its
// failure (nil when it succeeded), which the test goroutine must report.
func (e *testEnv) goExec(id, code string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := e.tryExec(id, code)
		done <- err
	}()
	return done
}

func errCode(t *testing.T, b []byte) (string, string) {
	t.Helper()
	var eb errorBody
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		t.Fatalf("not a JSON error body: %s", b)
	}
	return eb.Error.Code, eb.Error.Message
}

func TestErrors(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxSessions = 3; o.MaxBody = 1 << 20 })
	e.create("a")
	if err := os.Symlink(e.outside, filepath.Join(e.sandboxOf("a"), "out")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(e.sandboxOf("a"), "sub"), 0o755)
	huge := `{"code":"` + strings.Repeat("x", 1<<20+10) + `"}`
	cases := []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"bad id chars", "POST", "/v1/sessions", `{"id":"a/b"}`, 400, "invalid_id", "session id"},
		{"id too long", "POST", "/v1/sessions", `{"id":"` + strings.Repeat("a", 129) + `"}`, 400, "invalid_id", "1 to 128"},
		{"id dotdot", "POST", "/v1/sessions", `{"id":".."}`, 400, "invalid_id", ""},
		{"id exists", "POST", "/v1/sessions", `{"id":"a"}`, 409, "session_exists", "exists already"},
		{"id wrong type", "POST", "/v1/sessions", `{"id":5}`, 400, "invalid_field", `"id"`},
		{"unknown field", "POST", "/v1/sessions", `{"name":"x"}`, 400, "invalid_field", `"name"`},
		{"malformed json", "POST", "/v1/sessions", `{"id":`, 400, "invalid_json", "not valid JSON"},
		{"trailing data", "POST", "/v1/sessions/a/execute", `{"code":"1"} {}`, 400, "invalid_json", "after the JSON"},
		{"empty execute body", "POST", "/v1/sessions/a/execute", ``, 400, "invalid_json", "empty"},
		{"huge body", "POST", "/v1/sessions/a/execute", huge, 413, "body_too_large", "larger than 1048576"},
		{"timeout above max", "POST", "/v1/sessions/a/execute", `{"code":"1","timeout":600}`, 400, "invalid_field", "maximum of 10s"},
		{"timeout negative", "POST", "/v1/sessions/a/execute", `{"code":"1","timeout":-1}`, 400, "invalid_field", "above 0"},
		{"timeout string", "POST", "/v1/sessions/a/execute", `{"code":"1","timeout":"5"}`, 400, "invalid_field", "timeout"},
		{"unknown session execute", "POST", "/v1/sessions/nope/execute", `{"code":"1"}`, 404, "session_not_found", `"nope"`},
		{"unknown session get", "GET", "/v1/sessions/nope", ``, 404, "session_not_found", ""},
		{"unknown session delete", "DELETE", "/v1/sessions/nope", ``, 404, "session_not_found", ""},
		{"unknown session reset", "POST", "/v1/sessions/nope/reset", ``, 404, "session_not_found", ""},
		{"unknown session files", "GET", "/v1/sessions/nope/files", ``, 404, "session_not_found", ""},
		{"invalid id in path", "GET", "/v1/sessions/a%20b", ``, 400, "invalid_id", ""},
		{"no such endpoint", "GET", "/v2/x", ``, 404, "no_such_endpoint", "GET /v2/x"},
		{"oneshot malformed", "POST", "/v1/execute", `[1,2`, 400, "invalid_json", ""},
		// downloads
		{"download dotdot", "GET", "/v1/sessions/a/files/..%2f..%2fetc%2fpasswd", ``, 400, "path_outside_sandbox", "'..'"},
		{"download raw dotdot (the mux cleans it away from the files route)", "GET", "/v1/sessions/a/files/../../../../etc/passwd", ``, 404, "no_such_endpoint", ""},
		{"download absolute outside", "GET", "/v1/sessions/a/files/%2Fetc%2Fpasswd", ``, 400, "path_outside_sandbox", "outside"},
		{"download through symlink", "GET", "/v1/sessions/a/files/out/canary.txt", ``, 403, "symlink_refused", "symbolic link"},
		{"download symlink itself", "GET", "/v1/sessions/a/files/out", ``, 403, "symlink_refused", ""},
		{"download missing", "GET", "/v1/sessions/a/files/nothing.txt", ``, 404, "file_not_found", ""},
		{"download directory", "GET", "/v1/sessions/a/files/sub", ``, 400, "is_a_directory", ""},
		// copies
		{"copy no source", "POST", "/v1/sessions/a/copy", `{}`, 400, "invalid_field", "source is required"},
		{"copy relative source", "POST", "/v1/sessions/a/copy", `{"source":"etc/hosts"}`, 400, "invalid_field", "absolute"},
		{"copy missing source", "POST", "/v1/sessions/a/copy", `{"source":"/nonexistent/x"}`, 404, "source_not_found", ""},
		{"copy dest dotdot", "POST", "/v1/sessions/a/copy", jsonf(`{"source":%q,"destination":"../x"}`, e.outside+"/canary.txt"), 400, "path_outside_sandbox", ""},
		{"copy dest deep dotdot", "POST", "/v1/sessions/a/copy", jsonf(`{"source":%q,"destination":"sub/../../x"}`, e.outside+"/canary.txt"), 400, "path_outside_sandbox", ""},
		{"copy dest absolute outside", "POST", "/v1/sessions/a/copy", jsonf(`{"source":%q,"destination":"/etc/passwd"}`, e.outside+"/canary.txt"), 400, "path_outside_sandbox", ""},
		{"copy dest through symlink", "POST", "/v1/sessions/a/copy", jsonf(`{"source":%q,"destination":"out/canary.txt"}`, "/etc/hostname"), 403, "symlink_refused", ""},
		{"copy dest into symlink dir", "POST", "/v1/sessions/a/copy", jsonf(`{"source":%q,"destination":"out/new/x"}`, "/etc/hostname"), 403, "symlink_refused", ""},
		{"copy dest sandbox itself", "POST", "/v1/sessions/a/copy", jsonf(`{"source":%q,"destination":"."}`, "/etc/hostname"), 400, "invalid_field", ""},
		{"copy of /", "POST", "/v1/sessions/a/copy", `{"source":"/"}`, 400, "invalid_field", "explicit destination"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := e.do(c.method, c.path, c.body)
			if st != c.status {
				t.Fatalf("status %d, want %d: %s", st, c.status, b)
			}
			code, msg := errCode(t, b)
			if code != c.code || !strings.Contains(msg, c.msg) {
				t.Fatalf("error %s %q, want %s containing %q", code, msg, c.code, c.msg)
			}
		})
	}
	e.checkCanary()
	// Max sessions: "a" plus two more, then 429.
	e.create("b")
	e.create("c")
	st, b := e.do("POST", "/v1/sessions", `{}`)
	if code, _ := errCode(t, b); st != 429 || code != "too_many_sessions" {
		t.Fatalf("over max sessions: %d %s", st, b)
	}
	st, b = e.do("POST", "/v1/execute", `{"code":"1"}`)
	if code, _ := errCode(t, b); st != 429 || code != "too_many_sessions" {
		t.Fatalf("one-shot over max sessions: %d %s", st, b)
	}
}

func jsonf(f string, a ...any) string { return fmt.Sprintf(f, a...) }

func (e *testEnv) sess(id string) *session {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.s.sessions[id]
}

func (e *testEnv) sandboxOf(id string) string {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.s.sessions[id].sandbox
}

// checkCanary proves nothing outside the sandboxes changed.
func (e *testEnv) checkCanary() {
	e.t.Helper()
	ents, err := os.ReadDir(e.outside)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "canary.txt" {
		var names []string
		for _, d := range ents {
			names = append(names, d.Name())
		}
		e.t.Fatalf("the canary directory outside the sandbox changed: %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(e.outside, "canary.txt")); string(b) != "canary" {
		e.t.Fatalf("the canary file outside the sandbox changed: %q", b)
	}
}

func TestSessionLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	in := e.create("agent-1.x_Y")
	if in.ID != "agent-1.x_Y" || in.Worker == nil || in.Worker.Sandbox != in.Sandbox {
		t.Fatalf("create: %+v", in)
	}
	if st, err := os.Stat(in.Sandbox); err != nil || st.Mode().Perm() != 0o700 || filepath.Dir(in.Sandbox) != e.s.opts.StateDir {
		t.Fatalf("sandbox %s: %v %v", in.Sandbox, st.Mode(), err)
	}
	e.exec(in.ID, "set:x=41")
	if r := e.exec(in.ID, "get:x"); r["result"] != "41" {
		t.Fatalf("state not kept: %v", r)
	}
	// Generated id.
	st, b := e.do("POST", "/v1/sessions", "")
	if st != 201 || !strings.Contains(string(b), `"id":"`+e.s.opts.CellID+`.s-`) {
		t.Fatalf("create without body: %d %s", st, b)
	}
	// List and describe.
	st, b = e.do("GET", "/v1/sessions", "")
	var list struct{ Sessions []SessionInfo }
	json.Unmarshal(b, &list)
	if st != 200 || len(list.Sessions) != 2 || list.Sessions[0].ID != in.ID {
		t.Fatalf("list: %d %s", st, b)
	}
	st, b = e.do("GET", "/v1/sessions/"+in.ID, "")
	var d SessionInfo
	json.Unmarshal(b, &d)
	if st != 200 || d.Executions != 2 || d.Busy || !d.Alive || d.Worker.WorkerPid == 0 {
		t.Fatalf("describe: %d %s", st, b)
	}
	// Denials flow through with the result shape.
	r := e.exec(in.ID, "deny:/etc/hosts")
	if den, _ := r["denials"].([]any); len(den) != 1 || r["error"].(map[string]any)["name"] != "PermissionError" {
		t.Fatalf("denial result: %v", r)
	}
	for _, k := range []string{"stdout", "stderr", "result", "error", "denials", "artifacts", "duration_ms", "timed_out", "session_lost", "truncated"} {
		if _, ok := r[k]; !ok {
			t.Errorf("result lacks %q: %v", k, r)
		}
	}
	// Delete removes the sandbox and kills the worker.
	if st, b := e.do("DELETE", "/v1/sessions/"+in.ID, ""); st != 204 {
		t.Fatalf("delete: %d %s", st, b)
	}
	if _, err := os.Stat(in.Sandbox); !os.IsNotExist(err) {
		t.Fatalf("sandbox %s left after delete: %v", in.Sandbox, err)
	}
	if st, _ := e.do("GET", "/v1/sessions/"+in.ID, ""); st != 404 {
		t.Fatalf("deleted session still there: %d", st)
	}
	// Metrics.
	_, b = e.do("GET", "/metrics", "")
	for _, want := range []string{
		"tracecell_sessions_active 1\n", "tracecell_sessions_created_total 2\n",
		`tracecell_executions_total{kind="session"} 3`, "tracecell_denials_total 1\n",
		"tracecell_execution_duration_seconds_count 3\n", `tracecell_execution_duration_seconds_bucket{le="+Inf"} 3`,
		"tracecell_pool_size 1\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
	if st, b := e.do("GET", "/healthz", ""); st != 200 || !strings.Contains(string(b), `"status":"ok"`) {
		t.Fatalf("healthz: %d %s", st, b)
	}
}

// TestDenialsMetricCountsUnlisted: tracecell_denials_total counts the
// denials a result only counts (past its list's cap), not just the listed
// ones: an operator alerting on it must see a flood as a flood.
func TestDenialsMetricCountsUnlisted(t *testing.T) {
	e := newEnv(t, nil)
	in := e.create("flood")
	r := e.exec(in.ID, "deny-past-cap")
	if r["denials_not_listed"] != float64(1500) {
		t.Fatalf("result: denials_not_listed %v", r["denials_not_listed"])
	}
	_, b := e.do("GET", "/metrics", "")
	if want := "tracecell_denials_total 1501\n"; !strings.Contains(string(b), want) {
		t.Errorf("metrics lack %q:\n%s", want, b)
	}
}

func TestBusyRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.create("b")
	busy := e.goExec("b", "sleep:400")
	deadline := time.Now().Add(2 * time.Second)
	for !e.sess("b").describe().Busy && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	st, b := e.do("POST", "/v1/sessions/b/execute", `{"code":"1"}`)
	if code, msg := errCode(t, b); st != 409 || code != "session_busy" || !strings.Contains(msg, "not queued") {
		t.Fatalf("second execute: %d %s", st, b)
	}
	st, b = e.do("POST", "/v1/sessions/b/reset", ``)
	if code, _ := errCode(t, b); st != 409 || code != "session_busy" {
		t.Fatalf("reset while busy: %d %s", st, b)
	}
	// Reads are not refused while busy.
	if st, _ := e.do("GET", "/v1/sessions/b/files", ""); st != 200 {
		t.Fatalf("files while busy: %d", st)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	if r := e.exec("b", "1"); r["result"] != "1" {
		t.Fatalf("after busy: %v", r)
	}
	// Other sessions run in parallel with a busy one.
	e.create("c")
	start := time.Now()
	var parallel []<-chan error
	for _, id := range []string{"b", "c"} {
		parallel = append(parallel, e.goExec(id, "sleep:300"))
	}
	for _, done := range parallel {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el > 550*time.Millisecond {
		t.Fatalf("two sessions did not run in parallel: %v", el)
	}
}

func TestLostWorkerRestarts(t *testing.T) {
	e := newEnv(t, nil)
	e.create("l")
	e.exec("l", "set:x=1")
	r := e.exec("l", "die")
	if r["session_lost"] != true || !strings.Contains(r["lost_reason"].(string), "SIGKILL; a fresh worker was started") {
		t.Fatalf("lost result: %v", r)
	}
	r = e.exec("l", "get:x")
	if r["session_lost"] != false || r["error"].(map[string]any)["name"] != "NameError" {
		t.Fatalf("after restart the namespace must be empty and execution work: %v", r)
	}
	if d := e.sess("l").describe(); d.Restarts != 1 || !d.Alive {
		t.Fatalf("describe after restart: %+v", d)
	}
	// A worker that dies while idle: the code is not run, a fresh worker starts.
	ss := e.sess("l")
	ss.mu.Lock()
	ss.w.(*fakeWorker).kill()
	ss.mu.Unlock()
	r = e.exec("l", "set:y=2")
	if r["session_lost"] != true || !strings.Contains(r["lost_reason"].(string), "NOT run") {
		t.Fatalf("idle death: %v", r)
	}
	if r := e.exec("l", "7"); r["result"] != "7" {
		t.Fatalf("after idle death: %v", r)
	}
	_, b := e.do("GET", "/metrics", "")
	if !strings.Contains(string(b), "tracecell_worker_restarts_total 2\n") || !strings.Contains(string(b), "tracecell_executions_session_lost_total 2\n") {
		t.Fatalf("metrics: %s", b)
	}
	// A failing restart is reported, and reset recovers.
	e.fs.fail.Store(true)
	e.exec("l", "die")
	st, b := e.do("POST", "/v1/sessions/l/execute", `{"code":"1"}`)
	if code, _ := errCode(t, b); st != 503 || code != "worker_start_failed" {
		t.Fatalf("execute with a failed restart: %d %s", st, b)
	}
	e.fs.fail.Store(false)
	time.Sleep(20 * time.Millisecond)
	if st, b := e.do("POST", "/v1/sessions/l/reset", ``); st != 200 {
		t.Fatalf("reset: %d %s", st, b)
	}
	if r := e.exec("l", "8"); r["result"] != "8" {
		t.Fatalf("after reset: %v", r)
	}
}

func TestTimeoutLowered(t *testing.T) {
	e := newEnv(t, nil)
	e.create("t")
	st, b := e.do("POST", "/v1/sessions/t/execute", `{"code":"sleep:5000","timeout":0.1}`)
	if st != 200 || !strings.Contains(string(b), `"timed_out":true`) {
		t.Fatalf("timeout: %d %s", st, b)
	}
}

func TestResetKeepsOrClearsFiles(t *testing.T) {
	e := newEnv(t, nil)
	e.create("r")
	sbx := e.sandboxOf("r")
	os.WriteFile(filepath.Join(sbx, "data.csv"), []byte("1,2"), 0o644)
	e.exec("r", "set:x=1")
	ss := e.sess("r")
	ss.mu.Lock()
	old := ss.w
	ss.mu.Unlock()
	if st, b := e.do("POST", "/v1/sessions/r/reset", ""); st != 200 {
		t.Fatalf("reset: %d %s", st, b)
	}
	if !old.(*fakeWorker).closed.Load() {
		t.Fatal("reset did not close the old worker")
	}
	if r := e.exec("r", "get:x"); r["error"] == nil {
		t.Fatalf("namespace survived a reset: %v", r)
	}
	if _, err := os.Stat(filepath.Join(sbx, "data.csv")); err != nil {
		t.Fatalf("reset lost the sandbox files: %v", err)
	}
	os.Symlink(e.outside, filepath.Join(sbx, "out"))
	if st, b := e.do("POST", "/v1/sessions/r/reset", `{"clear_sandbox":true}`); st != 200 {
		t.Fatalf("reset clear: %d %s", st, b)
	}
	if ents, _ := os.ReadDir(sbx); len(ents) != 0 {
		t.Fatalf("clear_sandbox left %d entries", len(ents))
	}
	e.checkCanary() // the symlink was removed, not followed
}

func TestOneshot(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.PoolSize = 2 })
	st, b := e.do("POST", "/v1/execute", `{"code":"hello"}`)
	if st != 200 || !strings.Contains(string(b), `"result":"hello"`) {
		t.Fatalf("one-shot: %d %s", st, b)
	}
	waitFor(t, "the pool to refill and the one-shot worker to be closed", func() bool {
		return e.fs.alive() == 2 && e.s.metrics.poolReady.Load() == 2
	})
	waitFor(t, "the one-shot sandbox to be removed (only the two pool sandboxes left)", func() bool {
		ents := stateEntries(e.s.opts.StateDir)
		if len(ents) != 2 {
			for _, d := range ents {
				t.Log(d.Name())
			}
		}
		return len(ents) == 2
	})
}

func TestKeepSandboxes(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KeepSandboxes = true })
	in := e.create("k")
	e.do("DELETE", "/v1/sessions/k", "")
	if _, err := os.Stat(in.Sandbox); err != nil {
		t.Fatalf("retention: sandbox removed: %v", err)
	}
}

func TestIdleReaping(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.IdleTimeout = 80 * time.Millisecond })
	in := e.create("idle")
	e.create("busy")
	busy := e.goExec("busy", "sleep:400")
	waitFor(t, "the idle session to be reaped", func() bool {
		st, _ := e.do("GET", "/v1/sessions/idle", "")
		return st == 410 // session_expired (cell.go)
	})
	if _, err := os.Stat(in.Sandbox); !os.IsNotExist(err) {
		t.Fatalf("reaped session's sandbox left: %v", err)
	}
	if st, _ := e.do("GET", "/v1/sessions/busy", ""); st != 200 {
		t.Fatal("a busy session was reaped")
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
}

func TestPoolUsedAndEmptyPool(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.PoolSize = 1 })
	waitFor(t, "the pool to fill", func() bool { return e.s.metrics.poolReady.Load() == 1 })
	e.fs.mu.Lock()
	first := e.fs.started[0]
	e.fs.mu.Unlock()
	in := e.create("p1")
	if in.Sandbox != first.cfg.Sandbox {
		t.Fatalf("the session did not take the pooled worker")
	}
	// A pooled worker that died while waiting is discarded, not handed out.
	waitFor(t, "the pool to refill", func() bool { return e.s.metrics.poolReady.Load() == 1 })
	e.s.pool.mu.Lock()
	dead := e.s.pool.ready[0].w.(*fakeWorker)
	e.s.pool.mu.Unlock()
	dead.kill()
	if in := e.create("p0"); in.Sandbox == dead.cfg.Sandbox || !in.Alive {
		t.Fatalf("a dead pooled worker was handed out: %+v", in)
	}
	if _, err := os.Stat(dead.cfg.Sandbox); !os.IsNotExist(err) {
		t.Fatalf("the dead pooled worker's sandbox is left: %v", err)
	}
	// With the pool empty, creation starts its own worker.
	in2 := e.create("p2")
	in3 := e.create("p3")
	if in2.Sandbox == in3.Sandbox {
		t.Fatal("two sessions share a sandbox")
	}
	// No pre-start may be in flight when starts begin to fail: one that
	// began before would land in the reopened pool and serve p4.
	waitFor(t, "the pool to refill and settle", func() bool {
		e.s.pool.mu.Lock()
		defer e.s.pool.mu.Unlock()
		return len(e.s.pool.ready) == 1 && e.s.pool.starting == 0
	})
	e.fs.fail.Store(true)
	e.s.pool.close() // drop the warm one; further starts fail
	e.s.pool.mu.Lock()
	e.s.pool.closed = false
	e.s.pool.mu.Unlock()
	st, b := e.do("POST", "/v1/sessions", `{"id":"p4"}`)
	if code, _ := errCode(t, b); st != 503 || code != "worker_start_failed" {
		t.Fatalf("create with failing starts: %d %s", st, b)
	}
	if st, _ := e.do("GET", "/v1/sessions/p4", ""); st != 404 {
		t.Fatal("a failed create left its id reserved")
	}
	e.fs.fail.Store(false)
}

func TestAuth(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Token = "s3cret" })
	e.create("a")
	for _, h := range []string{"", "Bearer wrong", "s3cret", "Bearer s3cret2", "bearer s3cret"} {
		req, _ := http.NewRequest("GET", e.hs.URL+"/v1/sessions", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if code, _ := errCode(t, b); resp.StatusCode != 401 || code != "unauthorized" || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("Authorization %q: %d %s", h, resp.StatusCode, b)
		}
	}
	resp, err := http.Get(e.hs.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz needs no token: %v %v", resp, err)
	}
	resp.Body.Close()
	if st, _ := e.do("GET", "/v1/sessions", ""); st != 200 {
		t.Fatalf("with the token: %d", st)
	}
}

func TestCopy(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	e := newEnv(t, func(o *Options) {
		o.Settings = config.Settings{DenyRead: []string{secret}}
		o.MaxCopySize = 1000
	})
	e.create("c")
	sbx := e.sandboxOf("c")
	os.MkdirAll(secret, 0o755)
	os.WriteFile(filepath.Join(secret, "id_rsa"), []byte("KEY"), 0o600)
	src := filepath.Join(base, "data")
	os.MkdirAll(filepath.Join(src, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(src, "top.txt"), []byte("top"), 0o644)
	os.WriteFile(filepath.Join(src, "a", "b", "deep.txt"), []byte("deep!"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(src, "a", "link"))
	os.Symlink(secret, filepath.Join(src, "secretlink"))
	os.Symlink(secret, filepath.Join(base, "innocent")) // a symlink to a denied tree

	// A denied source, directly and through a symlink.
	for _, p := range []string{filepath.Join(secret, "id_rsa"), secret, filepath.Join(base, "innocent", "id_rsa")} {
		st, b := e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q}`, p))
		if code, msg := errCode(t, b); st != 403 || code != "read_denied" || !strings.Contains(msg, "deny-read") {
			t.Fatalf("copy %s: %d %s", p, st, b)
		}
	}
	// Another session's sandbox is never a copy source.
	other := e.create("other")
	os.WriteFile(filepath.Join(other.Sandbox, "private.txt"), []byte("x"), 0o644)
	st, b := e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q}`, filepath.Join(other.Sandbox, "private.txt")))
	if code, msg := errCode(t, b); st != 403 || code != "read_denied" || !strings.Contains(msg, "other sessions") {
		t.Fatalf("copy from another session's sandbox: %d %s", st, b)
	}
	// A tree: symlinks skipped, nested dirs made.
	st, b = e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q,"destination":"in/data"}`, src))
	if st != 200 {
		t.Fatalf("copy tree: %d %s", st, b)
	}
	var rep copyReport
	json.Unmarshal(b, &rep)
	if rep.Files != 2 || rep.Bytes != 8 || rep.Directories != 3 || len(rep.Skipped) != 2 || rep.Destination != "in/data" {
		t.Fatalf("copy report: %s", b)
	}
	if got, _ := os.ReadFile(filepath.Join(sbx, "in/data/a/b/deep.txt")); string(got) != "deep!" {
		t.Fatalf("deep file: %q", got)
	}
	// A denied subtree inside a copied tree is skipped.
	st, b = e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q,"destination":"base"}`, base))
	if st != 200 || !strings.Contains(string(b), `"path":"secret","reason":"denied by policy`) {
		t.Fatalf("copy with a denied subtree: %d %s", st, b)
	}
	if _, err := os.Stat(filepath.Join(sbx, "base/secret")); !os.IsNotExist(err) {
		t.Fatal("the denied subtree was copied")
	}
	// A single file, default destination; overwriting replaces a symlink instead of following it.
	os.Symlink(filepath.Join(e.outside, "canary.txt"), filepath.Join(sbx, "top.txt"))
	st, b = e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q}`, filepath.Join(src, "top.txt")))
	if st != 200 || !strings.Contains(string(b), `"files":1`) {
		t.Fatalf("copy file: %d %s", st, b)
	}
	if fi, _ := os.Lstat(filepath.Join(sbx, "top.txt")); !fi.Mode().IsRegular() {
		t.Fatal("the symlink was not replaced by the copy")
	}
	// Absolute destination inside the sandbox.
	st, b = e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q,"destination":%q}`, filepath.Join(src, "top.txt"), sbx+"/abs.txt"))
	if st != 200 {
		t.Fatalf("absolute destination inside: %d %s", st, b)
	}
	// Size limit: nothing written.
	big := filepath.Join(base, "big.bin")
	os.WriteFile(big, make([]byte, 1001), 0o644)
	st, b = e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q}`, big))
	if code, _ := errCode(t, b); st != 413 || code != "copy_too_large" {
		t.Fatalf("too large: %d %s", st, b)
	}
	if _, err := os.Stat(filepath.Join(sbx, "big.bin")); !os.IsNotExist(err) {
		t.Fatal("a too-large copy wrote something")
	}
	// Destination is a directory.
	os.Mkdir(filepath.Join(sbx, "adir"), 0o755)
	os.WriteFile(filepath.Join(sbx, "adir", "keep"), nil, 0o644)
	st, b = e.do("POST", "/v1/sessions/c/copy", jsonf(`{"source":%q,"destination":"adir"}`, filepath.Join(src, "top.txt")))
	if code, _ := errCode(t, b); st != 409 || code != "destination_is_directory" {
		t.Fatalf("onto a directory: %d %s", st, b)
	}
	// List: everything, symlinks shown not followed, no temp files left.
	os.Symlink(e.outside, filepath.Join(sbx, "out"))
	st, b = e.do("GET", "/v1/sessions/c/files", "")
	var fl fileList
	json.Unmarshal(b, &fl)
	types := map[string]string{}
	for _, f := range fl.Files {
		types[f.Path] = f.Type
		if strings.Contains(f.Path, ".tracecell-copy-") || strings.Contains(f.Path, "canary") {
			t.Fatalf("listing shows %s", f.Path)
		}
	}
	if st != 200 || types["in/data/a/b/deep.txt"] != "file" || types["out"] != "symlink" || types["in/data/a"] != "dir" {
		t.Fatalf("files: %d %v", st, types)
	}
	// Download.
	st, b = e.do("GET", "/v1/sessions/c/files/in/data/a/b/deep.txt", "")
	if st != 200 || string(b) != "deep!" {
		t.Fatalf("download: %d %q", st, b)
	}
	e.checkCanary()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBrowserRequestsRefused: a web page must not drive a loopback server,
// neither through DNS rebinding (its own host name resolving to 127.0.0.1:
// the Host header names it) nor by a cross-site POST a browser sends without
// a preflight (text/plain). Clients that are not browsers send no Origin.
func TestBrowserRequestsRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.create("a")
	_, port, _ := strings.Cut(strings.TrimPrefix(e.hs.URL, "http://"), ":")
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		code                     string
	}{
		{"rebinding GET", "GET", "/v1/sessions", "", map[string]string{"Host": "evil.example:" + port}, 403, "forbidden_host"},
		{"rebinding POST", "POST", "/v1/sessions/a/execute", `{"code":"1"}`, map[string]string{"Host": "evil.example:" + port}, 403, "forbidden_host"},
		{"rebinding no port", "GET", "/v1/sessions/a/files", "", map[string]string{"Host": "evil.example"}, 403, "forbidden_host"},
		{"rebinding localhost suffix", "GET", "/v1/sessions", "", map[string]string{"Host": "localhost.evil.example:" + port}, 403, "forbidden_host"},
		{"cross-site POST", "POST", "/v1/sessions/a/execute", `{"code":"1"}`, map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403, "cross_origin"},
		{"cross-site Sec-Fetch-Site", "POST", "/v1/execute", `{"code":"1"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross_origin"},
		{"cross-site DELETE", "DELETE", "/v1/sessions/a", "", map[string]string{"Origin": "http://evil.example"}, 403, "cross_origin"},
		{"localhost", "GET", "/v1/sessions", "", map[string]string{"Host": "localhost:" + port}, 200, ""},
		{"LOCALHOST", "GET", "/v1/sessions", "", map[string]string{"Host": "LOCALHOST:" + port}, 200, ""},
		{"127.0.0.1", "POST", "/v1/sessions/a/execute", `{"code":"1"}`, map[string]string{"Host": "127.0.0.1:" + port}, 200, ""},
		{"::1", "GET", "/v1/sessions", "", map[string]string{"Host": "[::1]:" + port}, 200, ""},
		{"same origin POST", "POST", "/v1/sessions/a/execute", `{"code":"1"}`, map[string]string{"Origin": "http://127.0.0.1:" + port}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader
			if tc.body != "" {
				rd = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequest(tc.method, e.hs.URL+tc.path, rd)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if h := tc.header["Host"]; h != "" {
				req.Host = h
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, tc.status)
			}
			if tc.code != "" {
				if code, _ := errCode(t, b); code != tc.code {
					t.Fatalf("code %s, want %s", code, tc.code)
				}
			}
		})
	}
	if st, _ := e.do("GET", "/v1/sessions/a", ""); st != 200 {
		t.Fatalf("the cross-site DELETE was not refused: the session is gone (%d)", st)
	}
}

// copyWithSwap asks session id to copy source to dst while swap runs
// between the copy's policy check and its writes (copyTestHook), and fails
// t if a file holding "SECRET" (the denied content of these tests) landed
// in the sandbox sbx. It returns the answer for the caller's checks.
func copyWithSwap(t *testing.T, e *testEnv, id, sbx, source, dst string, swap func()) (int, []byte) {
	t.Helper()
	copyTestHook = swap
	defer func() { copyTestHook = nil }()
	st, b := e.do("POST", "/v1/sessions/"+id+"/copy", jsonf(`{"source":%q,"destination":%q}`, source, dst))
	filepath.Walk(filepath.Join(sbx, dst), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if got, _ := os.ReadFile(p); string(got) == "SECRET" {
				t.Errorf("a denied file was copied to %s (%d %s)", p, st, b)
			}
		}
		return nil
	})
	return st, b
}

// TestCopySourceSwappedForSymlink: a directory on the source's path that
// is replaced by a symlink after the policy check (whoever can write next to
// the source: a shared --write root, /tmp) must not lead the copy into a
// denied tree. The source's path is resolved before the check, so a symlink
// met while opening it means the tree changed.
func TestCopySourceSwappedForSymlink(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	shared := filepath.Join(base, "shared")
	e := newEnv(t, func(o *Options) { o.Settings = config.Settings{DenyRead: []string{secret}} })
	e.create("c")
	sbx := e.sandboxOf("c")
	for _, tc := range []struct {
		name, source, swap string // swap: the directory replaced by a symlink to secret
		file               bool
	}{
		{"file, parent swapped", "d1/f", "d1", true},
		{"file, grandparent swapped", "d2/x/f", "d2", true},
		{"tree, subdirectory swapped", "t3", "t3/sub", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(secret)
			os.MkdirAll(filepath.Join(secret, "x", "sub"), 0o755)
			for _, p := range []string{"f", "x/f", "sub/f", "x/sub/f"} {
				os.WriteFile(filepath.Join(secret, p), []byte("SECRET"), 0o600)
			}
			os.RemoveAll(shared)
			for _, p := range []string{"d1/f", "d2/x/f", "t3/sub/f"} {
				os.MkdirAll(filepath.Dir(filepath.Join(shared, p)), 0o755)
				os.WriteFile(filepath.Join(shared, p), []byte("public"), 0o644)
			}
			swap := filepath.Join(shared, tc.swap)
			dst := strings.ReplaceAll(tc.name, " ", "_")
			st, b := copyWithSwap(t, e, "c", sbx, filepath.Join(shared, tc.source), dst, func() {
				os.Rename(swap, swap+".old")
				if err := os.Symlink(secret, swap); err != nil {
					t.Error(err)
				}
			})
			if tc.file {
				if code, _ := errCode(t, b); st != 409 || code != "source_changed" {
					t.Fatalf("%d %s, want 409 source_changed", st, b)
				}
			} else if st != 200 || !strings.Contains(string(b), "source_changed") && !strings.Contains(string(b), "symbolic link") {
				t.Fatalf("%d %s, want the swapped entry skipped", st, b)
			}
		})
	}
}

// TestCopySourceReplacedByLink: a file that is replaced, after the policy
// check, by a hard link to a file the policy denies (a host process in a
// shared directory can make one; a session cannot) is not copied: the copy
// opens each file again by path and compares it with the one checked.
func TestCopySourceReplacedByLink(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	shared := filepath.Join(base, "shared")
	e := newEnv(t, func(o *Options) { o.Settings = config.Settings{DenyRead: []string{secret}} })
	e.create("h")
	sbx := e.sandboxOf("h")
	os.MkdirAll(secret, 0o755)
	key := filepath.Join(secret, "key")
	os.WriteFile(key, []byte("SECRET"), 0o600)
	for _, tc := range []struct {
		name, source, swap string // swap: the file replaced by a link to key
		file               bool
	}{
		{"file", "f", "f", true},
		{"file in a tree", "t", "t/sub/f", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(shared)
			os.MkdirAll(filepath.Join(shared, "t", "sub"), 0o755)
			for _, p := range []string{"f", "t/sub/f", "t/g"} {
				os.WriteFile(filepath.Join(shared, p), []byte("public"), 0o644)
			}
			swap := filepath.Join(shared, tc.swap)
			dst := strings.ReplaceAll(tc.name, " ", "_")
			st, b := copyWithSwap(t, e, "h", sbx, filepath.Join(shared, tc.source), dst, func() {
				os.Remove(swap)
				if err := os.Link(key, swap); err != nil {
					t.Error(err)
				}
			})
			if tc.file {
				if code, _ := errCode(t, b); st != 409 || code != "source_changed" {
					t.Fatalf("%d %s, want 409 source_changed", st, b)
				}
			} else if st != 200 || !strings.Contains(string(b), "replaced by another file") {
				t.Fatalf("%d %s, want the replaced entry skipped", st, b)
			}
		})
	}
}

// TestDownloadIsInert: a file the code wrote is served as an inert document:
// opened in a browser from the server's own origin, a model-written HTML or
// SVG page could otherwise run script with same-origin access to the API
// (run code, copy host files) and send what it reads anywhere: the browser
// is not under the policy's net rule.
func TestDownloadIsInert(t *testing.T) {
	e := newEnv(t, nil)
	e.create("d")
	sbx := e.sandboxOf("d")
	for _, tc := range []struct{ name, file, body string }{
		{"html", "page.html", "<script>fetch('/v1/execute',{method:'POST',body:'{}'})</script>"},
		{"svg", "img.svg", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`},
		{"png", "fig.png", "\x89PNG\r\n\x1a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(sbx, tc.file), []byte(tc.body), 0o644)
			resp, err := http.Get(e.hs.URL + "/v1/sessions/d/files/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			csp := resp.Header.Get("Content-Security-Policy")
			if resp.StatusCode != 200 || !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
				t.Fatalf("%d, Content-Security-Policy %q: want sandbox and default-src 'none'", resp.StatusCode, csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatal("no nosniff")
			}
		})
	}
}

// TestWriteRootOverStateDir: a writable root shared by every session must
// not contain the state directory (each session could write into the
// others' sandboxes, and connect to the server's Unix socket, which the
// net rule allows inside writable roots), nor lie inside it.
func TestWriteRootOverStateDir(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	for _, tc := range []struct {
		name  string
		write string
		ok    bool
	}{
		{"parent of the state dir", base, false},
		{"the state dir", state, false},
		{"inside the state dir", filepath.Join(state, "shared"), false},
		{"with a trailing slash", base + "/", false},
		{"beside it", filepath.Join(base, "other"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.MkdirAll(filepath.Join(base, "other"), 0o755)
			s, err := New(Options{StateDir: state, Starter: (&fakeStarter{}).start, PoolSize: -1, IdleTimeout: -1,
				Log: zerolog.Nop(), Settings: config.Settings{Write: []string{tc.write}}})
			if s != nil {
				s.Close()
			}
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "state directory")) {
				t.Fatalf("--write %s accepted over the state directory %s (err %v)", tc.write, state, err)
			}
		})
	}
}

// TestOtherUserRefused: on loopback TCP without a token only the server's
// own uid is served: any local user could otherwise connect and run code
// as the user who runs the server. (Needs root to be another user.)
func TestOtherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	py := "/usr/bin/python3" // not a per-user shim: the client runs as nobody
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3 to connect with")
	}
	get := func(t *testing.T, url string, uid uint32, header string) string {
		t.Helper()
		code := `import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1])
if sys.argv[2]: req.add_header("Authorization", sys.argv[2])
try:
    r = urllib.request.urlopen(req); print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())`
		cmd := exec.Command(py, "-c", code, url, header)
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client as uid %d: %v %s", uid, err, out)
		}
		return string(out)
	}
	for _, tc := range []struct {
		name   string
		mut    func(*Options)
		uid    uint32
		header string
		want   string
	}{
		{"other uid refused", nil, 65534, "", "403 "},
		{"same uid served", nil, 0, "", "200 "},
		{"other uid with the token", func(o *Options) { o.Token = "t0k" }, 65534, "Bearer t0k", "200 "},
		{"other uid without the token", func(o *Options) { o.Token = "t0k" }, 65534, "", "401 "},
		{"other uid allowed by the operator", func(o *Options) { o.AllowOtherUsers = true }, 65534, "", "200 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.mut)
			e.hs.Config.ConnContext = e.s.ConnContext
			out := get(t, e.hs.URL+"/v1/sessions", tc.uid, tc.header)
			if !strings.HasPrefix(out, tc.want) {
				t.Fatalf("got %s, want %s", out, tc.want)
			}
			if tc.want == "403 " && !strings.Contains(out, "other_user") {
				t.Fatalf("not other_user: %s", out)
			}
		})
	}
}

// TestCopyProcSecretsRefused: the code may not read the environment or the
// command line of a process outside its tree (rule proc-read); a copy,
// which the server makes as itself, must not hand them over either.
func TestCopyProcSecretsRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.create("p")
	sbx := e.sandboxOf("p")
	self := strconv.Itoa(os.Getpid())
	for _, src := range []string{"/proc/self/environ", "/proc/" + self + "/environ", "/proc/" + self + "/cmdline",
		"/proc/thread-self/environ", "/proc/" + self + "/task/" + self + "/environ"} {
		// The server's own /proc entry is refused before the policy is
		// asked (TestCopySourceServerProc); either refusal will do.
		st, b := e.do("POST", "/v1/sessions/p/copy", jsonf(`{"source":%q,"destination":"leak"}`, src))
		if code, _ := errCode(t, b); !(st == 403 && code == "read_denied") && !(st == 400 && code == "invalid_field") {
			t.Errorf("copy %s: %d %s", src, st, b)
		}
	}
	// A directory copy skips them.
	st, b := e.do("POST", "/v1/sessions/p/copy", jsonf(`{"source":%q,"destination":"procdir"}`, "/proc/"+self))
	if st == 200 && !strings.Contains(string(b), `"path":"environ","reason":"denied by policy`) {
		t.Errorf("copy /proc/%s: %d %s", self, st, b)
	}
	for _, f := range []string{"leak", "procdir/environ", "procdir/cmdline"} {
		if _, err := os.Lstat(filepath.Join(sbx, f)); err == nil {
			t.Errorf("%s was copied into the sandbox", f)
		}
	}
	// An ordinary /proc file is still copied.
	if st, b := e.do("POST", "/v1/sessions/p/copy", `{"source":"/proc/version","destination":"version"}`); st != 200 {
		t.Errorf("copy /proc/version: %d %s", st, b)
	}
}

// TestStateDirNotFollowed: the state directory is made private through a
// descriptor, after the checks: a symlink at the state directory's path
// inside a --write root (a tree may have planted it) is refused before
// anything is chmodded, and a directory of another user is refused (root
// only: it needs a second uid).
func TestStateDirNotFollowed(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	victim := filepath.Join(base, "victim")
	for _, d := range []string{shared, victim} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
	}
	link := filepath.Join(shared, "state")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{StateDir: link, Starter: (&fakeStarter{}).start, PoolSize: -1, IdleTimeout: -1,
		Log: zerolog.Nop(), Settings: config.Settings{Write: []string{shared}}})
	if s != nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "state directory") {
		t.Errorf("a state directory symlinked from inside --write %s accepted (err %v)", shared, err)
	}
	if st, _ := os.Stat(victim); st.Mode().Perm() != 0o755 {
		t.Errorf("the symlink's target was chmodded to %v", st.Mode().Perm())
	}
	t.Run("another user's directory", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a directory of another uid")
		}
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(other, 0o777)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{StateDir: other, Starter: (&fakeStarter{}).start, PoolSize: -1, IdleTimeout: -1, Log: zerolog.Nop()})
		if s != nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("a state directory of uid 65534 accepted (err %v)", err)
		}
		if st, _ := os.Stat(other); st.Mode().Perm() != 0o777 {
			t.Errorf("another user's directory was chmodded to %v", st.Mode().Perm())
		}
	})
}

// TestCopySourceServerProc: /proc/self, /proc/thread-self and the server's
// own /proc/<pid> name the server when it resolves a copy's source, not
// the session's worker as in the session's code: /proc/self/cwd and
// /proc/self/fd/N copied the server's files (red team, round 68). Also
// through a link that leads there (/dev/fd/N).
func TestCopySourceServerProc(t *testing.T) {
	e := newEnv(t, nil)
	e.create("p")
	f, err := os.CreateTemp(t.TempDir(), "server-file")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("SERVER")
	fd := strconv.Itoa(int(f.Fd()))
	pid := strconv.Itoa(os.Getpid())
	for _, src := range []string{"/proc/self/cwd", "/proc/thread-self/cwd", "/proc/self/fd/" + fd,
		"/proc/" + pid + "/fd/" + fd, "/proc/./self/fd/" + fd, "/dev/fd/" + fd} {
		t.Run(src, func(t *testing.T) {
			st, b := e.do("POST", "/v1/sessions/p/copy", jsonf(`{"source":%q,"destination":"x"}`, src))
			if code, _ := errCode(t, b); st != 400 || code != "invalid_field" || !strings.Contains(string(b), "the server's own process") {
				t.Fatalf("%d %s, want 400 invalid_field naming the server's own process", st, b)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(e.sandboxOf("p"), "x")); err == nil {
		t.Error("something was copied")
	}
}

// TestCopyDenyReadOtherNames: a copy's source is decided as the worker's own
// open would be (round 59 of the red team): a hard link to a deny-read file
// is that file, and a deny-read entry given through a symlink is followed as
// it points now, after a Kubernetes-style rotation swapped its link.
func TestCopyDenyReadOtherNames(t *testing.T) {
	base := t.TempDir()
	secret, link := filepath.Join(base, "secret.txt"), filepath.Join(base, "hardlink.txt")
	os.WriteFile(secret, []byte("SECRET"), 0o644)
	if err := os.Link(secret, link); err != nil {
		t.Skipf("no hard links: %v", err)
	}
	vol := filepath.Join(base, "vol")
	os.MkdirAll(filepath.Join(vol, "..v1"), 0o755)
	os.WriteFile(filepath.Join(vol, "..v1", "token"), []byte("OLD"), 0o644)
	os.Symlink("..v1", filepath.Join(vol, "..data"))
	os.Symlink("..data/token", filepath.Join(vol, "token"))
	token := filepath.Join(vol, "token")
	e := newEnv(t, func(o *Options) { o.Settings = config.Settings{DenyRead: []string{secret, token}} })
	e.create("h")
	// The rotation, after the server started.
	os.MkdirAll(filepath.Join(vol, "..v2"), 0o755)
	os.WriteFile(filepath.Join(vol, "..v2", "token"), []byte("ROTATED"), 0o644)
	os.Symlink("..v2", filepath.Join(vol, "..data.tmp"))
	if err := os.Rename(filepath.Join(vol, "..data.tmp"), filepath.Join(vol, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{link, token, filepath.Join(vol, "..v2", "token")} {
		st, b := e.do("POST", "/v1/sessions/h/copy", jsonf(`{"source":%q,"destination":"x"}`, src))
		if code, msg := errCode(t, b); st != 403 || code != "read_denied" || !strings.Contains(msg, "deny-read") {
			t.Errorf("copy %s: %d %s", src, st, b)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.sandboxOf("h"), "x")); err == nil {
		t.Error("a denied file was copied into the sandbox")
	}
}

// TestServeDeniedFileUnderAnotherName: a hard link to a deny-read file in a
// session's sandbox, made by a host program (the tree may not make one), is
// neither downloaded nor archived (round 61 of the red team, defence in
// depth: the tracer's link check was all that kept it out).
func TestServeDeniedFileUnderAnotherName(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "secret.txt")
	os.WriteFile(secret, []byte("SECRET"), 0o644)
	e := newEnv(t, func(o *Options) { o.Settings = config.Settings{DenyRead: []string{secret}} })
	e.create("l")
	sbx := e.sandboxOf("l")
	if err := os.Link(secret, filepath.Join(sbx, "linked.txt")); err != nil {
		t.Skipf("no hard link from %s into the sandbox: %v", base, err)
	}
	os.WriteFile(filepath.Join(sbx, "plain.txt"), []byte("plain"), 0o644)
	st, b := e.do("GET", "/v1/sessions/l/files/linked.txt", "")
	if code, msg := errCode(t, b); st != 403 || code != "read_denied" || !strings.Contains(msg, secret) {
		t.Errorf("download of the link: %d %s", st, b)
	}
	if st, b := e.do("GET", "/v1/sessions/l/files/plain.txt", ""); st != 200 || string(b) != "plain" {
		t.Errorf("download of a plain file: %d %s", st, b)
	}
	st, h, tarball := e.raw("GET", "/v1/sessions/l/archive", nil)
	if st != 200 || bytes.Contains(tarball, []byte("SECRET")) || !strings.Contains(h.Get("X-Tracecell-Skipped"), "1") {
		t.Errorf("archive: %d %v, secret inside: %v", st, h, bytes.Contains(tarball, []byte("SECRET")))
	}
}
