package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/internal/rmtree"
	"github.com/tracecell/tracecell/worker"
)

// session is one client session: a sandbox directory and the worker running
// on it (replaced on reset and after a loss).
type session struct {
	s       *Server
	id      string
	sandbox string
	created time.Time
	log     zerolog.Logger

	mu         sync.Mutex
	w          Worker        // nil while a replacement starts
	ready      chan struct{} // closed when w (or startErr) is set
	startErr   error
	busy       bool // an execution or a reset is in flight
	lastUsed   time.Time
	executions int64
	restarts   int64
	destroyed  bool

	audit sessionLog // the executions' decisions (sessionreport.go)
	// idle is this session's idle timeout (0: the server's --idle-timeout).
	idle time.Duration
}

// idleLimit is the session's idle timeout (0: never).
func (ss *session) idleLimit() time.Duration {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.idle > 0 {
		return ss.idle
	}
	if ss.s != nil && ss.s.opts.IdleTimeout > 0 {
		return ss.s.opts.IdleTimeout
	}
	return 0
}

var (
	errBusy      = errors.New("session busy")
	errDestroyed = errors.New("session deleted")
)

func newSession(s *Server, id, sandbox string, w Worker) *session {
	now := time.Now()
	labelWorker(w, id)
	ready := make(chan struct{})
	close(ready)
	return &session{
		s: s, id: id, sandbox: sandbox, created: now, lastUsed: now, w: w, ready: ready,
		log: s.log.With().Str("session", id).Logger(),
	}
}

// acquire marks the session busy; errBusy if it already is.
func (ss *session) acquire() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.destroyed {
		return errDestroyed
	}
	if ss.busy {
		return errBusy
	}
	ss.busy = true
	ss.lastUsed = time.Now()
	return nil
}

func (ss *session) release() {
	ss.mu.Lock()
	ss.busy = false
	ss.lastUsed = time.Now()
	ss.mu.Unlock()
}

func (ss *session) idleSince(now time.Time) time.Duration {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.busy {
		return 0
	}
	return now.Sub(ss.lastUsed)
}

// worker waits for the current worker (a replacement may be starting).
func (ss *session) worker(ctx context.Context) (Worker, error) {
	ss.mu.Lock()
	ready := ss.ready
	ss.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.destroyed {
		return nil, errDestroyed
	}
	if ss.w == nil {
		return nil, ss.startErr
	}
	return ss.w, nil
}

// replace closes the current worker and starts a fresh one on the same
// sandbox in the background; worker() waits for it. why is logged.
func (ss *session) replace(why string) {
	ss.mu.Lock()
	if ss.destroyed {
		ss.mu.Unlock()
		return
	}
	old := ss.w
	ss.w = nil
	ss.startErr = nil
	ready := make(chan struct{})
	ss.ready = ready
	ss.restarts++
	ss.mu.Unlock()
	if old != nil {
		old.Close()
	}
	ss.s.metrics.workerRestarts.Add(1)
	ss.log.Info().Str("why", why).Msg("starting a fresh worker on the session's sandbox")
	ss.s.bg.Add(1)
	go func() {
		defer ss.s.bg.Done()
		w, err := ss.s.startOn(ss.s.ctx, ss.sandbox)
		ss.mu.Lock()
		if ss.destroyed {
			ss.mu.Unlock()
			if w != nil {
				w.Close()
			}
			close(ready)
			return
		}
		ss.w, ss.startErr = w, err
		ss.mu.Unlock()
		if w != nil {
			labelWorker(w, ss.id)
		}
		close(ready)
		if err != nil {
			ss.log.Error().Err(err).Msg("could not start a fresh worker; reset the session (POST .../reset) or delete it")
		}
	}()
}

// destroy kills the worker (an execution in flight returns session lost)
// and removes the sandbox unless kept. The caller has removed the session
// from the server's map.
func (ss *session) destroy() {
	ss.mu.Lock()
	if ss.destroyed {
		ss.mu.Unlock()
		return
	}
	ss.destroyed = true
	w := ss.w
	ss.w = nil
	ready := ss.ready
	ss.mu.Unlock()
	if w != nil {
		w.Close()
	}
	// A replacement that is starting closes its own worker when it sees
	// destroyed; wait for it so that no process outlives the session.
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		ss.log.Warn().Msg("a worker start did not finish within 30s of the session's deletion")
	}
	ss.s.removeSandbox(ss.sandbox, ss.log)
	ss.log.Info().Bool("sandbox_kept", ss.s.opts.KeepSandboxes).Msg("session closed")
}

// SessionInfo describes a session; it is the JSON of GET /v1/sessions/{id}.
type SessionInfo struct {
	ID         string       `json:"id"`
	Sandbox    string       `json:"sandbox"`
	Created    time.Time    `json:"created"`
	LastUsed   time.Time    `json:"last_used"`
	Executions int64        `json:"executions"`
	Busy       bool         `json:"busy"`
	Restarts   int64        `json:"restarts"`
	Alive      bool         `json:"alive"`
	Worker     *worker.Info `json:"worker"`
	// Cell and Boot: where the session lives (cell.go); it cannot move.
	Cell string `json:"cell"`
	Boot string `json:"boot"`
	// LastActiveAt is LastUsed; ExpiresAt is when the idle timeout closes
	// the session if it stays unused (null: never).
	LastActiveAt time.Time  `json:"last_active_at"`
	ExpiresAt    *time.Time `json:"expires_at"`
	// IdleTimeout is the session's idle timeout in seconds (0: never).
	IdleTimeout float64 `json:"idle_timeout"`
}

func (ss *session) describe() SessionInfo {
	limit := ss.idleLimit()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	in := SessionInfo{
		ID: ss.id, Sandbox: ss.sandbox, Created: ss.created.UTC(), LastUsed: ss.lastUsed.UTC(),
		Executions: ss.executions, Busy: ss.busy, Restarts: ss.restarts,
		Cell: ss.s.opts.CellID, Boot: ss.s.boot, LastActiveAt: ss.lastUsed.UTC(), IdleTimeout: limit.Seconds(),
	}
	if limit > 0 {
		e := ss.lastUsed.Add(limit).UTC()
		if ss.busy {
			e = time.Now().Add(limit).UTC() // a running execution keeps it
		}
		in.ExpiresAt = &e
	}
	if ss.w != nil {
		info := ss.w.Info()
		in.Worker = &info
		in.Alive = ss.w.Alive()
	}
	return in
}

// pool keeps warm workers, each on its own fresh sandbox.
type pool struct {
	s    *Server
	size int

	mu       sync.Mutex
	ready    []pooled
	starting int
	closed   bool
}

type pooled struct {
	w       Worker
	sandbox string
}

func newPool(s *Server, size int) *pool { return &pool{s: s, size: size} }

// refill starts workers in the background until size are ready or starting.
func (p *pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.ready)+p.starting < p.size {
		p.starting++
		p.s.bg.Add(1)
		go p.startOne()
	}
	p.s.metrics.poolReady.Store(int64(len(p.ready)))
}

func (p *pool) startOne() {
	defer p.s.bg.Done()
	w, dir, err := p.s.startWorker(p.s.ctx)
	p.mu.Lock()
	p.starting--
	if err != nil {
		closed := p.closed
		p.mu.Unlock()
		// A start cut short by the shutdown is not an error worth a line.
		if !closed && p.s.ctx.Err() == nil {
			p.s.log.Error().Err(err).Msg("pool: could not pre-start a worker; sessions will start theirs on demand")
		}
		return // no retry loop: the next take refills
	}
	if p.closed {
		p.mu.Unlock()
		w.Close()
		p.s.removeSandbox(dir, p.s.log)
		return
	}
	p.ready = append(p.ready, pooled{w, dir})
	p.s.metrics.poolReady.Store(int64(len(p.ready)))
	p.mu.Unlock()
}

// adopt adds a started worker to the pool if it has room; false: it has
// none (the caller closes the worker).
func (p *pool) adopt(w Worker, dir string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.ready)+p.starting >= p.size {
		return false
	}
	p.ready = append(p.ready, pooled{w, dir})
	p.s.metrics.poolReady.Store(int64(len(p.ready)))
	return true
}

// take returns a ready worker and its sandbox, or starts one synchronously
// when the pool is empty; then refills the pool in the background.
func (p *pool) take(ctx context.Context) (Worker, string, error) {
	defer p.refill()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, "", errShuttingDown
		}
		if len(p.ready) == 0 {
			p.mu.Unlock()
			break
		}
		pw := p.ready[0]
		p.ready = p.ready[1:]
		p.s.metrics.poolReady.Store(int64(len(p.ready)))
		p.mu.Unlock()
		if pw.w.Alive() {
			return pw.w, pw.sandbox, nil
		}
		p.s.log.Warn().Str("sandbox", pw.sandbox).Msg("pool: a warm worker had died; discarding it")
		pw.w.Close()
		p.s.removeSandbox(pw.sandbox, p.s.log)
	}
	p.s.metrics.poolMisses.Add(1)
	return p.s.startWorker(ctx)
}

// close kills the ready workers; starting ones close themselves.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	list := p.ready
	p.ready = nil
	p.s.metrics.poolReady.Store(0)
	p.mu.Unlock()
	for _, pw := range list {
		pw.w.Close()
		p.s.removeSandbox(pw.sandbox, p.s.log)
	}
}

var errShuttingDown = errors.New("the server is shutting down")

// removeAll removes a sandbox (or an entry of one) with a bounded number of
// descriptors, never through a symlink, making directories the code made
// read-only removable first (package rmtree).
func removeAll(dir string) error {
	return rmtree.RemoveAll(dir)
}
