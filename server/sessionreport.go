package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/tracecell/tracecell/audit"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/worker"
)

// A session keeps the decisions of its executions so that an operator can
// get the same report as for a run (GET /v1/sessions/{id}/report, read by
// `tracecell report`). The record is bounded: the first maxLoggedExecs
// executions, the first maxLoggedDenials denials over all of them (the
// worker already caps one execution's at 1000) and at most
// maxLoggedDenialBytes of their text (report.Event.ListedBytes: paths,
// argv, reasons), and maxLoggedCode bytes of each execution's code. The
// record lives in the server, which every session shares: without the
// byte cap one session whose executions each listed 2 MiB of long paths
// (the worker's cap per execution) grew the server by 3 MB an execution,
// 574 MB after 81 (red team, round 46).
const (
	maxLoggedExecs       = 1000
	maxLoggedDenials     = 20000
	maxLoggedDenialBytes = 4 << 20
	maxLoggedCode        = 4096
)

// sessionLog is one session's record. Its zero value is ready.
type sessionLog struct {
	mu      sync.Mutex
	execs   []audit.SessionExecution
	dropped int // executions past maxLoggedExecs
	denials int // denials kept over all executions
	bytes   int // their ListedBytes
}

// add records one execution that ran (index counts from 1).
func (l *sessionLog) add(req worker.ExecRequest, res *worker.Result, start time.Time, elapsed time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.execs) >= maxLoggedExecs {
		l.dropped++
		return
	}
	x := audit.SessionExecution{
		Index: len(l.execs) + 1, Started: start.UTC(), DurationMS: float64(elapsed.Microseconds()) / 1000,
		Code: req.Code, Truncated: res.Truncated && len(res.Denials) >= 1000,
	}
	if len(x.Code) > maxLoggedCode {
		x.Code, x.CodeTruncated = x.Code[:maxLoggedCode], true
	}
	switch {
	case res.SessionLost:
		x.Outcome = "session lost: " + res.LostReason
	case res.TimedOut:
		x.Outcome = "timed out"
	case res.Error != nil:
		x.Outcome = "exception " + res.Error.Name
	default:
		x.Outcome = "ok"
	}
	x.Denials = []report.Event{}
	for i := range res.Denials {
		n := res.Denials[i].ListedBytes()
		if l.denials >= maxLoggedDenials || l.bytes+n > maxLoggedDenialBytes {
			x.Truncated = true
			break
		}
		x.Denials = append(x.Denials, res.Denials[i])
		l.denials++
		l.bytes += n
	}
	l.execs = append(l.execs, x)
}

// SessionReport returns session id's record of decisions, as GET
// /v1/sessions/{id}/report does.
func (s *Server) SessionReport(id string) (*audit.SessionReport, error) {
	ss, err := s.lookupID(id)
	if err != nil {
		return nil, err
	}
	return s.sessionReport(ss), nil
}

func (s *Server) sessionReport(ss *session) *audit.SessionReport {
	pc := s.readPol.Config()
	if len(pc.WriteRoots) > 0 {
		pc.WriteRoots[0] = ss.sandbox // the state directory stands for every session's sandbox
	}
	r := &audit.SessionReport{
		Version: 1, Kind: audit.SessionKind, Session: ss.id, Sandbox: ss.sandbox, Created: ss.created.UTC(),
		Policy: &pc, Limits: s.Limits(),
	}
	ss.audit.mu.Lock()
	r.Executions = append([]audit.SessionExecution{}, ss.audit.execs...)
	r.ExecutionsDropped = ss.audit.dropped
	ss.audit.mu.Unlock()
	return r
}

func (s *Server) handleSessionReport(w http.ResponseWriter, _ *http.Request, ss *session) error {
	writeJSON(w, 200, s.sessionReport(ss))
	return nil
}
