package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/server"
)

// These tests run real workers (the worker-host is this test binary
// re-executed, Python under the tracer) through the MCP server in process.

type env struct {
	t       *testing.T
	srv     *server.Server
	m       *MCP
	outside string // a host directory outside the sandboxes
}

func newTestEnv(t *testing.T, mut func(*server.Options)) *env {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3: the MCP tests need a real Python worker")
	}
	base := t.TempDir()
	log := zerolog.Nop()
	if os.Getenv("TRACECELL_TEST_LOG") != "" {
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, NoColor: true}).With().Str("test", t.Name()).Logger()
	}
	o := server.Options{StateDir: filepath.Join(base, "state"), Starter: server.RealStarter(log), Log: log,
		PoolSize: 1, IdleTimeout: -1, ExecTimeout: 30 * time.Second}
	if mut != nil {
		mut(&o)
	}
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Server: srv, Log: log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, m: m, outside: filepath.Join(base, "outside")}
	if err := os.MkdirAll(e.outside, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return e
}

// connect opens an in-memory MCP connection (the connection carries the
// given headers, as an SSE connection would).
func (e *env) connect(h http.Header) *mcp.ClientSession {
	e.t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := e.m.newServer(h, "memory").Connect(ctx, st, nil); err != nil {
		e.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool and returns its text (content[0]) and the result.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", tool)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content[0] is %T, want text (vLLM reads content[0].text)", tool, res.Content[0])
	}
	return tc.Text, res
}

func python(t *testing.T, cs *mcp.ClientSession, code string) string {
	t.Helper()
	text, res := call(t, cs, "python", map[string]any{"code": code})
	if res.IsError {
		t.Fatalf("python %q: tool error: %s", code, text)
	}
	return text
}

func TestListTools(t *testing.T) {
	e := newTestEnv(t, func(o *server.Options) { o.ExecTimeout = 45 * time.Second; o.Settings.Memory = 1 << 30 })
	cs := e.connect(nil)
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "python" {
		t.Errorf("server name %q, want python", init.ServerInfo.Name)
	}
	for _, want := range []string{"at most 45 seconds", filepath.Join(e.srv.Limits().StateDir, "sbx-*"), "internet is not reachable", "1 GiB"} {
		if !strings.Contains(init.Instructions, want) {
			t.Errorf("instructions lack %q:\n%s", want, init.Instructions)
		}
	}
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tl := range lt.Tools {
		got[tl.Name] = tl
	}
	for _, tc := range []struct{ name, param string }{{"python", "code"}, {"cleanup_session", "session_id"}} {
		t.Run(tc.name, func(t *testing.T) {
			tl := got[tc.name]
			if tl == nil {
				t.Fatalf("no tool %s in %v", tc.name, got)
			}
			props, _ := tl.InputSchema.(map[string]any)["properties"].(map[string]any)
			if _, ok := props[tc.param]; !ok || len(props) != 1 {
				t.Fatalf("%s schema %v, want the one parameter %s", tc.name, tl.InputSchema, tc.param)
			}
			// vLLM 0.30+ leaves a tool out of GPT-OSS's prompt only on _meta.
			if v, ok := tl.Meta["include_in_prompt"]; !ok || v != false {
				t.Errorf("%s _meta %v, want include_in_prompt false", tc.name, tl.Meta)
			}
		})
	}
}

func TestPythonTool(t *testing.T) {
	e := newTestEnv(t, nil)
	cs := e.connect(nil)
	host := filepath.Join(e.outside, "data.csv")
	if err := os.WriteFile(host, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	png := `import zlib, struct, os
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
raw = b''.join(b'\x00' + b'\xff\x00\x00' * 4 for _ in range(4))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 4, 4, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
os.makedirs('outputs', exist_ok=True)
open('outputs/red.png', 'wb').write(png)
`
	var sandbox string
	for _, tc := range []struct {
		name, code string
		has        []string
		check      func(t *testing.T, text string, res *mcp.CallToolResult)
	}{
		{name: "first call makes the session", code: "x = 41", has: []string{"[new session: working directory "},
			check: func(t *testing.T, text string, _ *mcp.CallToolResult) {
				line, _, _ := strings.Cut(strings.TrimPrefix(text, "[new session: working directory "), ";")
				sandbox = line
				if !strings.HasPrefix(sandbox, e.srv.Limits().StateDir+"/sbx-") {
					t.Fatalf("sandbox %q not under the state directory", sandbox)
				}
			}},
		{name: "state kept", code: "x + 1", has: []string{"[result]\n42\n"}},
		{name: "python fence", code: "```python\nprint(x * 2)\n```", has: []string{"[stdout]\n82\n"}},
		{name: "bare fence", code: "```\nx - 1\n```\n", has: []string{"[result]\n40\n"}},
		{name: "error", code: "1/0", has: []string{"[error]", "ZeroDivisionError: division by zero"}},
		{name: "blocked write", code: "open(" + pyQuote(host) + ", 'w').write('changed')",
			has: []string{"PermissionError", "[blocked operations]", "write to " + host + " blocked: outside the sandbox", "copied into the sandbox first"},
			check: func(t *testing.T, text string, _ *mcp.CallToolResult) {
				if !strings.Contains(text, "files you can change live in "+sandbox) {
					t.Errorf("the sandbox %s is not named:\n%s", sandbox, text)
				}
				if b, _ := os.ReadFile(host); string(b) != "a,b\n1,2\n" {
					t.Fatalf("the host file changed: %q", b)
				}
			}},
		{name: "blocked but carried on", code: "import subprocess\ntry:\n    subprocess.run(['/bin/true'])\nexcept OSError:\n    print('no programs')",
			has: []string{"[stdout]\nno programs\n", "[blocked operations (refused, but the code carried on and finished)]\n- running the program ", "/true blocked: running programs is not allowed"}},
		{name: "read anywhere", code: "open(" + pyQuote(host) + ").read()", has: []string{"a,b\\n1,2\\n"}},
		{name: "image returned", code: png, has: []string{"outputs/red.png (created, image/png"},
			check: func(t *testing.T, _ string, res *mcp.CallToolResult) {
				want, err := os.ReadFile(filepath.Join(sandbox, "outputs", "red.png"))
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Content) != 2 {
					t.Fatalf("%d contents, want text and one image", len(res.Content))
				}
				img, ok := res.Content[1].(*mcp.ImageContent)
				if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, want) {
					t.Fatalf("content[1] = %T %v, want the PNG of %d bytes", res.Content[1], ok, len(want))
				}
			}},
		{name: "fake image not returned", code: "open('fake.png', 'w').write('not a png')", has: []string{"image fake.png is not shown: its content is text/plain"},
			check: func(t *testing.T, _ string, res *mcp.CallToolResult) {
				if len(res.Content) != 1 {
					t.Fatalf("%d contents, want the text only", len(res.Content))
				}
			}},
		{name: "ansi stripped", code: "print('\\x1b[31mred\\x1b[0m')", has: []string{"[stdout]\nred\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, res := call(t, cs, "python", map[string]any{"code": tc.code})
			if res.IsError {
				t.Fatalf("tool error: %s", text)
			}
			for _, h := range tc.has {
				if !strings.Contains(text, h) {
					t.Errorf("missing %q in:\n%s", h, text)
				}
			}
			if tc.check != nil {
				tc.check(t, text, res)
			}
		})
	}
	t.Run("cleanup", func(t *testing.T) {
		text, _ := call(t, cs, "cleanup_session", map[string]any{})
		if !strings.Contains(text, "ended") {
			t.Fatalf("cleanup: %s", text)
		}
		if _, err := os.Stat(sandbox); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("sandbox %s left after cleanup: %v", sandbox, err)
		}
		text = python(t, cs, "x")
		if !strings.Contains(text, "[new session") || !strings.Contains(text, "NameError") {
			t.Fatalf("after cleanup the state should be gone:\n%s", text)
		}
		text, res := call(t, cs, "cleanup_session", map[string]any{"session_id": "no-such"})
		if !res.IsError || !strings.Contains(text, `session_id "no-such" was not used through this connection`) {
			t.Fatalf("cleanup of a session this connection never used: %v %s", res.IsError, text)
		}
	})
	t.Run("empty code", func(t *testing.T) {
		text, res := call(t, cs, "python", map[string]any{"code": "```python\n```"})
		if !res.IsError || !strings.Contains(text, "no code given") {
			t.Fatalf("empty code: %v %s", res.IsError, text)
		}
	})
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestConnectionSession: without a header, each MCP connection has its own
// Python session, ended when the connection closes.
func TestConnectionSession(t *testing.T) {
	e := newTestEnv(t, nil)
	a, b := e.connect(nil), e.connect(nil)
	python(t, a, "v = 'a'")
	python(t, b, "v = 'b'")
	if text := python(t, a, "v"); !strings.Contains(text, "[result]\n'a'") {
		t.Fatalf("connection a sees:\n%s", text)
	}
	if text := python(t, b, "v"); !strings.Contains(text, "[result]\n'b'") {
		t.Fatalf("connection b sees:\n%s", text)
	}
	a.Close()
	// The session of a ends with it (asynchronously): wait for it; the
	// test's own timeout bounds the wait.
	for {
		infos := sessions(t, e)
		if len(infos) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if text := python(t, b, "v"); !strings.Contains(text, "[result]\n'b'") {
		t.Fatalf("connection b lost its session:\n%s", text)
	}
}

// sessions lists the server's sessions through its HTTP API.
func sessions(t *testing.T, e *env) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/sessions", nil))
	var ids []string
	for _, part := range strings.Split(rec.Body.String(), `"id":"`)[1:] {
		id, _, _ := strings.Cut(part, `"`)
		ids = append(ids, id)
	}
	return ids
}

// headerRT adds headers to every request (as vLLM's sse_client does).
type headerRT struct{ h http.Header }

func (r headerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range r.h {
		req.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestHeaderRouting connects over real SSE and Streamable HTTP (httptest)
// with the headers vLLM and clients send.
func TestHeaderRouting(t *testing.T) {
	e := newTestEnv(t, nil)
	hs := httptest.NewServer(e.m.Handler())
	t.Cleanup(hs.Close)
	dial := func(t *testing.T, transport string, h http.Header) *mcp.ClientSession {
		t.Helper()
		hc := &http.Client{Transport: headerRT{h}}
		var tr mcp.Transport = &mcp.SSEClientTransport{Endpoint: hs.URL + "/sse", HTTPClient: hc}
		if transport == "streamable" {
			tr = &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: hc}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, transport := range []string{"sse", "streamable"} {
		t.Run(transport, func(t *testing.T) {
			r1 := dial(t, transport, hdr("x-session-id", "resp_"+transport))
			python(t, r1, "n = 1")
			// A second connection of the same request shares its session.
			r1b := dial(t, transport, hdr("x-session-id", "resp_"+transport))
			if text := python(t, r1b, "n + 1"); !strings.Contains(text, "[result]\n2\n") {
				t.Fatalf("same x-session-id, other connection:\n%s", text)
			}
			// Another request id: another session.
			r2 := dial(t, transport, hdr("x-session-id", "resp_other_"+transport))
			if text := python(t, r2, "n"); !strings.Contains(text, "NameError") {
				t.Fatalf("other x-session-id sees n:\n%s", text)
			}
			// X-Tracecell-Session wins over x-session-id and survives an
			// argument-less cleanup_session (what vLLM sends at the end of a request).
			p := dial(t, transport, hdr("x-session-id", "resp_p_"+transport, HeaderSession, "proj-"+transport))
			python(t, p, "keep = 7")
			if text, _ := call(t, p, "cleanup_session", nil); !strings.Contains(text, "kept") {
				t.Fatalf("cleanup of a pinned session: %s", text)
			}
			p2 := dial(t, transport, hdr(HeaderSession, "proj-"+transport))
			if text := python(t, p2, "keep"); !strings.Contains(text, "[result]\n7\n") {
				t.Fatalf("pinned session lost its state:\n%s", text)
			}
			// cleanup_session ends the request's session.
			if text, _ := call(t, r1, "cleanup_session", nil); !strings.Contains(text, `session "resp_`+transport+`" ended`) {
				t.Fatalf("cleanup: %s", text)
			}
			if text := python(t, r1b, "n"); !strings.Contains(text, "NameError") {
				t.Fatalf("after cleanup the request's session still has n:\n%s", text)
			}
			// The model chooses session_id: another conversation's session
			// cannot be ended by name, and keeps its state.
			if text, res := call(t, r2, "cleanup_session", map[string]any{"session_id": "proj-" + transport}); !res.IsError || !strings.Contains(text, "not used through this connection") {
				t.Fatalf("cleanup of another connection's session: %v %s", res.IsError, text)
			}
			if text := python(t, p2, "keep"); !strings.Contains(text, "[result]\n7\n") {
				t.Fatalf("a refused cleanup ended the pinned session:\n%s", text)
			}
			if text, _ := call(t, p2, "cleanup_session", map[string]any{"session_id": "proj-" + transport}); !strings.Contains(text, "ended") {
				t.Fatalf("cleanup by id: %s", text)
			}
			bad := dial(t, transport, hdr(HeaderSession, "no/slashes"))
			if text, res := call(t, bad, "python", map[string]any{"code": "1"}); !res.IsError || !strings.Contains(text, "not a valid session name") {
				t.Fatalf("invalid header: %v %s", res.IsError, text)
			}
		})
	}
	t.Run("include_in_prompt", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		for _, b := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`} {
			req, _ = http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(b, "tools/list") {
				continue
			}
			// vLLM 0.20-0.29 read the flag from the annotations, 0.30+ from _meta.
			if n := strings.Count(string(raw), `"_meta":{"include_in_prompt":false}`); n != 2 {
				t.Errorf("tools/list: %d tools with _meta.include_in_prompt false, want 2: %s", n, raw)
			}
			if n := strings.Count(string(raw), `"include_in_prompt":false`); n != 4 {
				t.Errorf("tools/list: include_in_prompt false %d times, want 4 (annotations and _meta of both tools): %s", n, raw)
			}
		}
	})
}

func TestToken(t *testing.T) {
	e := newTestEnv(t, func(o *server.Options) { o.Token = "s3cret" })
	hs := httptest.NewServer(e.m.Handler())
	t.Cleanup(hs.Close)
	for _, tc := range []struct {
		name, path, auth string
		want             int
	}{
		{"sse without token", "/sse", "", 401},
		{"mcp without token", "/mcp", "", 401},
		{"api without token", "/v1/sessions", "", 401},
		{"wrong token", "/v1/sessions", "Bearer nope", 401},
		{"api with token", "/v1/sessions", "Bearer s3cret", 200},
		{"health", "/healthz", "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", hs.URL+tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestBrowserRequests: a web page must not reach any route of the MCP port
// (the session API on it runs code and copies host files) through DNS
// rebinding (a Host that is not loopback) or a cross-site request.
func TestBrowserRequests(t *testing.T) {
	e := newTestEnv(t, nil)
	hs := httptest.NewServer(e.m.Handler())
	t.Cleanup(hs.Close)
	_, port, _ := strings.Cut(strings.TrimPrefix(hs.URL, "http://"), ":")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		name, method, path, host, origin, ctype, body string
		want                                          int
	}{
		{"api rebinding", "GET", "/v1/sessions", "evil.example:" + port, "", "", "", 403},
		{"api rebinding one-shot", "POST", "/v1/execute", "evil.example:" + port, "", "application/json", `{"code":"1"}`, 403},
		{"api cross-site text/plain", "POST", "/v1/sessions", "", "http://evil.example", "text/plain", `{"id":"x"}`, 403},
		{"sse rebinding", "GET", "/sse", "evil.example:" + port, "", "", "", 403},
		{"mcp rebinding", "POST", "/mcp", "evil.example:" + port, "", "application/json", initBody, 403},
		{"mcp cross-site", "POST", "/mcp", "", "http://evil.example", "application/json", initBody, 403},
		{"sse message cross-site", "POST", "/sse?sessionid=x", "", "http://evil.example", "application/json", "{}", 403},
		{"api loopback", "GET", "/v1/sessions", "localhost:" + port, "", "", "", 200},
		{"mcp loopback", "POST", "/mcp", "127.0.0.1:" + port, "", "application/json", initBody, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader
			if tc.body != "" {
				rd = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequest(tc.method, hs.URL+tc.path, rd)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.path == "/sse" && resp.StatusCode == 200 {
				resp.Body.Close() // an open event stream
				t.Fatalf("status 200, want %d", tc.want)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, b, tc.want)
			}
		})
	}
	if got := sessions(t, e); len(got) != 0 {
		t.Fatalf("sessions made by refused requests: %v", got)
	}
}

// TestStreamableSessionIDNotListed: the Mcp-Session-Id lets whoever holds it
// act in that MCP session; the Python session of a connection must not
// publish it in GET /v1/sessions (whose ids every client of the port sees).
func TestStreamableSessionIDNotListed(t *testing.T) {
	e := newTestEnv(t, nil)
	hs := httptest.NewServer(e.m.Handler())
	t.Cleanup(hs.Close)
	for _, tc := range []struct{ name string }{{"streamable"}} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			python(t, cs, "x = 1")
			sid := cs.ID()
			if sid == "" {
				t.Fatal("no Mcp-Session-Id")
			}
			ids := sessions(t, e)
			if len(ids) != 1 {
				t.Fatalf("sessions %v, want one", ids)
			}
			if strings.Contains(ids[0], sid) {
				t.Fatalf("the Python session id %q shows the Mcp-Session-Id %q", ids[0], sid)
			}
		})
	}
}
