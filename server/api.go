package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/tracecell/tracecell/worker"
)

// The Go API: what an in-process front door (the MCP server, package
// mcpserver) needs. It drives the same sessions, limits, metrics and logs as
// the HTTP API; errors carry the HTTP API's messages and match the
// sentinels below with errors.Is.

var (
	// ErrBusy: the session is running another execution or a reset
	// (requests to one session are not queued).
	ErrBusy = errors.New("session busy")
	// ErrNotFound: no session with that id (deleted, reaped, never made,
	// lost in an earlier boot of this cell; MissOf says which).
	ErrNotFound = errors.New("session not found")
	// ErrWrongCell: the id was minted by another cell (cell.go).
	ErrWrongCell = errors.New("session of another cell")
	// ErrDraining: the cell drains; it creates nothing and holds no such session.
	ErrDraining = errors.New("cell draining")
	// ErrTooManySessions: the server holds --max-sessions sessions.
	ErrTooManySessions = errors.New("too many sessions")
	// ErrShuttingDown: Close has begun.
	ErrShuttingDown = errors.New("shutting down")
	// ErrInvalidID: the id is not 1 to 128 of A-Z a-z 0-9 . _ -.
	ErrInvalidID = errors.New("invalid session id")
)

// Is maps the HTTP API's error codes onto the exported sentinels.
func (e *apiError) Is(target error) bool {
	switch target {
	case ErrBusy:
		return e.code == CodeSessionBusy
	case ErrNotFound:
		switch e.code {
		case CodeSessionNotFound, CodeSessionDeleted, CodeSessionExpired, CodeSessionLost:
			return true
		}
		return false
	case ErrWrongCell:
		return e.code == CodeWrongCell
	case ErrDraining:
		return e.code == CodeDraining
	case ErrTooManySessions:
		return e.code == CodeTooManySessions
	case ErrShuttingDown:
		return e.code == CodeShuttingDown
	case ErrInvalidID:
		return e.code == CodeInvalidID
	}
	return false
}

// ValidID reports whether id may name a session.
func ValidID(id string) bool { return checkID(id) == nil }

// Limits are the effective settings a front door may tell a client (or a
// model) about. The policy itself stays with the operator.
type Limits struct {
	// StateDir holds every session's sandbox (StateDir/sbx-*).
	StateDir string
	// ExecTimeout is the time limit of one execution.
	ExecTimeout time.Duration
	// IdleTimeout closes a session unused this long (0: never).
	IdleTimeout time.Duration
	// MaxOutput caps stdout and stderr of one execution, each (bytes).
	MaxOutput   int
	MaxSessions int
	// Net is "deny", "loopback" or "allow".
	Net string
	// Memory is the address-space limit per process (bytes; 0: none).
	Memory uint64
	// CPUTime, MaxFileSize, MaxProcs and MaxOpenFiles are the policy's
	// other limits of each session's tree (0: none), as `tracecell policy
	// suggest` carries them from a session report.
	CPUTime      time.Duration
	MaxFileSize  uint64
	MaxProcs     int
	MaxOpenFiles int
	// AllowExec are the programs the code may run (none by default).
	AllowExec []string
	// ExtraWrite are writable directories shared by every session besides
	// its own sandbox.
	ExtraWrite []string
	// Audit: the policy only reports what it would block.
	Audit bool
}

// Limits returns the server's effective limits.
func (s *Server) Limits() Limits {
	st := s.opts.Settings
	l := Limits{
		StateDir: s.opts.StateDir, ExecTimeout: s.opts.ExecTimeout, MaxOutput: s.opts.MaxOutput,
		MaxSessions: s.opts.MaxSessions, Net: st.Net, Memory: uint64(st.Memory),
		CPUTime: time.Duration(st.CPUTime), MaxFileSize: uint64(st.MaxFileSize), MaxProcs: st.MaxProcs, MaxOpenFiles: st.MaxOpenFiles,
		AllowExec: append([]string(nil), st.AllowExec...), ExtraWrite: append([]string(nil), st.Write...),
		Audit: st.Mode == "audit",
	}
	if s.opts.IdleTimeout > 0 {
		l.IdleTimeout = s.opts.IdleTimeout
	}
	if l.Net == "" {
		l.Net = "deny"
	}
	return l
}

// Session returns the session id, creating it (from the pool, within
// --max-sessions) when it does not exist; created says which. A session
// another caller is creating at that moment gives ErrBusy. It is Open with
// create set, without what became of an earlier session of that name: a
// front door that shows results to a client should use Open and say it.
func (s *Server) Session(ctx context.Context, id string) (info SessionInfo, created bool, err error) {
	info, o, err := s.Open(ctx, id, true)
	return info, o.Created, err
}

// Describe returns a session's description.
func (s *Server) Describe(id string) (SessionInfo, error) {
	ss, err := s.lookupID(id)
	if err != nil {
		return SessionInfo{}, err
	}
	return ss.describe(), nil
}

// Execute runs code in session id, as POST /v1/sessions/{id}/execute does.
// timeout 0 is the server's --exec-timeout; a longer one is cut to it.
func (s *Server) Execute(ctx context.Context, id, code string, timeout time.Duration) (*worker.Result, error) {
	ss, err := s.lookupID(id)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 || timeout > s.opts.ExecTimeout {
		timeout = s.opts.ExecTimeout
	}
	var res *worker.Result
	err = ss.exclusive(func() error {
		res, err = s.executeIn(ctx, ss, worker.ExecRequest{Code: code, Timeout: timeout})
		return err
	})
	return res, err
}

// Delete ends session id: its worker is killed (an execution in flight
// returns session lost) and its sandbox removed unless kept.
func (s *Server) Delete(id string) error {
	ss, err := s.lookupID(id)
	if err != nil {
		return err
	}
	return s.remove(ss)
}

// OpenFile opens a regular file of session id's sandbox for reading, never
// following a symlink (rel is relative to the sandbox).
func (s *Server) OpenFile(id, rel string) (*os.File, os.FileInfo, error) {
	ss, err := s.lookupID(id)
	if err != nil {
		return nil, nil, err
	}
	return s.openServed(ss.sandbox, rel)
}

// Authorize wraps h with the guards of the HTTP API: requests a web page
// could make a browser send are refused (a Host that is not loopback on a
// loopback listener: DNS rebinding; a cross-site state-changing request),
// and the bearer token is required when one is configured. Another front
// door served by Run is thus guarded the same way.
func (s *Server) Authorize(h http.Handler) http.Handler { return s.auth(h) }
