// Package mcpserver is `tracecell mcp`: an MCP server named "python" whose
// tool "python" runs code in the stateful sessions of package server, in
// process, so that `vllm serve … --tool-server HOST:PORT` (GPT-OSS's
// built-in python tool) and other MCP clients get tracecell's sandbox.
//
// Transports: SSE at /sse (the 2024-11-05 transport vLLM's MCPToolServer
// speaks) and Streamable HTTP at /mcp; the session HTTP API of package
// server answers every other path on the same listener (copy a file into a
// session's sandbox, download what the code wrote).
//
// Which Python session a call runs in, first match wins:
//
//  1. the X-Tracecell-Session header: a name the client chooses, which
//     outlives requests and connections (the session id is the value);
//     cleanup_session without arguments keeps it;
//  2. the X-Session-Id header, which vLLM sends with its request id (one
//     session per Responses API request; vLLM calls cleanup_session at the
//     end of the request);
//  3. otherwise the MCP session (the SSE connection, or the Streamable HTTP
//     Mcp-Session-Id): the Python session ends when it does.
//
// Headers are read from the HTTP request that carried the call, else from
// the one that opened the connection (SSE posts its messages separately).
// Sessions a client forgets end after the server's --idle-timeout.
//
// A call whose session is not on this cell makes it (get-or-create), and
// the first text content (the only part vLLM passes on) says so with what
// the cell knows of an earlier session of that name: lost when the cell
// restarted, expired, deleted — never a silent reset behind a proxy that
// rehashed. With the X-Tracecell-No-Create header the call fails instead,
// naming the cell and what was lost; a session id minted by another cell
// is never made here.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	optdef "github.com/tracecell/tracecell/internal/opts"
	"github.com/tracecell/tracecell/server"
	"github.com/tracecell/tracecell/worker"
)

// Header names that choose the session (see the package comment).
const (
	HeaderSession   = "X-Tracecell-Session"
	HeaderRequestID = "X-Session-Id"
	// HeaderNoCreate ("1", "true" or "yes") forbids making the session:
	// a call for a session the cell does not hold fails and says why.
	HeaderNoCreate = "X-Tracecell-No-Create"
)

// Options configure the MCP server. Zero values take the defaults.
type Options struct {
	// Server runs the sessions; required. Close it after the MCP server.
	Server *server.Server
	Log    zerolog.Logger
	// Version is reported to clients.
	Version string
	// MaxChars caps the text of one result (default DefaultMaxChars).
	MaxChars int
	// MaxImageBytes caps one image returned as MCP image content (default
	// 1 MiB; larger ones are named in the text only).
	MaxImageBytes int64
	// MaxImages caps the images of one result (default 4).
	MaxImages int
}

const (
	defaultMaxImageBytes = 1 << 20
	defaultMaxImages     = 4
)

// MCP is the MCP front door over one session server.
type MCP struct {
	opts         Options
	srv          *server.Server
	log          zerolog.Logger
	limits       server.Limits
	instructions string
	cache        *mcp.SchemaCache
}

// New checks opts and prepares the server (nothing listens yet).
func New(opts Options) (*MCP, error) {
	if opts.Server == nil {
		return nil, errors.New("mcpserver: no session server given")
	}
	optdef.Positive(&opts.MaxChars, DefaultMaxChars)
	optdef.Positive(&opts.MaxImageBytes, defaultMaxImageBytes)
	optdef.Positive(&opts.MaxImages, defaultMaxImages)
	if opts.Version == "" {
		opts.Version = "dev"
	}
	l := opts.Server.Limits()
	return &MCP{
		opts: opts, srv: opts.Server, log: opts.Log, limits: l,
		instructions: Instructions(l), cache: mcp.NewSchemaCache(),
	}, nil
}

// Handler serves MCP over SSE at /sse and Streamable HTTP at /mcp, and the
// session HTTP API on every other path, behind the server's bearer token
// when one is configured.
func (m *MCP) Handler() http.Handler {
	sse := mcp.NewSSEHandler(func(r *http.Request) *mcp.Server {
		return m.newServer(r.Header.Clone(), "sse")
	}, nil)
	st := &mcp.StreamableHTTPOptions{}
	if m.limits.IdleTimeout > 0 {
		st.SessionTimeout = m.limits.IdleTimeout
	}
	streamable := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return m.newServer(r.Header.Clone(), "streamable-http")
	}, st)
	mux := http.NewServeMux()
	mux.Handle("/sse", sse)
	mux.Handle("/mcp", streamable)
	mux.Handle("/", m.srv.Handler())
	return m.srv.Authorize(mux)
}

// conn is one MCP session (an SSE connection, a Streamable HTTP session,
// an in-memory connection): each gets its own mcp.Server so that the
// headers of the request that opened it stay with it.
type conn struct {
	m         *MCP
	header    http.Header
	transport string
	fallback  string // session id when no header names one

	watch sync.Once

	// used holds the sessions this connection has run code in: the only
	// ones besides the call's own that cleanup_session may end by name
	// (its session_id is chosen by the model).
	usedMu sync.Mutex
	used   map[string]bool
}

// markUsed records that this connection ran code in session id.
func (c *conn) markUsed(id string) {
	c.usedMu.Lock()
	defer c.usedMu.Unlock()
	if c.used == nil {
		c.used = map[string]bool{}
	}
	c.used[id] = true
}

// wasUsed reports whether this connection ran code in session id.
func (c *conn) wasUsed(id string) bool {
	c.usedMu.Lock()
	defer c.usedMu.Unlock()
	return c.used[id]
}

// newServer builds the mcp.Server of one connection.
func (m *MCP) newServer(h http.Header, transport string) *mcp.Server {
	c := &conn{m: m, header: h, transport: transport, fallback: "mcp-" + randomHex(8)}
	s := mcp.NewServer(&mcp.Implementation{Name: "python", Title: "Python (tracecell sandbox)", Version: m.opts.Version},
		&mcp.ServerOptions{Instructions: m.instructions, SchemaCache: m.cache, Capabilities: &mcp.ServerCapabilities{}})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "python",
		Title:       "Run Python code",
		Description: m.instructions,
		Annotations: &mcp.ToolAnnotations{Title: "Run Python code", OpenWorldHint: boolp(m.limits.Net == "allow")},
		Meta:        promptMeta(),
	}, recovered(m.log, c.python))
	mcp.AddTool(s, &mcp.Tool{
		Name:  "cleanup_session",
		Title: "End a Python session",
		Description: "End a Python session: its variables and its sandbox files are gone. Without session_id, the " +
			"session of this request (X-Session-Id) or connection; a session named by the X-Tracecell-Session header is kept " +
			"unless session_id names it. session_id may name only this request's or connection's own session, or one this " +
			"connection ran code in.",
		Annotations: &mcp.ToolAnnotations{Title: "End a Python session", DestructiveHint: boolp(true), IdempotentHint: true, OpenWorldHint: boolp(false)},
		Meta:        promptMeta(),
	}, recovered(m.log, c.cleanup))
	s.AddReceivingMiddleware(hideFromPrompt)
	return s
}

func boolp(b bool) *bool { return &b }

// recovered turns a panic in a tool handler into an error result: the
// go-sdk runs handlers without recovering, and a panic would end the
// process and with it every session of every client.
func recovered[In any](log zerolog.Logger, h mcp.ToolHandlerFor[In, any]) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out any, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("mcp: tool handler panicked")
				res, out, err = errorResult("internal error in the tool server (logged); retry, or end the session with cleanup_session"), nil, nil
			}
		}()
		return h(ctx, req, in)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// promptMeta is the _meta of both tools: "include_in_prompt": false. vLLM
// drops such tools from the prompt's function list (it calls python itself,
// with the model's message as the code, and cleanup_session at the end of a
// request), so the model sees the server's instructions as its built-in
// python tool, as GPT-OSS was trained. vLLM 0.30 and later read the flag
// from the tool's _meta (tool.meta, vllm/entrypoints/mcp/tool_server.py
// post_process_tools_description); vLLM 0.20 to 0.29 read it from the
// annotations (hideFromPrompt), which the mcp 2.x Python client drops as an
// unknown field. Both are set, so either vLLM sees it.
func promptMeta() mcp.Meta { return mcp.Meta{"include_in_prompt": false} }

// hideFromPrompt adds "include_in_prompt": false to the annotations of
// every tool in tools/list, where vLLM 0.20 to 0.29 (with an mcp client
// before 2.0, which keeps unknown annotation keys) read it; see promptMeta
// for vLLM 0.30 and later. The go-sdk's ToolAnnotations has no field for
// it, hence a result type that marshals the extra key.
func hideFromPrompt(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil && method == "tools/list" {
			return promptHidden{lt}, nil
		}
		return res, err
	}
}

type promptHidden struct{ *mcp.ListToolsResult }

// MarshalJSON is the list with include_in_prompt false in every tool's
// annotations.
func (p promptHidden) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(p.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(top["tools"], &tools); err != nil {
		return nil, err
	}
	for _, t := range tools {
		ann := map[string]any{}
		if raw, ok := t["annotations"]; ok {
			if err := json.Unmarshal(raw, &ann); err != nil {
				return nil, err
			}
		}
		ann["include_in_prompt"] = false
		if t["annotations"], err = json.Marshal(ann); err != nil {
			return nil, err
		}
	}
	if top["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// key is the session a call runs in.
type key struct {
	id     string
	source string // header name, or "mcp-session"
	pinned bool   // named by X-Tracecell-Session: kept by an argument-less cleanup
}

// header returns a header of the call's request, else of the connection's.
func (c *conn) headerValue(req *mcp.CallToolRequest, name string) string {
	if req != nil && req.Extra != nil && req.Extra.Header != nil {
		if v := strings.TrimSpace(req.Extra.Header.Get(name)); v != "" {
			return v
		}
	}
	return strings.TrimSpace(c.header.Get(name))
}

// sessionKey picks the session of a call (see the package comment).
func (c *conn) sessionKey(req *mcp.CallToolRequest) (key, error) {
	if v := c.headerValue(req, HeaderSession); v != "" {
		if !server.ValidID(v) {
			return key{}, fmt.Errorf("the %s header %q is not a valid session name: use 1 to 128 of A-Z a-z 0-9 . _ - (and not . or ..)", HeaderSession, v)
		}
		return key{id: v, source: HeaderSession, pinned: true}, nil
	}
	if v := c.headerValue(req, HeaderRequestID); v != "" {
		return key{id: idFor(v), source: HeaderRequestID}, nil
	}
	id := c.fallback
	if req != nil && req.Session != nil {
		if sid := req.Session.ID(); sid != "" {
			// A digest: the Mcp-Session-Id lets its holder act in that MCP
			// session, and session ids are listed by GET /v1/sessions.
			sum := sha256.Sum256([]byte("mcp-session\x00" + sid))
			id = "mcp-" + hex.EncodeToString(sum[:12])
		}
		// The Python session ends with the MCP session.
		ss := req.Session
		c.watch.Do(func() {
			go func() {
				ss.Wait()
				c.m.end(id, "the MCP session closed")
			}()
		})
	}
	return key{id: id, source: "mcp-session"}, nil
}

// idFor is v when it is a valid session id, else a digest of it.
func idFor(v string) string {
	if server.ValidID(v) {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "h-" + hex.EncodeToString(sum[:16])
}

// end deletes a session if it exists.
func (m *MCP) end(id, why string) {
	err := m.srv.Delete(id)
	switch {
	case err == nil:
		m.log.Info().Str("session", id).Str("why", why).Msg("mcp: session ended")
	case errors.Is(err, server.ErrNotFound), errors.Is(err, server.ErrShuttingDown):
	default:
		m.log.Warn().Str("session", id).Err(err).Msg("mcp: could not end the session")
	}
}

// PythonArgs are the python tool's arguments.
type PythonArgs struct {
	Code string `json:"code" jsonschema:"Python code to run in the session (Markdown code fences are removed)"`
}

// CleanupArgs are cleanup_session's arguments.
type CleanupArgs struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session to end (default: this request's or connection's)"`
}

func errorResult(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

// python runs code in the call's session.
func (c *conn) python(ctx context.Context, req *mcp.CallToolRequest, in PythonArgs) (*mcp.CallToolResult, any, error) {
	m := c.m
	k, err := c.sessionKey(req)
	if err != nil {
		return errorResult("%v", err), nil, nil
	}
	log := m.log.With().Str("session", k.id).Str("session_from", k.source).Str("transport", c.transport).Logger()
	c.markUsed(k.id)
	code := NormalizeCode(in.Code)
	if strings.TrimSpace(code) == "" {
		return errorResult("no code given: send Python code in the argument \"code\""), nil, nil
	}
	start := time.Now()
	var res *worker.Result
	var info server.SessionInfo
	var opened server.Opened
	noCreate := truthy(c.headerValue(req, HeaderNoCreate))
	for range 2 { // a session deleted between lookup and run is made again
		var o server.Opened
		info, o, err = m.srv.Open(ctx, k.id, !noCreate)
		if o.Created {
			opened = o
		}
		if err != nil {
			break
		}
		res, err = m.srv.Execute(ctx, k.id, code, 0)
		if !errors.Is(err, server.ErrNotFound) {
			break
		}
	}
	if err != nil {
		log.Warn().Err(err).Bool("no_create", noCreate).Msg("mcp: python call refused")
		return errorResult("%s", m.callError(err, k, noCreate)), nil, nil
	}
	images, notes := m.images(k.id, res.Artifacts)
	res.Notes = append(res.Notes, notes...)
	text := FormatResult(res, Context{Sandbox: info.Sandbox, ExtraWrite: m.limits.ExtraWrite, Net: m.limits.Net, MaxChars: m.opts.MaxChars})
	if opened.Created {
		text = newSessionNote(k.id, info, opened.Previous) + text
	}
	log.Info().Bool("created", opened.Created).Str("previous", opened.Previous.Kind).Float64("ms", float64(time.Since(start).Microseconds())/1000).
		Int("denials", len(res.Denials)).Int("artifacts", len(res.Artifacts)).Int("images", len(images)).
		Bool("timed_out", res.TimedOut).Bool("session_lost", res.SessionLost).Msg("mcp: python call")
	content := []mcp.Content{&mcp.TextContent{Text: text}} // first: vLLM reads content[0].text
	content = append(content, images...)
	return &mcp.CallToolResult{Content: content}, nil, nil
}

// truthy reads a yes/no header.
func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes":
		return true
	}
	return false
}

// newSessionNote heads the result of a call that made its session: the
// cell, the working directory, and what became of an earlier session of
// that name (the model and the client must not take the empty namespace
// for the old one).
func newSessionNote(id string, info server.SessionInfo, prev server.Miss) string {
	note := fmt.Sprintf("[new session: working directory %s; files written there persist for this session; cell %q]\n", info.Sandbox, info.Cell)
	switch prev.Kind {
	case "lost", "expired", "deleted":
		return fmt.Sprintf("[NOTE: the earlier session %q is gone and this is a NEW, EMPTY one: %s Variables and files from before are not here; define them again]\n", id, strings.TrimSuffix(prev.Message, "Create a new one")) + note
	}
	return note
}

// callError says in one line why a call could not run and what to do.
func (m *MCP) callError(err error, k key, noCreate bool) string {
	cell, _ := m.srv.Cell()
	switch {
	case errors.Is(err, server.ErrNotFound) && noCreate:
		return fmt.Sprintf("%s; nothing was created (the request says %s)", err.Error(), HeaderNoCreate)
	case errors.Is(err, server.ErrWrongCell):
		return "the session belongs to another cell, so it cannot run here: " + err.Error()
	case errors.Is(err, server.ErrDraining):
		return fmt.Sprintf("the tool server (cell %q) is shutting down and holds no session %q; retry: a ready cell will take it", cell, k.id)
	}
	return callError(err, m.limits)
}

// callError says in one line why a call could not run and what to do.
func callError(err error, l server.Limits) string {
	switch {
	case errors.Is(err, server.ErrBusy):
		return "the previous python call of this session is still running; wait for its result before sending more code"
	case errors.Is(err, server.ErrTooManySessions):
		return fmt.Sprintf("the tool server holds its maximum of %d Python sessions; retry later (finished sessions are ended by cleanup_session or after being idle)", l.MaxSessions)
	case errors.Is(err, server.ErrShuttingDown):
		return "the tool server is shutting down; retry against a new one"
	}
	return "the code could not be run: " + err.Error()
}

// imageMIME are the image types returned as MCP image content.
var imageMIME = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// images reads the image artifacts of a result (symlink-safe, capped) and
// says in notes which ones were left out.
func (m *MCP) images(id string, arts []worker.Artifact) (out []mcp.Content, notes []string) {
	for _, a := range arts {
		if !imageMIME[a.MIME] {
			continue
		}
		if len(out) >= m.opts.MaxImages {
			notes = append(notes, fmt.Sprintf("image %s is in the sandbox but not shown: at most %d images are returned per call", a.Path, m.opts.MaxImages))
			continue
		}
		b, err := m.readImage(id, a.Path)
		if err != nil {
			notes = append(notes, fmt.Sprintf("image %s is not shown: %v", a.Path, err))
			continue
		}
		out = append(out, &mcp.ImageContent{Data: b, MIMEType: a.MIME})
	}
	return out, notes
}

func (m *MCP) readImage(id, rel string) ([]byte, error) {
	f, st, err := m.srv.OpenFile(id, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > m.opts.MaxImageBytes {
		return nil, fmt.Errorf("%s is above the %s cap for images returned inline", sizeText(st.Size()), sizeText(m.opts.MaxImageBytes))
	}
	b, err := io.ReadAll(io.LimitReader(f, m.opts.MaxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read it: %w", err)
	}
	if int64(len(b)) > m.opts.MaxImageBytes {
		return nil, fmt.Errorf("it grew above the %s cap for images returned inline", sizeText(m.opts.MaxImageBytes))
	}
	if got := http.DetectContentType(b); !strings.HasPrefix(got, "image/") || !bytes.Equal([]byte(got), []byte(mimeOf(rel, got))) {
		return nil, fmt.Errorf("its content is %s, not an image of its extension", got)
	}
	return b, nil
}

// mimeOf is the image type a file's extension claims.
func mimeOf(rel, sniffed string) string {
	ext := strings.ToLower(rel[strings.LastIndexByte(rel, '.')+1:])
	switch ext {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "gif":
		return "image/gif"
	case "webp":
		return "image/webp"
	}
	return sniffed
}

// cleanup ends a session.
func (c *conn) cleanup(ctx context.Context, req *mcp.CallToolRequest, in CleanupArgs) (*mcp.CallToolResult, any, error) {
	m := c.m
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	var id, source string
	if in.SessionID != "" {
		if !server.ValidID(in.SessionID) {
			return errorResult("session_id %q is not a valid session id: use 1 to 128 of A-Z a-z 0-9 . _ -", in.SessionID), nil, nil
		}
		id, source = in.SessionID, "argument"
		// The model chooses this argument: it may end the call's own
		// session and those this connection ran code in, never another
		// client's (DELETE /v1/sessions/ID is the operator's way).
		if own, err := c.sessionKey(req); (err != nil || own.id != id) && !c.wasUsed(id) {
			m.log.Warn().Str("session", id).Str("transport", c.transport).Msg("mcp: cleanup_session refused a session this connection never used")
			return errorResult("session_id %q was not used through this connection: cleanup_session ends only this conversation's own sessions (an operator ends others with DELETE /v1/sessions/%s)", id, id), nil, nil
		}
	} else {
		k, err := c.sessionKey(req)
		if err != nil {
			return errorResult("%v", err), nil, nil
		}
		if k.pinned {
			m.log.Info().Str("session", k.id).Msg("mcp: cleanup_session without session_id kept a session named by " + HeaderSession)
			return text(fmt.Sprintf("session %q kept: it is named by the %s header, which outlives a request; pass session_id to end it", k.id, HeaderSession)), nil, nil
		}
		id, source = k.id, k.source
	}
	err := m.srv.Delete(id)
	switch {
	case err == nil:
		m.log.Info().Str("session", id).Str("session_from", source).Msg("mcp: session ended by cleanup_session")
		return text(fmt.Sprintf("session %q ended: its Python process and its sandbox files are gone", id)), nil, nil
	case errors.Is(err, server.ErrNotFound):
		return text(fmt.Sprintf("no session %q to end (none was started, or it has ended already)", id)), nil, nil
	}
	return errorResult("could not end session %q: %v", id, err), nil, nil
}
