// Package server is `tracecell serve`: an HTTP/JSON API (api/openapi.yaml)
// over stateful Python workers (package worker), each confined to its own
// sandbox directory under the operator's policy.
//
// Decisions (also in api/openapi.yaml):
//   - Two requests to one session: the second is refused with 409
//     "session_busy" (no queue: an agent should see that its previous call
//     is still running, and a queue would hide a hung execution).
//   - Reset: a new worker on the same sandbox; the namespace is gone, the
//     sandbox files are kept unless the body says {"clear_sandbox": true}.
//   - A worker lost mid-execution (killed, crashed, timed out past the
//     grace period): the result says session_lost with the reason, and the
//     server starts a fresh worker on the same sandbox at once; the next
//     execution runs in it (empty namespace, files kept).
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/fsview"
	optdef "github.com/tracecell/tracecell/internal/opts"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/worker"
)

// Options configure a server. Zero values take the documented defaults.
type Options struct {
	// Listen is "unix:PATH" or "HOST:PORT" (default unix:<StateDir>/tracecell.sock).
	Listen string
	// AllowRemote permits a TCP address that is not loopback; Token is then required.
	AllowRemote bool
	// AllowOtherUsers serves loopback TCP clients of any uid without a
	// token (by default only the server's own uid: see peer.go).
	AllowOtherUsers bool
	// Token, when set, is required as "Authorization: Bearer TOKEN" on every
	// request except GET /healthz.
	Token string
	// StateDir holds the sandboxes (default $XDG_STATE_HOME/tracecell, else
	// /var/tmp/tracecell-<uid>); created 0700.
	StateDir string
	// Settings is the operator's policy (from the policy file and flags).
	Settings config.Settings
	Python   string
	Preload  []string
	// PoolSize is the number of warm workers kept ready (default 2; -1: none).
	PoolSize int
	// MaxSessions caps sessions plus running one-shot executions (default 64).
	MaxSessions int
	// IdleTimeout reaps a session not used for this long (default 30m; -1: never).
	IdleTimeout time.Duration
	// ExecTimeout is the default and the maximum timeout of one execution
	// (default 60s); a request may only lower it.
	ExecTimeout time.Duration
	// MaxOutput caps stdout and stderr of one execution, each (default 1 MiB).
	MaxOutput int
	// MaxCopySize caps the bytes of one copy into a sandbox (default 1 GiB).
	MaxCopySize int64
	// MaxBody caps request bodies (default 10 MiB).
	MaxBody int64
	// KeepSandboxes keeps the sandbox directories of deleted sessions and
	// one-shot runs.
	KeepSandboxes bool
	// Grace is how long an interrupted execution may take to stop (0: the worker's default).
	Grace time.Duration

	Log     zerolog.Logger
	Starter Starter
	// Ready, if set, is called with the listening address once the server accepts.
	Ready func(addr string)
	// Handler, if set, builds what Run serves instead of the HTTP API (the
	// MCP server serves its own routes next to it).
	Handler func(*Server) (http.Handler, error)
	// Name is the command named in Run's log lines (default "tracecell serve").
	Name string
	// CellID names this server among others behind one proxy (default: the
	// host name up to its first dot). See cell.go.
	CellID string
	// DrainTimeout, when above 0, makes Run drain when its context ends:
	// no new sessions, open ones served until deleted or this long (drain.go).
	DrainTimeout time.Duration
	// Kill, when closed, cuts a drain short (a second signal).
	Kill <-chan struct{}

	defaulted bool
}

const (
	defaultPoolSize    = 2
	defaultMaxSessions = 64
	defaultIdleTimeout = 30 * time.Minute
	defaultExecTimeout = 60 * time.Second
	defaultMaxOutput   = 1 << 20
	defaultMaxCopySize = 1 << 30
	defaultMaxBody     = 10 << 20
)

// DefaultStateDir is $XDG_STATE_HOME/tracecell, or /var/tmp/tracecell-<uid>.
func DefaultStateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "tracecell")
	}
	return fmt.Sprintf("/var/tmp/tracecell-%d", os.Getuid())
}

func (o *Options) defaults() error {
	if o.defaulted {
		return nil
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir()
	}
	a, err := config.Abs(o.StateDir)
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", o.StateDir, err)
	}
	o.StateDir = a
	if o.Settings, err = absSettings(o.Settings); err != nil {
		return err
	}
	if strings.HasPrefix(o.Python, "~") {
		py, err := config.Abs(o.Python)
		if err != nil {
			return fmt.Errorf("--python %s: %w; give the absolute path", o.Python, err)
		}
		o.Python = py
	}
	if o.Listen == "" {
		o.Listen = "unix:" + filepath.Join(o.StateDir, "tracecell.sock")
	}
	if o.PoolSize == 0 {
		o.PoolSize = defaultPoolSize
	}
	if o.PoolSize < 0 {
		o.PoolSize = 0
	}
	optdef.Positive(&o.MaxSessions, defaultMaxSessions)
	if o.IdleTimeout == 0 {
		o.IdleTimeout = defaultIdleTimeout
	}
	optdef.Positive(&o.ExecTimeout, defaultExecTimeout)
	optdef.Positive(&o.MaxOutput, defaultMaxOutput)
	optdef.Positive(&o.MaxCopySize, defaultMaxCopySize)
	optdef.Positive(&o.MaxBody, defaultMaxBody)
	if o.CellID == "" {
		c, err := defaultCellID()
		if err != nil {
			return err
		}
		o.CellID = c
	} else if err := checkCellID(o.CellID); err != nil {
		return err
	}
	if o.Starter == nil {
		return errors.New("server: no worker starter configured")
	}
	o.defaulted = true
	return nil
}

// Server is the session server. Create it with New, serve Handler(), and
// Close it to kill every worker.
type Server struct {
	opts    Options
	log     zerolog.Logger
	readPol *policy.Policy // decides what a copy may read (deny_read, read roots)
	metrics metrics
	pool    *pool

	mu       sync.Mutex
	sessions map[string]*session
	oneshots int // running one-shot executions (count against MaxSessions)
	closed   bool

	// unreachable are the server's own listeners, which no worker may
	// connect to whatever the net policy (set by Run before any worker
	// starts; a Server from New has no listener of its own).
	unreachable  []policy.Endpoint
	boot         string   // random per process start (cell.go)
	hist         *history // the ids of this cell's boots
	draining     bool     // drain.go
	closeReason  string   // why Close ends the open sessions (recorded per id)
	closeDrained bool     // Close follows a drain that timed out

	bg     sync.WaitGroup // pool refills, restarts, the reaper
	ctx    context.Context
	cancel context.CancelFunc
}

// absSettings makes every path of the operator's policy absolute, with a
// leading "~" expanded, once, here: the worker-hosts that apply the policy
// get a clean environment without HOME (worker.hostEnviron) and their own
// working directory is not the operator's to rely on. An allow_exec entry
// without a slash stays a name looked up in PATH.
func absSettings(st config.Settings) (config.Settings, error) {
	abs := func(key string, list []string, onlyHome bool) ([]string, error) {
		if list == nil {
			return nil, nil
		}
		out := make([]string, 0, len(list))
		for _, p := range list {
			if p != "" && (!onlyHome || strings.HasPrefix(p, "~")) { // ~, ~/x, ~user/x
				a, err := config.Abs(p)
				if err != nil {
					return nil, fmt.Errorf("policy %s %s: %w; give the absolute path, or start the server with HOME set", key, p, err)
				}
				p = a
			}
			out = append(out, p)
		}
		return out, nil
	}
	var err error
	for _, f := range []struct {
		key      string
		list     *[]string
		onlyHome bool
	}{
		{"write", &st.Write, false}, {"read", &st.Read, false}, {"deny_read", &st.DenyRead, false},
		{"scratch", &st.Scratch, false}, {"allow_exec", &st.AllowExec, true},
	} {
		if *f.list, err = abs(f.key, *f.list, f.onlyHome); err != nil {
			return st, err
		}
	}
	return st, nil
}

// New checks opts, creates the state directory, and starts filling the pool.
func New(opts Options) (*Server, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	s.pool.refill()
	return s, nil
}

// newServer is New without filling the pool.
func newServer(opts Options) (*Server, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	given := opts
	resolved, fd, err := openStateDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	opts.StateDir = resolved // the policy compares resolved paths
	// Both the path given and where it leads: a symlink inside a writable
	// root (which a tree may have planted) is no state directory either.
	for _, o := range []Options{given, opts} {
		if err := checkWriteRoots(o); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	err = privateStateDir(fd, opts.StateDir)
	unix.Close(fd)
	if err != nil {
		return nil, err
	}
	pol, err := readPolicy(opts)
	if err != nil {
		return nil, err
	}
	boot := randomHex8()
	hist, err := openHistory(opts.StateDir, opts.CellID, boot, time.Now())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, log: opts.Log.With().Str("cell", opts.CellID).Logger(), readPol: pol, sessions: map[string]*session{},
		ctx: ctx, cancel: cancel, boot: boot, hist: hist,
	}
	s.metrics.init()
	s.metrics.lostEarlierBoot.Store(int64(hist.lostLastBoot))
	if hist.lostLastBoot > 0 {
		s.log.Warn().Int("sessions", hist.lostLastBoot).Msg("the previous boot of this cell stopped without closing its sessions; they are lost, and requests for them are answered so (410 session_lost)")
	}
	s.pool = newPool(s, opts.PoolSize)
	s.bg.Add(1)
	go s.reaper() // also for per-session idle timeouts when the server has none
	return s, nil
}

// checkWriteRoots refuses a writable root (--write, shared by every
// session) that contains the state directory or lies inside it: every
// session could write into the others' sandboxes, and connect to the
// server's Unix socket (the net rule allows Unix sockets inside writable
// roots).
func checkWriteRoots(opts Options) error {
	for _, w := range opts.Settings.Write {
		a, err := config.Abs(w)
		if err != nil {
			continue // config.Build reports it
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			a = r
		}
		// Also through a mount: a bind mount of the state directory
		// inside a root (one volume mounted as both) let every session
		// write the others' sandboxes and reach the socket, unreported
		// (red team, round 53).
		if policy.Under(opts.StateDir, a) || policy.Under(a, opts.StateDir) ||
			fsview.Inside(opts.StateDir, []string{a}) != "" || fsview.Inside(a, []string{opts.StateDir}) != "" {
			return fmt.Errorf("--write %s: overlaps the state directory %s, which holds every session's sandbox and the socket; "+
				"write elsewhere, or choose another --state-dir", w, opts.StateDir)
		}
	}
	return nil
}

// privateStateDir makes the state directory, open as fd (openStateDir,
// which reached it without following a link someone could have planted),
// mode 0700 after checking that this user owns it: a directory another
// user owns is not private to this server.
func privateStateDir(fd int, dir string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat the state directory %s: %w", dir, err)
	}
	if st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("the state directory %s belongs to uid %d, not to this server's user %d: remove it or pass another --state-dir", dir, st.Uid, os.Geteuid())
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return fmt.Errorf("chmod 0700 the state directory %s: %w", dir, err)
	}
	return nil
}

// readPolicy builds the policy a worker of this server runs under (the
// operator's settings plus the state directory as a writable root), used to
// decide whether a copy may read its source. Reads are decided exactly as
// the tracer decides an open for reading by the worker.
func readPolicy(opts Options) (*policy.Policy, error) {
	// config.Build makes TMPDIR (and such) inside its first writable root:
	// give it a scratch directory, then put the state directory in its place.
	scratch, err := os.MkdirTemp(opts.StateDir, ".policy-")
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer removeAll(scratch)
	st := opts.Settings
	st.Write = append([]string{scratch}, opts.Settings.Write...)
	st.Cwd = ""
	st.Report, st.Trace = "", ""
	prog := opts.Python
	if prog == "" {
		prog = "python3"
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			prog = "/usr/bin/python3"
		}
	}
	plan, err := config.Build(&st, []string{prog}, os.Environ())
	if err != nil {
		var nf *config.NotFoundError
		if !errors.As(err, &nf) {
			return nil, fmt.Errorf("policy: %w", err)
		}
		// No Python here (tests with a fake worker): any program gives the same read rules.
		if plan, err = config.Build(&st, []string{"/bin/sh"}, os.Environ()); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
	}
	plan.Policy.WriteRoots[0] = opts.StateDir
	// As in every worker (worker.host): a scratch entry is no session's to
	// copy from but its maker's, and the server knows no maker.
	plan.Policy.PrivateScratch = true
	return policy.New(plan.Policy)
}

// hostConfig is the worker configuration for a sandbox.
func (s *Server) hostConfig(sandbox string) worker.HostConfig {
	// Sessions do not read each other: the state directory is denied for
	// reading, and each worker's own sandbox, a writable root inside it, is
	// carved out of that (policy: the more specific grant wins).
	st := s.opts.Settings
	st.DenyRead = append(append([]string(nil), st.DenyRead...), s.opts.StateDir)
	return worker.HostConfig{
		Settings: st, Sandbox: sandbox, Python: s.opts.Python,
		Preload: s.opts.Preload, MaxOutput: s.opts.MaxOutput, Grace: s.opts.Grace,
		DefaultTimeout: s.opts.ExecTimeout, Unreachable: s.unreachable,
	}
}

// newSandbox makes a fresh 0700 sandbox directory under the state directory.
func (s *Server) newSandbox() (string, error) {
	d, err := os.MkdirTemp(s.opts.StateDir, "sbx-")
	if err != nil {
		return "", fmt.Errorf("create a sandbox under %s: %w", s.opts.StateDir, err)
	}
	return d, nil
}

// removeSandbox deletes a sandbox unless the operator keeps them.
func (s *Server) removeSandbox(dir string, log zerolog.Logger) {
	if s.opts.KeepSandboxes || dir == "" {
		return
	}
	if err := removeAll(dir); err != nil {
		log.Warn().Err(err).Str("sandbox", dir).Msg("could not remove the sandbox; delete it by hand")
	}
}

// startWorker starts a worker on a fresh sandbox.
func (s *Server) startWorker(ctx context.Context) (Worker, string, error) {
	dir, err := s.newSandbox()
	if err != nil {
		return nil, "", err
	}
	w, err := s.startOn(ctx, dir)
	if err != nil {
		s.removeSandbox(dir, s.log)
		return nil, "", err
	}
	return w, dir, nil
}

// probeWorker starts one worker before the server serves; it becomes the
// pool's first (or is closed when the pool is off), and the pool fills.
func (s *Server) probeWorker(ctx context.Context) error {
	w, dir, err := s.startWorker(ctx)
	if err != nil {
		return fmt.Errorf("no Python worker can start, so no session could run (fix the cause and start the server again): %w", err)
	}
	if !s.pool.adopt(w, dir) {
		w.Close()
		s.removeSandbox(dir, s.log)
	}
	s.pool.refill()
	return nil
}

// startOn starts a worker on an existing sandbox.
func (s *Server) startOn(ctx context.Context, dir string) (Worker, error) {
	w, err := s.opts.Starter(ctx, s.hostConfig(dir))
	if err != nil {
		s.metrics.startFailures.Add(1)
		return nil, fmt.Errorf("start a Python worker on %s: %w", dir, err)
	}
	s.metrics.workersStarted.Add(1)
	return w, nil
}

// Close kills every worker (pool, sessions), removes the sandboxes unless
// kept, and waits for background work. Idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	list := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		list = append(list, ss)
	}
	s.sessions = map[string]*session{}
	reason, drained := s.closeReason, s.closeDrained
	s.mu.Unlock()
	if reason == "" {
		reason = "the cell stopped and closed it"
	}
	now := time.Now()
	for _, ss := range list {
		if ss.s == nil {
			continue // a placeholder
		}
		s.hist.end(ss.id, fate{kind: "lost", at: now, reason: reason})
		if drained {
			s.metrics.lostDrain.Add(1)
		} else {
			s.metrics.lostShutdown.Add(1)
		}
	}
	s.hist.close(now, "closed cleanly")
	s.cancel()
	var wg sync.WaitGroup
	for _, ss := range list {
		wg.Add(1)
		go func() { defer wg.Done(); ss.destroy() }()
	}
	wg.Wait()
	s.pool.close()
	s.bg.Wait()
	s.pool.close() // anything a refill finished while we waited
	s.metrics.sessionsActive.Store(0)
}

func (s *Server) reaper() {
	defer s.bg.Done()
	every := s.opts.IdleTimeout / 4
	if every > time.Second || every <= 0 {
		every = time.Second // per-session timeouts (at least 1s) need this much
	}
	if every < 10*time.Millisecond {
		every = 10 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.reapIdle(now)
		}
	}
}

func (s *Server) reapIdle(now time.Time) {
	var idle []*session
	s.mu.Lock()
	for id, ss := range s.sessions {
		if ss.s == nil {
			continue // a placeholder
		}
		if t := ss.idleLimit(); t > 0 && ss.idleSince(now) >= t {
			delete(s.sessions, id)
			idle = append(idle, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range idle {
		s.hist.end(ss.id, fate{kind: "expired", at: now, reason: ss.idleLimit().String()})
		ss.log.Info().Dur("idle", ss.idleLimit()).Msg("session reaped: idle too long")
		s.metrics.sessionsReaped.Add(1)
		s.metrics.sessionsActive.Add(-1)
		ss.destroy()
	}
}

// sessionList returns the sessions sorted by creation.
func (s *Server) sessionList() []*session {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		list = append(list, ss)
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool {
		if list[i].created.Equal(list[j].created) {
			return list[i].id < list[j].id
		}
		return list[i].created.Before(list[j].created)
	})
	return list
}

func randomID(prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// Run listens on opts.Listen and serves until ctx is done, then shuts down:
// stops accepting, kills every worker, removes the socket file.
func Run(ctx context.Context, opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	if err := checkListen(opts); err != nil {
		return err // before any worker starts
	}
	s, err := newServer(opts)
	if err != nil {
		return err
	}
	// The listener first: every worker's policy names it as never
	// reachable (its real address: port 0 and "localhost" are resolved by
	// the bind). Nothing is served before the probe below.
	ln, addr, cleanup, err := listen(s.opts)
	if err != nil {
		s.Close()
		return err
	}
	defer cleanup()
	if s.unreachable, err = listenerEndpoints(ln); err != nil {
		ln.Close()
		s.Close()
		return err
	}
	// A server whose workers cannot start (no Python, a policy a
	// worker-host cannot apply, a preload that kills the interpreter)
	// says so now, and never serves, rather than fail every request.
	if err := s.probeWorker(ctx); err != nil {
		ln.Close()
		s.Close()
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	handler := s.Handler()
	if opts.Handler != nil {
		if handler, err = opts.Handler(s); err != nil {
			ln.Close()
			s.Close()
			return err
		}
	}
	name := opts.Name
	if name == "" {
		name = "tracecell serve"
	}
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute, // idle keep-alive connections do not hold fds forever
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ConnContext:       s.ConnContext,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info().Str("listen", addr).Str("state_dir", s.opts.StateDir).Int("pool_size", s.opts.PoolSize).
		Strs("preload", s.opts.Preload).Int("max_sessions", s.opts.MaxSessions).Msg(name + ": listening")
	if opts.Ready != nil {
		opts.Ready(addr)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	if serveErr == nil {
		s.shutdown(opts.Kill) // a drain first, when --drain-timeout is set
	}
	s.log.Info().Msg("shutting down: closing the listener and killing every worker")
	// Stop accepting first, then kill the workers: running executions
	// return at once (session lost) and their handlers finish.
	ln.Close()
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, net.ErrClosed) {
		return fmt.Errorf("serve %s: %w", addr, serveErr)
	}
	return nil
}

// splitListen parses "unix:PATH" or "HOST:PORT".
func splitListen(l string) (network, address string) {
	if p, ok := strings.CutPrefix(l, "unix:"); ok {
		return "unix", p
	}
	return "tcp", l
}
