package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// stateEntries lists a state directory without the cells/ record (cell.go),
// which outlives every boot on purpose.
func stateEntries(dir string) []os.DirEntry {
	ents, _ := os.ReadDir(dir)
	var out []os.DirEntry
	for _, e := range ents {
		if e.Name() != "cells" {
			out = append(out, e)
		}
	}
	return out
}

// doH is do that also returns the response headers.
func (e *testEnv) doH(method, path, body string) (int, http.Header, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.hs.URL+path, rd)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func TestCellIdentity(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.CellID = "cell-7"; o.IdleTimeout = time.Hour })
	st, h, b := e.doH("POST", "/v1/sessions", "")
	if st != 201 {
		t.Fatalf("create: %d %s", st, b)
	}
	var in SessionInfo
	json.Unmarshal(b, &in)
	if h.Get(HeaderCell) != "cell-7" || len(h.Get(HeaderBoot)) != 16 {
		t.Fatalf("headers %v", h)
	}
	if c, ok := mintedCell(in.ID); !ok || c != "cell-7" || !strings.HasPrefix(in.ID, "cell-7.s-") {
		t.Fatalf("minted id %q does not carry the cell", in.ID)
	}
	if in.Cell != "cell-7" || in.Boot != h.Get(HeaderBoot) || in.ExpiresAt == nil || in.IdleTimeout != 3600 ||
		!in.ExpiresAt.Equal(in.LastActiveAt.Add(time.Hour)) {
		t.Fatalf("description %+v", in)
	}
	// Error answers name the cell too.
	if st, h, _ := e.doH("GET", "/v1/sessions/nope", ""); st != 404 || h.Get(HeaderCell) != "cell-7" {
		t.Fatalf("miss: %d %v", st, h)
	}
	// Keepalive moves expires_at on.
	time.Sleep(20 * time.Millisecond)
	st, b = e.do("POST", "/v1/sessions/"+in.ID+"/keepalive", "")
	var k SessionInfo
	json.Unmarshal(b, &k)
	if st != 200 || !k.ExpiresAt.After(*in.ExpiresAt) {
		t.Fatalf("keepalive: %d %s", st, b)
	}
	for _, bad := range []string{"x.y", "", strings.Repeat("a", 64), "a/b"} {
		t.Run("bad cell "+bad, func(t *testing.T) {
			o := Options{StateDir: t.TempDir(), Starter: (&fakeStarter{}).start, CellID: bad, Log: zerolog.Nop()}
			if bad == "" {
				return // the host name: checked by defaultCellID
			}
			if _, err := New(o); err == nil || !strings.Contains(err.Error(), "--cell-id") {
				t.Fatalf("New accepted cell id %q: %v", bad, err)
			}
		})
	}
}

// TestMissesAreDistinct: a request for a session the cell does not hold
// says why — never here, deleted, expired, another cell's — never a bare
// "not found", and the MCP-style get-or-create (Open) says what was lost.
func TestMissesAreDistinct(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.CellID = "c1"; o.IdleTimeout = time.Hour })
	e.create("gone")
	e.do("DELETE", "/v1/sessions/gone", "")
	st, b := e.do("POST", "/v1/sessions", `{"id":"short","idle_timeout":1}`)
	if st != 201 {
		t.Fatalf("create with idle_timeout: %d %s", st, b)
	}
	waitFor(t, "the 1s session to expire", func() bool {
		st, _ := e.do("GET", "/v1/sessions/short", "")
		return st == 410
	})
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
		msg                      []string
	}{
		{"never here", "GET", "/v1/sessions/never", "", 404, "session_not_found", []string{`"never"`, `cell "c1"`, "1 boot(s)"}},
		{"deleted", "POST", "/v1/sessions/gone/execute", `{"code":"1"}`, 404, "session_deleted", []string{`"gone"`, "deleted by a client"}},
		{"expired", "POST", "/v1/sessions/short/execute", `{"code":"1"}`, 410, "session_expired", []string{"expired at", "1s unused"}},
		{"other cell", "GET", "/v1/sessions/c2.s-0123456789abcdef", "", 421, "wrong_cell", []string{`cell "c2"`, `this is cell "c1"`}},
		{"other cell create", "POST", "/v1/sessions", `{"id":"c2.s-0123456789abcdef"}`, 421, "wrong_cell", []string{`cell "c2"`}},
		{"idle_timeout too short", "POST", "/v1/sessions", `{"idle_timeout":0.5}`, 400, "invalid_field", []string{"1 or more"}},
		{"idle_timeout above the server's", "POST", "/v1/sessions", `{"idle_timeout":7200}`, 400, "invalid_field", []string{"--idle-timeout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := e.do(c.method, c.path, c.body)
			code, msg := errCode(t, b)
			if st != c.status || code != c.code {
				t.Fatalf("%d %s, want %d %s: %s", st, code, c.status, c.code, msg)
			}
			for _, m := range c.msg {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q lacks %q", msg, m)
				}
			}
		})
	}
	// Open without create: the miss is the error; with create, what was lost.
	if _, _, err := e.s.Open(context.Background(), "short", false); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("Open(create=false) of an expired session: %v", err)
	}
	_, op, err := e.s.Open(context.Background(), "short", true)
	if err != nil || !op.Created || op.Previous.Kind != "expired" {
		t.Fatalf("Open(create=true) of an expired session: %+v %v", op, err)
	}
	if _, _, err := e.s.Open(context.Background(), "c9.s-0123456789abcdef", true); err == nil {
		t.Fatal("Open created a session with another cell's id")
	}
	_, mb := e.do("GET", "/metrics", "")
	for _, want := range []string{
		`tracecell_requests_misrouted_total{cell="c1"} 3`, // two requests, one Open
		`tracecell_session_misses_total{cell="c1",kind="expired"}`,
		`tracecell_sessions_lost_total{cell="c1",reason="expired"} 1`,
		`tracecell_draining{cell="c1"} 0`,
	} {
		if !strings.Contains(string(mb), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// The cell as a subprocess with fake workers: this test binary re-executed
// with TRACECELL_TEST_CELL set serves on that socket until a signal.
func TestHelperCell(t *testing.T) {
	sock := os.Getenv("TRACECELL_TEST_CELL")
	if sock == "" {
		t.Skip("helper process for the cell tests")
	}
	ctx, stop := signalContext()
	defer stop()
	err := Run(ctx, Options{
		Listen: "unix:" + sock, StateDir: os.Getenv("TRACECELL_TEST_STATE"), PoolSize: 1, CellID: "kc",
		Starter: (&fakeStarter{}).start, Log: zerolog.Nop(), Ready: func(string) { fmt.Println("READY") },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func startCell(t *testing.T, sock, state string) (*exec.Cmd, *http.Client) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCell$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TRACECELL_TEST_CELL="+sock, "TRACECELL_TEST_STATE="+state)
	startReady(t, cmd, "cell")
	return cmd, &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

func call(t *testing.T, c *http.Client, method, path, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestLostInEarlierBoot: a cell SIGKILLed and restarted under the same
// name answers its old sessions with 410 session_lost naming the earlier
// boot, not 404 (a proxy that rehashed would otherwise get a silent reset);
// a cleanly stopped cell says that it stopped.
func TestLostInEarlierBoot(t *testing.T) {
	dir, err := os.MkdirTemp("", "tc-cell-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, state := filepath.Join(dir, "s.sock"), filepath.Join(dir, "state")
	cmd, c := startCell(t, sock, state)
	if st, b, _ := call(t, c, "POST", "/v1/sessions", `{"id":"agent-1"}`); st != 201 {
		t.Fatalf("create: %d %s", st, b)
	}
	_, b, h1 := call(t, c, "POST", "/v1/sessions", ``)
	var minted SessionInfo
	json.Unmarshal([]byte(b), &minted)
	call(t, c, "POST", "/v1/sessions", `{"id":"deleted-1"}`)
	call(t, c, "DELETE", "/v1/sessions/deleted-1", ``)
	boot1 := h1.Get(HeaderBoot)
	cmd.Process.Kill() // SIGKILL: no chance to record anything
	cmd.Wait()
	os.Remove(sock)

	cmd, c = startCell(t, sock, state)
	for _, id := range []string{"agent-1", minted.ID} {
		st, b, h := call(t, c, "GET", "/v1/sessions/"+id, "")
		if st != 410 || !strings.Contains(b, "session_lost") || !strings.Contains(b, boot1) ||
			!strings.Contains(b, "killed") || h.Get(HeaderBoot) == boot1 {
			t.Fatalf("%s after SIGKILL and restart: %d %s", id, st, b)
		}
	}
	if st, b, _ := call(t, c, "GET", "/v1/sessions/deleted-1", ""); st != 404 || !strings.Contains(b, "session_deleted") {
		t.Fatalf("deleted-1 after restart: %d %s", st, b)
	}
	if st, b, _ := call(t, c, "GET", "/v1/sessions/never-1", ""); st != 404 || !strings.Contains(b, "session_not_found") || !strings.Contains(b, "2 boot(s)") {
		t.Fatalf("never-1 after restart: %d %s", st, b)
	}
	_, m, _ := call(t, c, "GET", "/metrics", "")
	if !strings.Contains(m, `tracecell_sessions_lost_total{cell="kc",reason="earlier_boot"} 2`) {
		t.Errorf("metrics: lost sessions of the earlier boot not counted:\n%s", m)
	}
	// A clean stop (SIGTERM, no drain) records that it closed the session.
	call(t, c, "POST", "/v1/sessions", `{"id":"agent-2"}`)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	os.Remove(sock)
	_, c = startCell(t, sock, state)
	if st, b, _ := call(t, c, "GET", "/v1/sessions/agent-2", ""); st != 410 || !strings.Contains(b, "stopped") {
		t.Fatalf("agent-2 after a clean stop: %d %s", st, b)
	}
	// A name re-created after a loss is a new session, usable.
	if st, b, _ := call(t, c, "POST", "/v1/sessions", `{"id":"agent-1"}`); st != 201 {
		t.Fatalf("re-create agent-1: %d %s", st, b)
	}
}

// TestDrain: after Run's context ends with a drain timeout, the cell says
// not ready, refuses new sessions and unknown ids with 503 + Retry-After,
// and keeps serving its open session with its state until it is deleted;
// then Run returns at once. A session left open past the timeout is
// recorded as lost by the drain.
func TestDrain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deleteIt bool
	}{{"drained by the client", true}, {"drain timeout", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "tc-drain-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			sock, state := filepath.Join(dir, "s.sock"), filepath.Join(dir, "state")
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan struct{})
			fs := &fakeStarter{}
			opts := Options{Listen: "unix:" + sock, StateDir: state, PoolSize: 1, CellID: "dc", Starter: fs.start,
				Log: zerolog.Nop(), DrainTimeout: 3 * time.Second, Ready: func(string) { close(ready) }}
			done := make(chan error, 1)
			go func() { done <- Run(ctx, opts) }()
			<-ready
			c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}}
			call(t, c, "POST", "/v1/sessions", `{"id":"keep"}`)
			call(t, c, "POST", "/v1/sessions/keep/execute", `{"code":"set:x=42"}`)
			waitFor(t, "ready", func() bool { st, _, _ := call(t, c, "GET", "/readyz", ""); return st == 200 })
			start := time.Now()
			cancel() // SIGTERM
			waitFor(t, "not ready", func() bool { st, _, _ := call(t, c, "GET", "/readyz", ""); return st == 503 })
			st, b, h := call(t, c, "GET", "/readyz", "")
			if !strings.Contains(b, "draining") || h.Get("Retry-After") == "" {
				t.Fatalf("readyz while draining: %d %s", st, b)
			}
			for _, r := range []struct{ method, path, body string }{
				{"POST", "/v1/sessions", `{"id":"new"}`}, {"GET", "/v1/sessions/other", ""}, {"POST", "/v1/execute", `{"code":"1"}`},
			} {
				st, b, h := call(t, c, r.method, r.path, r.body)
				if st != 503 || !strings.Contains(b, `"draining"`) || h.Get("Retry-After") == "" {
					t.Errorf("%s %s while draining: %d %s", r.method, r.path, st, b)
				}
			}
			if st, b, _ := call(t, c, "POST", "/v1/sessions/keep/execute", `{"code":"get:x"}`); st != 200 || !strings.Contains(b, `"result":"42"`) {
				t.Fatalf("the open session lost its state while draining: %d %s", st, b)
			}
			if st, b, _ := call(t, c, "GET", "/healthz", ""); st != 200 || !strings.Contains(b, "draining") {
				t.Fatalf("healthz while draining: %d %s", st, b)
			}
			if tc.deleteIt {
				call(t, c, "DELETE", "/v1/sessions/keep", "")
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return")
			}
			took := time.Since(start)
			if tc.deleteIt && took > 2*time.Second {
				t.Fatalf("drain took %v after the last session was deleted", took)
			}
			if !tc.deleteIt && took < 3*time.Second {
				t.Fatalf("drain ended after %v, before its timeout with a session open", took)
			}
			if n := fs.alive(); n != 0 {
				t.Fatalf("%d workers alive after Run", n)
			}
			if !tc.deleteIt {
				// The next boot says the drain closed it.
				s, err := New(Options{StateDir: state, CellID: "dc", Starter: fs.start, PoolSize: -1, Log: zerolog.Nop()})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if _, err := s.Describe("keep"); err == nil || !strings.Contains(err.Error(), "drain") {
					t.Fatalf("after the drain timeout: %v", err)
				}
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxSessions = 1; o.PoolSize = 1 })
	waitFor(t, "the pool", func() bool { return e.s.metrics.poolReady.Load() == 1 })
	if st, b := e.do("GET", "/readyz", ""); st != 200 || !strings.Contains(string(b), `"ready":true`) {
		t.Fatalf("readyz: %d %s", st, b)
	}
	e.fs.delay = 0
	e.create("one")
	st, b := e.do("GET", "/readyz", "")
	if st != 503 || !strings.Contains(string(b), "full: 1 of 1") {
		t.Fatalf("readyz when full: %d %s", st, b)
	}
	e.do("DELETE", "/v1/sessions/one", "")
	e.s.pool.close() // no warm worker will come
	if st, b := e.do("GET", "/readyz", ""); st != 503 || !strings.Contains(string(b), "pool empty") {
		t.Fatalf("readyz with an empty pool: %d %s", st, b)
	}
}

// TestHistoryBounds: the ended ids a cell remembers and the size of a
// boot's record are bounded; what falls out is answered as never seen,
// never as something it was not.
func TestHistoryBounds(t *testing.T) {
	defer func(e int, f int64) { maxEnded, maxBootFile = e, f }(maxEnded, maxBootFile)
	maxEnded = 3
	dir := t.TempDir()
	now := time.Now()
	h, err := openHistory(dir, "hb", "boot1", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		h.created(id, now)
		h.end(id, fate{kind: "deleted", at: now})
	}
	h.created("a", now) // a again: its newest end must survive the eviction of its first
	h.end("a", fate{kind: "expired", at: now, reason: "1s"})
	h.created("d", now)
	h.end("d", fate{kind: "deleted", at: now})
	for id, want := range map[string]string{"a": "expired", "b": "", "c": "deleted", "d": "deleted"} {
		fa, ok := h.fateOf(id)
		if (want == "") == ok || fa.kind != want {
			t.Errorf("%s: %+v %v, want %q", id, fa, ok, want)
		}
	}
	// One name ended and made again many times does not grow the memory.
	for i := 0; i < 5000; i++ {
		h.created("again", now)
		h.end("again", fate{kind: "deleted", at: now})
	}
	if len(h.order) > 2*maxEnded+1025 || len(h.ended) > maxEnded {
		t.Errorf("remembered %d ids in an order of %d", len(h.ended), len(h.order))
	}
	if fa, ok := h.fateOf("again"); !ok || fa.kind != "deleted" {
		t.Errorf("again: %+v %v", fa, ok)
	}
	// The record stops growing past maxBootFile: later sessions are not
	// recorded, earlier ones still end in it.
	maxBootFile = h.written + 1
	h.created("e", now) // recorded
	h.created("f", now) // past the cap: not recorded
	h.created("g", now) // not recorded
	h.end("e", fate{kind: "deleted", at: now})
	h.created("h", now)
	st, _ := h.f.Stat()
	h.f.Close() // the boot is killed: no end line, the lock released
	h2, err := openHistory(dir, "hb", "boot2", now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if fa, ok := h2.fateOf("e"); !ok || fa.kind != "deleted" {
		t.Errorf("e, recorded before the cap: %+v %v", fa, ok)
	}
	for _, id := range []string{"f", "g", "h"} {
		if fa, ok := h2.fateOf(id); ok {
			t.Errorf("%s, created past the cap, has a fate: %+v", id, fa)
		}
	}
	if st.Size() > maxBootFile+200 {
		t.Errorf("the boot record grew to %d bytes past its cap of %d", st.Size(), maxBootFile)
	}
}

// TestHistoryLiveBootSkipped: two servers with one cell id on one state
// directory (serve and mcp with the defaults) do not take each other's
// running boot for an earlier one that lost its sessions.
func TestHistoryLiveBootSkipped(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	a, err := openHistory(dir, "same", "boot-a", now)
	if err != nil {
		t.Fatal(err)
	}
	a.created("open-in-a", now)
	b, err := openHistory(dir, "same", "boot-b", now.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if fa, ok := b.fateOf("open-in-a"); ok {
		t.Fatalf("a running boot's session is taken for lost: %+v", fa)
	}
	a.f.Close() // a dies without a word (the lock goes with its descriptor)
	a.f = nil
	c, err := openHistory(dir, "same", "boot-c", now.Add(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if fa, ok := c.fateOf("open-in-a"); !ok || fa.kind != "lost" || fa.boot != "boot-a" {
		t.Fatalf("after a died: %+v %v", fa, ok)
	}
	b.close(now, "closed cleanly")
	c.close(now, "closed cleanly")
}

// TestDrainWaitsForOneshot: a one-shot execution running when the drain
// starts finishes; the drain ends after it.
func TestDrainWaitsForOneshot(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.DrainTimeout = 5 * time.Second })
	done := make(chan string, 1)
	go func() {
		st, b := e.do("POST", "/v1/execute", `{"code":"sleep:400"}`)
		done <- fmt.Sprintf("%d %s", st, b)
	}()
	waitFor(t, "the one-shot to start", func() bool { e.s.mu.Lock(); defer e.s.mu.Unlock(); return e.s.oneshots == 1 })
	start := time.Now()
	if left := e.s.drain(5*time.Second, nil); left != 0 {
		t.Fatalf("%d sessions left", left)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("the drain ended after %v, before the one-shot run", took)
	}
	if r := <-done; !strings.HasPrefix(r, "200 ") || !strings.Contains(r, `"timed_out":false`) {
		t.Fatalf("the one-shot run: %s", r)
	}
}
