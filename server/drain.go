package server

// Readiness and drain. A proxy or Kubernetes takes a cell out of rotation
// when GET /readyz says no; on SIGTERM (a pod's deletion, a rolling update)
// a cell with --drain-timeout stops creating sessions and one-shot runs,
// answers ids it does not hold with 503 + Retry-After (so that the client's
// retry reaches a ready cell), and keeps serving the sessions it holds until
// they are all deleted or the drain timeout ends; then it stops as before.

import (
	"fmt"
	"math"
	"net/http"
	"time"
)

// StartDrain makes the cell refuse new sessions and report not ready; the
// sessions it holds are served as before. Idempotent.
func (s *Server) StartDrain() {
	s.mu.Lock()
	already := s.draining
	s.draining = true
	n := len(s.sessions)
	s.mu.Unlock()
	if !already {
		s.log.Info().Int("sessions", n).Dur("drain_timeout", s.opts.DrainTimeout).
			Msg("draining: no new sessions; serving the open ones until they end or the drain timeout")
	}
}

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// drainErr is the answer to a create or one-shot run while draining.
func (s *Server) drainErr() error {
	return errf(503, "draining", "cell %q is draining (shutting down): it creates no sessions and runs no one-shot code; retry: a ready cell will take it", s.opts.CellID)
}

// drain waits until the cell holds no session and runs no one-shot
// execution, or timeout passes, or kill is closed; it returns how many
// sessions were still open.
func (s *Server) drain(timeout time.Duration, kill <-chan struct{}) int {
	s.StartDrain()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		n, oneshots := len(s.sessions), s.oneshots
		s.mu.Unlock()
		if n == 0 && oneshots == 0 {
			s.log.Info().Msg("drained: no session left")
			return 0
		}
		select {
		case <-deadline.C:
			s.log.Warn().Int("sessions", n).Dur("drain_timeout", timeout).Msg("drain timeout: closing the sessions still open")
			return n
		case <-kill:
			s.log.Warn().Int("sessions", n).Msg("drain cut short by a second signal: closing the sessions still open")
			return n
		case <-tick.C:
		}
	}
}

// readiness lists why the cell should not get new sessions now (none: ready).
func (s *Server) readiness() []string {
	s.mu.Lock()
	n, closed, draining := len(s.sessions)+s.oneshots, s.closed, s.draining
	s.mu.Unlock()
	var why []string
	if closed {
		why = append(why, "shutting down")
	} else if draining {
		why = append(why, "draining")
	}
	if n >= s.opts.MaxSessions {
		why = append(why, fmt.Sprintf("full: %d of %d sessions (--max-sessions)", n, s.opts.MaxSessions))
	}
	if s.opts.PoolSize > 0 && s.metrics.poolReady.Load() == 0 {
		why = append(why, fmt.Sprintf("pool empty: 0 of %d warm workers ready (starting)", s.opts.PoolSize))
	}
	return why
}

// handleReady is GET /readyz: 200 when the cell takes new sessions, else
// 503 with the reasons. Like /healthz it needs no token (probes send none).
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	why := s.readiness()
	body := map[string]any{"ready": len(why) == 0, "cell": s.opts.CellID, "boot": s.boot, "reasons": why}
	if why == nil {
		body["reasons"] = []string{}
		writeJSON(w, 200, body)
		return
	}
	w.Header().Set("Retry-After", "1")
	writeJSON(w, 503, body)
}

// shutdown is Run's stop: a drain first when --drain-timeout is set
// (cut short when kill closes), then every worker is killed.
func (s *Server) shutdown(kill <-chan struct{}) {
	reason := "the cell stopped (no drain) and closed it"
	if s.opts.DrainTimeout > 0 {
		if left := s.drain(s.opts.DrainTimeout, kill); left > 0 {
			reason = fmt.Sprintf("still open when the cell's drain ended (after at most %s, --drain-timeout)", s.opts.DrainTimeout)
			s.mu.Lock()
			s.closeDrained = true
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.closeReason = reason
	s.mu.Unlock()
}

// keepalive is POST /v1/sessions/{id}/keepalive: the session counts as
// used now (its expires_at moves on).
func (s *Server) handleKeepalive(w http.ResponseWriter, _ *http.Request, ss *session) error {
	ss.mu.Lock()
	ss.lastUsed = time.Now()
	ss.mu.Unlock()
	writeJSON(w, 200, ss.describe())
	return nil
}

// Keepalive marks session id as used now.
func (s *Server) Keepalive(id string) (SessionInfo, error) {
	ss, err := s.lookupID(id)
	if err != nil {
		return SessionInfo{}, err
	}
	ss.mu.Lock()
	ss.lastUsed = time.Now()
	ss.mu.Unlock()
	return ss.describe(), nil
}

// checkIdle checks a per-session idle timeout in seconds.
func (s *Server) checkIdle(sec float64) (time.Duration, error) {
	if math.IsNaN(sec) || sec < 1 {
		return 0, errf(400, "invalid_field", "idle_timeout %v: want a number of seconds, 1 or more", sec)
	}
	if max := s.opts.IdleTimeout; max > 0 && sec > max.Seconds() {
		return 0, errf(400, "invalid_field", "idle_timeout %gs is above the server's --idle-timeout of %gs; ask for %g or less and send POST /v1/sessions/{id}/keepalive while idle", sec, max.Seconds(), max.Seconds())
	}
	return time.Duration(sec * float64(time.Second)), nil
}
