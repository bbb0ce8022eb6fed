package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/rmtree"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/worker"
)

// route is one endpoint; the OpenAPI test checks this table against
// api/openapi.yaml both ways.
type route struct {
	method, pattern string
	h               func(*Server, http.ResponseWriter, *http.Request)
}

var routes = []route{
	{"POST", "/v1/sessions", (*Server).handleCreate},
	{"GET", "/v1/sessions", (*Server).handleList},
	{"GET", "/v1/sessions/{id}", sessionRoute((*Server).handleDescribe)},
	{"DELETE", "/v1/sessions/{id}", sessionRoute((*Server).handleDelete)},
	{"POST", "/v1/sessions/{id}/execute", sessionRoute((*Server).handleExecute)},
	{"POST", "/v1/sessions/{id}/reset", sessionRoute((*Server).handleReset)},
	{"POST", "/v1/sessions/{id}/copy", sessionRoute((*Server).handleCopy)},
	{"POST", "/v1/sessions/{id}/keepalive", sessionRoute((*Server).handleKeepalive)},
	{"GET", "/v1/sessions/{id}/archive", sessionRoute((*Server).handleArchiveGet)},
	{"POST", "/v1/sessions/{id}/archive", sessionRoute((*Server).handleArchivePut)},
	{"GET", "/v1/sessions/{id}/files", sessionRoute((*Server).handleFiles)},
	{"GET", "/v1/sessions/{id}/files/{path...}", sessionRoute((*Server).handleDownload)},
	{"GET", "/v1/sessions/{id}/report", sessionRoute((*Server).handleSessionReport)},
	{"POST", "/v1/execute", (*Server).handleOneshot},
	{"GET", "/healthz", (*Server).handleHealth},
	{"GET", "/readyz", (*Server).handleReady},
	{"GET", "/metrics", (*Server).handleMetrics},
}

// sessionHandler serves a request on one session, already looked up; an
// error it returns is written as the JSON error.
type sessionHandler func(*Server, http.ResponseWriter, *http.Request, *session) error

// sessionRoute adapts a sessionHandler to a route: the {id} of the path is
// looked up first (404 session_not_found).
func sessionRoute(h sessionHandler) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		ss, err := s.lookup(r)
		if err == nil {
			err = h(s, w, r, ss)
		}
		if err != nil {
			writeError(w, err)
		}
	}
}

// exclusive runs f with the session held for this request: a second
// execute or reset meanwhile is refused (409 session_busy), never queued.
func (ss *session) exclusive(f func() error) error {
	if err := ss.acquire(); err != nil {
		return busyError(ss.id, err)
	}
	defer ss.release()
	return f()
}

// Handler is the HTTP API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		h := rt.h
		mux.HandleFunc(rt.method+" "+rt.pattern, func(w http.ResponseWriter, r *http.Request) { h(s, w, r) })
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errf(404, "no_such_endpoint", "no endpoint %s %s; see api/openapi.yaml", r.Method, r.URL.Path))
	})
	return s.auth(mux)
}

// auth refuses requests a web page could make a browser send (browserGuard),
// and requires the bearer token (when one is configured) on everything but
// GET /healthz and GET /readyz; every answer names the cell (cell.go).
func (s *Server) auth(next http.Handler) http.Handler {
	return s.cellHeaders(browserGuard(s.peerGuard(s.tokenCheck(next))))
}

// peerGuard serves a loopback TCP connection without a token only to a
// client of the server's own uid (see peer.go).
func (s *Server) peerGuard(next http.Handler) http.Handler {
	if s.opts.Token != "" || s.opts.AllowOtherUsers {
		return next
	}
	me := os.Geteuid()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if onLoopbackTCP(r) {
			if uid, ok := peerUID(r); !ok || uid != me {
				who := "an unknown user (its socket was not found in /proc/net/tcp)"
				if ok {
					who = "uid " + strconv.Itoa(uid)
				}
				writeError(w, errf(403, "other_user", "this server runs code as uid %d and serves only that user on loopback; the client is %s. Run the client as the same user, or start the server with --token-file (or --allow-other-users)", me, who))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenCheck(next http.Handler) http.Handler {
	if s.opts.Token == "" {
		return next
	}
	want := []byte("Bearer " + s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" { // probes send no token
			got := []byte(r.Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tracecell"`)
				writeError(w, errf(401, "unauthorized", "missing or wrong bearer token: send 'Authorization: Bearer <token>' (the token is in the server's --token-file)"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, errf(500, "internal", "encode the response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = errf(500, "internal", "%v", err)
	}
	var b errorBody
	b.Error.Code, b.Error.Message = string(ae.code), ae.msg
	if ae.status == 429 || ae.status == 503 {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, ae.status, b)
}

// decode reads a JSON body into v, capped at MaxBody. An empty body is
// allowed when optional.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errf(413, "body_too_large", "request body larger than %d bytes (the server's limit); send less code or copy data with POST /v1/sessions/{id}/copy", s.opts.MaxBody)
		}
		return errf(400, "bad_body", "read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return errf(400, "invalid_json", "the request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return errf(400, "invalid_json", "the request body is not valid JSON: %v (at byte %d)", err, se.Offset)
		case errors.As(err, &te):
			return errf(400, "invalid_field", "field %q: want %s, got %s", te.Field, te.Type, te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return errf(400, "invalid_field", "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return errf(400, "invalid_json", "the request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return errf(400, "invalid_json", "the request body has data after the JSON object")
	}
	return nil
}

// validID reports whether id is 1 to 128 of A-Z a-z 0-9 . _ - and not . or ..
// (a loop, not a regexp: `{1,128}` compiles to 128 states at every start of
// the binary, 0.6 ms that `tracecell run` paid too).
func validID(id string) bool {
	if len(id) == 0 || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func checkID(id string) error {
	if !validID(id) {
		return errf(400, "invalid_id", "session id %q is invalid: use 1 to 128 of A-Z a-z 0-9 . _ - (and not . or ..)", id)
	}
	return nil
}

// lookup finds the session of the request's {id}.
func (s *Server) lookup(r *http.Request) (*session, error) {
	return s.lookupID(r.PathValue("id"))
}

// lookupID finds a session by id.
func (s *Server) lookupID(id string) (*session, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return nil, s.missError(id) // never here, deleted, expired, lost, another cell's (cell.go)
	}
	if ss.s == nil {
		return nil, errf(409, "session_busy", "session %q is still being created; retry shortly", id)
	}
	return ss, nil
}

type createRequest struct {
	ID string `json:"id,omitempty"`
	// IdleTimeout in seconds: this session's own idle timeout, at least 1
	// and at most the server's --idle-timeout (when it has one).
	IdleTimeout *float64 `json:"idle_timeout,omitempty"`
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var err error
	var req createRequest
	if err := s.decode(w, r, &req, true); err != nil {
		writeError(w, err)
		return
	}
	var idle time.Duration
	if req.IdleTimeout != nil {
		if idle, err = s.checkIdle(*req.IdleTimeout); err != nil {
			writeError(w, err)
			return
		}
	}
	ss, err := s.create(r.Context(), req.ID)
	if err != nil {
		writeError(w, err)
		return
	}
	if idle > 0 {
		ss.mu.Lock()
		ss.idle = idle
		ss.mu.Unlock()
	}
	writeJSON(w, 201, ss.describe())
}

// create makes a session with the given id ("" for a random one) on a
// worker from the pool, within --max-sessions.
func (s *Server) create(ctx context.Context, id string) (*session, error) {
	if id == "" {
		id = s.mintID() // "<cell>.s-<hex>": a proxy routes it by prefix (cell.go)
	} else if err := checkID(id); err != nil {
		return nil, err
	} else if other, ok := mintedCell(id); ok && other != s.opts.CellID {
		return nil, s.missError(id) // 421 wrong_cell
	}
	// Reserve the id and a slot before the (possibly slow) worker start.
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, errf(503, "shutting_down", "the server is shutting down")
	case s.draining:
		s.mu.Unlock()
		return nil, s.drainErr()
	case s.sessions[id] != nil:
		s.mu.Unlock()
		return nil, errf(409, "session_exists", "session %q exists already; use it, or DELETE it first", id)
	case len(s.sessions)+s.oneshots >= s.opts.MaxSessions:
		s.mu.Unlock()
		return nil, errf(429, "too_many_sessions", "the server holds its maximum of %d sessions (--max-sessions); delete one you no longer need", s.opts.MaxSessions)
	}
	placeholder := &session{id: id, busy: true, created: time.Now()}
	placeholder.destroyed = true // not usable until the worker is ready
	s.sessions[id] = placeholder
	s.mu.Unlock()

	start := time.Now()
	wk, sandbox, err := s.pool.take(ctx)
	s.mu.Lock()
	if s.sessions[id] == placeholder {
		delete(s.sessions, id)
	}
	if err != nil {
		s.mu.Unlock()
		s.log.Error().Err(err).Str("session", id).Msg("create session: could not get a worker")
		if errors.Is(err, errShuttingDown) {
			return nil, errf(503, "shutting_down", "the server is shutting down")
		}
		return nil, errf(503, "worker_start_failed", "could not start a Python worker: %v (see the server's log)", err)
	}
	if s.closed {
		s.mu.Unlock()
		wk.Close()
		s.removeSandbox(sandbox, s.log)
		return nil, errf(503, "shutting_down", "the server is shutting down")
	}
	ss := newSession(s, id, sandbox, wk)
	s.sessions[id] = ss
	s.hist.created(id, ss.created)
	s.mu.Unlock()
	s.metrics.sessionsCreated.Add(1)
	s.metrics.sessionsActive.Add(1)
	ss.log.Info().Str("sandbox", sandbox).Int("worker_pid", wk.Info().WorkerPid).
		Float64("ms", ms(time.Since(start))).Msg("session created")
	return ss, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	list := s.sessionList()
	out := struct {
		Sessions []SessionInfo `json:"sessions"`
	}{Sessions: make([]SessionInfo, 0, len(list))}
	for _, ss := range list {
		if ss.s == nil {
			continue // a placeholder while its worker starts
		}
		out.Sessions = append(out.Sessions, ss.describe())
	}
	writeJSON(w, 200, out)
}

func (s *Server) handleDescribe(w http.ResponseWriter, _ *http.Request, ss *session) error {
	writeJSON(w, 200, ss.describe())
	return nil
}

func (s *Server) handleDelete(w http.ResponseWriter, _ *http.Request, ss *session) error {
	if err := s.remove(ss); err != nil {
		return err
	}
	w.WriteHeader(204)
	return nil
}

// remove deletes a session at a client's request: its worker is killed
// (an execution in flight returns session lost) and its sandbox removed.
func (s *Server) remove(ss *session) error {
	s.mu.Lock()
	if s.sessions[ss.id] != ss {
		s.mu.Unlock()
		return errf(404, "session_not_found", "session %q was deleted meanwhile", ss.id)
	}
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	s.hist.end(ss.id, fate{kind: "deleted", at: time.Now()})
	s.metrics.sessionsDeleted.Add(1)
	s.metrics.sessionsActive.Add(-1)
	ss.log.Info().Msg("session deleted by the client")
	ss.destroy()
	return nil
}

// execRequest is the body of the execute endpoints.
type execRequest struct {
	Code string `json:"code"`
	// Timeout in seconds; at most the server's --exec-timeout (the default).
	Timeout *float64 `json:"timeout,omitempty"`
}

func (s *Server) parseExec(w http.ResponseWriter, r *http.Request) (worker.ExecRequest, error) {
	var req execRequest
	if err := s.decode(w, r, &req, false); err != nil {
		return worker.ExecRequest{}, err
	}
	out := worker.ExecRequest{Code: req.Code, Timeout: s.opts.ExecTimeout}
	if req.Timeout != nil {
		t := *req.Timeout
		max := s.opts.ExecTimeout.Seconds()
		if math.IsNaN(t) || t <= 0 {
			return out, errf(400, "invalid_field", "timeout %v: want a number of seconds above 0", t)
		}
		if t > max {
			return out, errf(400, "invalid_field", "timeout %gs is above the server's maximum of %gs (--exec-timeout); ask for %g or less", t, max, max)
		}
		out.Timeout = time.Duration(t * float64(time.Second))
	}
	return out, nil
}

func (s *Server) handleExecute(w http.ResponseWriter, r *http.Request, ss *session) error {
	req, err := s.parseExec(w, r)
	if err != nil {
		return err
	}
	return ss.exclusive(func() error {
		res, err := s.executeIn(r.Context(), ss, req)
		if err != nil {
			return err
		}
		writeJSON(w, 200, res)
		return nil
	})
}

func busyError(id string, err error) error {
	if errors.Is(err, errDestroyed) {
		return errf(404, "session_not_found", "session %q was deleted", id)
	}
	return errf(409, "session_busy", "session %q is busy with another execution or a reset; wait for it to finish (requests to one session are not queued)", id)
}

// executeIn runs req in the session's worker. A lost worker is replaced at
// once (the result says so); a worker found dead before the run is
// replaced and the code is not run.
func (s *Server) executeIn(ctx context.Context, ss *session, req worker.ExecRequest) (*worker.Result, error) {
	wk, err := ss.worker(ctx)
	if err != nil {
		if errors.Is(err, errDestroyed) {
			return nil, errf(404, "session_not_found", "session %q was deleted", ss.id)
		}
		if ctx.Err() != nil {
			return nil, errf(503, "cancelled", "the request was cancelled while the session's worker was starting")
		}
		ss.replace("the previous start failed")
		return nil, errf(503, "worker_start_failed", "the session's worker could not be started: %v; a new start has begun, retry shortly", err)
	}
	diedIdle := func() *worker.Result {
		reason := "the session's worker died while idle"
		ss.log.Warn().Msg(reason + "; starting a fresh one")
		ss.replace(reason)
		s.metrics.execLost.Add(1)
		return &worker.Result{SessionLost: true, Denials: []report.Event{}, Artifacts: []worker.Artifact{},
			LostReason: reason + "; a fresh worker was started (namespace empty, sandbox files kept); the code was NOT run: send it again"}
	}
	if !wk.Alive() {
		return diedIdle(), nil
	}
	start := time.Now()
	res, err := wk.Execute(ctx, req)
	elapsed := time.Since(start)
	if err != nil {
		if !wk.Alive() { // it died just before the request reached it
			return diedIdle(), nil
		}
		ss.log.Error().Err(err).Msg("execute failed")
		return nil, errf(500, "execute_failed", "execution could not be sent to the worker: %v; retry", err)
	}
	ss.mu.Lock()
	ss.executions++
	ss.mu.Unlock()
	s.account(res, elapsed, false)
	ev := ss.log.Info().Float64("ms", ms(elapsed)).Int("denials", len(res.Denials)).Bool("timed_out", res.TimedOut)
	if res.Error != nil {
		ev = ev.Str("exception", res.Error.Name)
	}
	ev.Msg("executed")
	if res.SessionLost {
		ss.log.Warn().Str("reason", res.LostReason).Msg("the session's worker was lost; starting a fresh one")
		ss.replace(res.LostReason)
		res.LostReason = strings.TrimSuffix(res.LostReason, ".") +
			"; a fresh worker was started for this session (namespace empty, sandbox files kept)"
	}
	normalize(res)
	ss.audit.add(req, res, start, elapsed)
	return res, nil
}

// normalize keeps the JSON arrays non-null.
func normalize(res *worker.Result) {
	if res.Denials == nil {
		res.Denials = []report.Event{}
	}
	if res.Artifacts == nil {
		res.Artifacts = []worker.Artifact{}
	}
}

func (s *Server) account(res *worker.Result, elapsed time.Duration, oneshot bool) {
	if oneshot {
		s.metrics.execOneshot.Add(1)
	} else {
		s.metrics.execSession.Add(1)
	}
	s.metrics.observe(elapsed.Seconds())
	s.metrics.denials.Add(int64(len(res.Denials) + res.DenialsNotListed))
	if res.TimedOut {
		s.metrics.execTimedOut.Add(1)
	}
	if res.SessionLost {
		s.metrics.execLost.Add(1)
	}
	if res.Error != nil {
		s.metrics.execErrors.Add(1)
	}
}

type resetRequest struct {
	// ClearSandbox also deletes every file of the sandbox.
	ClearSandbox bool `json:"clear_sandbox,omitempty"`
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request, ss *session) error {
	var req resetRequest
	if err := s.decode(w, r, &req, true); err != nil {
		return err
	}
	return ss.exclusive(func() error { return s.reset(w, r, ss, req) })
}

// reset replaces the session's worker, clearing the sandbox first if asked.
//
// Precondition: the session is held (exclusive).
func (s *Server) reset(w http.ResponseWriter, r *http.Request, ss *session, req resetRequest) error {
	ss.mu.Lock()
	old := ss.w
	ss.mu.Unlock()
	if old != nil {
		old.Close() // before clearing: no process writes while we delete
	}
	if req.ClearSandbox {
		if err := clearDir(ss.sandbox); err != nil {
			ss.log.Error().Err(err).Msg("reset: could not clear the sandbox")
			return errf(500, "reset_failed", "clear the sandbox %s: %v", ss.sandbox, err)
		}
	}
	ss.replace("reset by the client")
	if _, err := ss.worker(r.Context()); err != nil {
		return errf(503, "worker_start_failed", "reset: could not start a fresh worker: %v", err)
	}
	ss.log.Info().Bool("clear_sandbox", req.ClearSandbox).Msg("session reset")
	writeJSON(w, 200, ss.describe())
	return nil
}

// clearDir removes everything inside dir, never following symlinks.
func clearDir(dir string) error {
	fd, err := openRoot(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// A batch at a time, read again until empty: the code chooses how
	// many entries the directory has (rmtree.ReadSome).
	for {
		names, err := rmtree.ReadSome(fd, 1024)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		for _, n := range names {
			if err := removeAll(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
}

func (s *Server) handleOneshot(w http.ResponseWriter, r *http.Request) {
	req, err := s.parseExec(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		writeError(w, errf(503, "shutting_down", "the server is shutting down"))
		return
	case s.draining:
		s.mu.Unlock()
		writeError(w, s.drainErr())
		return
	case len(s.sessions)+s.oneshots >= s.opts.MaxSessions:
		s.mu.Unlock()
		writeError(w, errf(429, "too_many_sessions", "the server runs its maximum of %d sessions and one-shot executions (--max-sessions); retry later", s.opts.MaxSessions))
		return
	}
	s.oneshots++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.oneshots--
		s.mu.Unlock()
	}()
	wk, sandbox, err := s.pool.take(r.Context())
	if err != nil {
		if errors.Is(err, errShuttingDown) {
			writeError(w, errf(503, "shutting_down", "the server is shutting down"))
			return
		}
		writeError(w, errf(503, "worker_start_failed", "could not start a Python worker: %v (see the server's log)", err))
		return
	}
	log := s.log.With().Str("oneshot", filepath.Base(sandbox)).Logger()
	defer func() {
		wk.Close()
		s.removeSandbox(sandbox, log)
	}()
	start := time.Now()
	res, err := wk.Execute(r.Context(), req)
	elapsed := time.Since(start)
	if err != nil {
		log.Error().Err(err).Msg("one-shot execute failed")
		writeError(w, errf(500, "execute_failed", "execution could not be sent to the worker: %v; retry", err))
		return
	}
	s.account(res, elapsed, true)
	log.Info().Float64("ms", ms(elapsed)).Int("denials", len(res.Denials)).Bool("kept", s.opts.KeepSandboxes).Msg("one-shot executed")
	normalize(res)
	if s.opts.KeepSandboxes {
		w.Header().Set("X-Tracecell-Sandbox", sandbox)
	}
	writeJSON(w, 200, res)
}

func (s *Server) handleCopy(w http.ResponseWriter, r *http.Request, ss *session) error {
	var req copyRequest
	if err := s.decode(w, r, &req, false); err != nil {
		return err
	}
	rep, err := s.copyIn(ss.sandbox, req)
	if err != nil {
		ss.log.Warn().Str("source", req.Source).Str("destination", req.Destination).Err(err).Msg("copy refused or failed")
		return err
	}
	ss.mu.Lock()
	ss.lastUsed = time.Now()
	ss.mu.Unlock()
	s.metrics.copies.Add(1)
	s.metrics.copiedBytes.Add(rep.Bytes)
	ss.log.Info().Str("source", rep.Source).Str("destination", rep.Destination).Int("files", rep.Files).
		Int64("bytes", rep.Bytes).Int("skipped", len(rep.Skipped)).Msg("copied into the sandbox")
	writeJSON(w, 200, rep)
	return nil
}

func (s *Server) handleFiles(w http.ResponseWriter, _ *http.Request, ss *session) error {
	list, err := listSandbox(ss.sandbox)
	if err != nil {
		return err
	}
	writeJSON(w, 200, list)
	return nil
}

func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request, ss *session) error {
	f, st, err := s.openServed(ss.sandbox, r.PathValue("path"))
	if err != nil {
		ss.log.Warn().Str("path", r.PathValue("path")).Err(err).Msg("download refused")
		return err
	}
	defer f.Close()
	serveFile(w, r, f, st)
	return nil
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n, closed, draining := len(s.sessions), s.closed, s.draining
	s.mu.Unlock()
	status, code := "ok", 200
	if closed {
		status, code = "shutting_down", 503
	} else if draining {
		status = "draining" // alive: serving its open sessions (GET /readyz says no)
	}
	writeJSON(w, code, map[string]any{
		"status": status, "sessions": n, "max_sessions": s.opts.MaxSessions,
		"pool_size": s.opts.PoolSize, "pool_ready": s.metrics.poolReady.Load(), "cell": s.opts.CellID, "boot": s.boot,
	})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.metrics.write(w, s.opts.PoolSize)
	s.writeCellMetrics(w)
}

func mimeByExt(name string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func timespecUTC(ts unix.Timespec) string {
	return time.Unix(ts.Sec, ts.Nsec).UTC().Format(time.RFC3339Nano)
}
