// The worker-host's loop: the client's requests, one execution at a time,
// its timeout, interrupt and result, and the denials it collects.

package worker

import (
	"fmt"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/report"
)

func (h *host) onEvent(ev *report.Event) {
	if ev.Decision == report.Allow {
		return
	}
	size := ev.ListedBytes()
	h.evMu.Lock()
	kept := h.evCarried+len(h.events) < maxDenials && h.evBytes+size <= maxDenialBytes
	merged := false
	if kept {
		// One event per PATH search of a refused program (report.ExecWalks);
		// a merged try still adds its path to the listed bytes.
		h.events, merged = h.walks.Add(h.events, ev)
		h.evBytes += size
	} else {
		h.evDropped++
	}
	h.evMu.Unlock()
	if !kept || merged {
		// Logged as a count when the execution ends: a loop of denied
		// calls would otherwise write megabytes per second to the
		// server's log for as long as it runs. A PATH search is logged
		// once, at its first try.
		return
	}
	var given, resolved []string
	for _, p := range ev.Paths {
		given = append(given, p.Given)
		resolved = append(resolved, p.Resolved)
	}
	e := h.log.Warn().Str("decision", ev.Decision).Str("syscall", ev.Syscall).Str("kind", ev.Kind.String()).
		Int("pid", ev.Pid).Str("program", ev.Program)
	if len(ev.Paths) > 0 {
		e = e.Strs("given", given).Strs("paths", resolved)
	}
	if ev.Address != "" {
		e = e.Str("address", ev.Address)
	}
	e.Str("rule", string(ev.Rule)).Str("errno", ev.Errno).Msg(ev.Reason)
}

func (h *host) takeEvents() ([]report.Event, int) {
	h.evMu.Lock()
	defer h.evMu.Unlock()
	ev, n := h.events, h.evDropped
	h.events, h.evDropped, h.evBytes, h.evCarried = nil, 0, 0, 0
	h.walks = report.ExecWalks{}
	return ev, n
}

// takeIdle takes, as an execution starts, the denials listed and counted
// since the last one ended. Code an earlier execution left running (a
// thread, a process it started) made them; they are reported with this
// execution, marked as not its own (finishExec), and stay counted against
// its caps, so that the listed denials and their bytes keep their bounds.
func (h *host) takeIdle() ([]report.Event, int) {
	h.evMu.Lock()
	defer h.evMu.Unlock()
	ev, n := h.events, h.evDropped
	h.events, h.evDropped, h.evCarried = nil, 0, len(ev)
	h.walks = report.ExecWalks{}
	return ev, n
}

// leftover says, as the session ends, what was denied since its last
// execution ended: those denials reach no execution's result. Each listed
// one was logged when it happened; the count of the rest is logged now.
// It returns the text the session's end reason gets ("" for none).
func (h *host) leftover() string {
	ev, dropped := h.takeEvents()
	if len(ev) == 0 && dropped == 0 {
		return ""
	}
	h.log.Warn().Int("denials_logged", len(ev)).Int("denials_not_logged", dropped).
		Msg("the session ended with denials that no execution's result lists: the logged ones are above in this log, the rest were counted, not logged one by one")
	return fmt.Sprintf("after its last execution ended, code it left running was denied %d actions, which no result lists (the server log has them)", len(ev)+dropped)
}

// interruptCur interrupts the current execution's code, now if it runs,
// else as soon as it starts.
func (h *host) interruptCur() {
	if !h.cur.running {
		h.cur.intPending = true
		return
	}
	h.interrupt()
}

func (h *host) interrupt() {
	if h.workerPid <= 0 {
		return
	}
	// The pid is the tracer's (OnStart): the process it forked from this
	// one. Once the tracer has reaped it (the worker exited; its tree may
	// run on) the pid is free for any process of the system: signal it
	// only while it is still our child.
	if procfs.Field(h.workerPid, 4) != strconv.Itoa(os.Getpid()) {
		h.log.Debug().Int("worker_pid", h.workerPid).Msg("interrupt: the worker is no longer this host's child")
		return
	}
	if err := unix.Kill(h.workerPid, unix.SIGINT); err != nil {
		h.log.Debug().Err(err).Msg("interrupt the worker")
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// loop serves the client. It returns the host's exit status.
func (h *host) loop(client <-chan *hostRequest) int {
	for {
		var timeoutC, graceC <-chan time.Time
		if h.cur != nil {
			timeoutC, graceC = timerC(h.cur.timer), timerC(h.cur.grace)
		}
		select {
		case r, ok := <-client:
			if !ok {
				h.log.Debug().Msg("client gone: stopping the worker")
				h.cancelRun()
				<-h.runDone
				h.leftover()
				return 0
			}
			switch r.Op {
			case "execute":
				if h.cur != nil {
					h.send(&hostMessage{Type: "result", ID: r.ID, Reason: "busy", Result: &Result{
						Error: &ExecError{Name: "Busy", Message: "another execution is running"}}})
					continue
				}
				h.startExec(r)
			case "interrupt":
				if h.cur != nil {
					h.interruptCur()
				}
			case "cancel":
				if h.cur != nil && h.cur.grace == nil {
					h.cur.cancelled = true
					h.interruptCur()
					h.cur.grace = time.NewTimer(h.cfg.Grace)
				}
			case "shutdown":
				h.cancelRun()
				<-h.runDone
				h.leftover()
				return 0
			default:
				h.log.Error().Str("op", r.Op).Msg("unknown request from the client")
			}
		case <-timeoutC:
			h.cur.timer = nil
			h.cur.timedOut = true
			h.interruptCur()
			if h.cur.grace == nil {
				h.cur.grace = time.NewTimer(h.cfg.Grace)
			}
		case <-graceC:
			h.cur.grace = nil
			h.cur.killed = true
			why := "timeout"
			if !h.cur.timedOut {
				why = "cancelled"
			}
			h.cur.killReason = fmt.Sprintf("%s: did not stop within %s of the interrupt; the worker was killed", why, h.cfg.Grace)
			h.log.Warn().Int64("id", h.cur.id).Msg(h.cur.killReason)
			h.cancelRun()
		case m, ok := <-h.resps:
			if !ok {
				h.resps = nil // the worker closed fd 4: wait for its end
				continue
			}
			if m.Started != nil {
				if h.cur == nil || *m.Started != h.cur.id || h.cur.running {
					h.violation(fmt.Sprintf("the worker said execution %d started while %s: the code wrote to its control pipe (fd 4); the worker was killed", *m.Started, h.curText()))
					continue
				}
				h.cur.running = true
				if h.cur.intPending {
					h.interrupt()
				}
				continue
			}
			if m.Hello || h.cur == nil || m.ID == nil || *m.ID != h.cur.id {
				what := "a second hello"
				if !m.Hello {
					what = "a response to no execution running"
					if m.ID != nil {
						what = fmt.Sprintf("a response to execution %d", *m.ID)
					}
				}
				h.violation(fmt.Sprintf("the worker sent %s while %s: the code wrote to its control pipe (fd 4); the worker was killed", what, h.curText()))
				continue
			}
			h.finishExec(m, nil)
		case why := <-h.protoErr:
			h.violation(why)
		case o := <-h.runDone:
			reason := h.describeExit(o.res)
			if h.lostWhy != "" {
				reason = h.lostWhy
			}
			if o.err != nil {
				reason = fmt.Sprintf("worker %d: tracer failed: %v", h.workerPid, o.err)
			}
			if h.cur != nil {
				if h.cur.killed {
					reason = h.cur.killReason
				}
				h.finishExec(nil, &reason)
			} else {
				if more := h.leftover(); more != "" {
					reason += "; " + more
				}
				h.log.Warn().Msg(reason)
				h.send(&hostMessage{Type: "exit", Reason: reason})
			}
			return 0
		}
	}
}

// violation ends the worker for breaking the protocol; why is the reason
// the execution's result (or the exit message) gives.
func (h *host) violation(why string) {
	h.log.Warn().Msg(why)
	if h.cur != nil {
		if !h.cur.killed {
			h.cur.killed = true
			h.cur.killReason = why
		}
	} else if h.lostWhy == "" {
		h.lostWhy = why
	}
	h.cancelRun()
}

// curText says which execution runs, for a violation's reason.
func (h *host) curText() string {
	if h.cur == nil {
		return "none was running"
	}
	return fmt.Sprintf("execution %d was running", h.cur.id)
}

func (h *host) startExec(r *hostRequest) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = h.cfg.DefaultTimeout
	}
	st := &execState{id: r.ID, token: newToken(), started: time.Now()}
	st.idle, st.idleDropped = h.takeIdle()
	if st.idleDropped > 0 {
		h.log.Warn().Int64("id", st.id).Int("denials_not_logged", st.idleDropped).Int("denials_logged", len(st.idle)).
			Msg("more denials while no execution was running than the per-execution cap: the rest were counted, not logged one by one")
	}
	h.expectMarker(st.token)
	h.writeRequest(&workerRequest{Op: "execute", ID: r.ID, Code: r.Code, Token: st.token, MaxArtifacts: h.cfg.MaxArtifacts})
	st.timer = time.NewTimer(timeout)
	h.cur = st
}

// finishExec sends the result of the current execution: from the worker's
// response m, or, when the worker died (lost != nil), from what was captured.
func (h *host) finishExec(m *workerMsg, lost *string) {
	st := h.cur
	h.cur = nil
	stopTimer(st.timer)
	stopTimer(st.grace)
	res := &Result{TimedOut: st.timedOut}
	var out, errb []byte
	var dOut, dErr int64
	if m != nil {
		res.Result, res.Error, res.Artifacts = m.Result, m.Error, m.Artifacts
		res.DurationMS, res.Truncated, res.Notes = m.DurationMS, m.Truncated, m.Notes
		h.clampResponse(res)
		var okOut, okErr bool
		out, dOut, okOut = h.stdout.take(markerWait)
		errb, dErr, okErr = h.stderr.take(markerWait)
		if !okOut || !okErr {
			res.Notes = append(res.Notes, "the end of this execution's output was not seen on stdout or stderr; some output may appear in the next execution")
		}
	} else {
		res.SessionLost = true
		res.LostReason = *lost
		res.DurationMS = float64(time.Since(st.started).Microseconds()) / 1000
		out, dOut, _ = h.stdout.takeAll(markerWait)
		errb, dErr, _ = h.stderr.takeAll(markerWait)
	}
	for _, s := range []struct {
		name    string
		dropped int64
	}{{"stdout", dOut}, {"stderr", dErr}} {
		if s.dropped > 0 {
			res.Truncated = true
			res.Notes = append(res.Notes, fmt.Sprintf("%s truncated: %d bytes beyond the limit of %d were dropped", s.name, s.dropped, h.cfg.MaxOutput))
		}
	}
	res.Stdout, res.Stderr = string(trimPartialRune(out, dOut > 0)), string(trimPartialRune(errb, dErr > 0))
	ev, dropped := h.takeEvents()
	if n, d := len(st.idle), st.idleDropped; n > 0 || d > 0 {
		// Made between the last execution's end and this one's start:
		// listed first, and said to be not this execution's.
		ev = append(st.idle, ev...)
		note := fmt.Sprintf("the first %d denials listed came while no execution was running, from code an earlier execution left running (a thread or a process it started), not from this execution's code", n)
		switch {
		case n == 0:
			note = fmt.Sprintf("%d denials came while no execution was running, from code an earlier execution left running (a thread or a process it started), and were counted, not listed", d)
		case d > 0:
			note += fmt.Sprintf("; %d more of those were counted, not listed", d)
		}
		res.Notes = append(res.Notes, note)
		if d > 0 {
			res.Truncated = true
		}
	}
	res.Denials, res.DenialsNotListed = ev, st.idleDropped+dropped
	if res.Denials == nil {
		res.Denials = []report.Event{}
	}
	if res.Artifacts == nil {
		res.Artifacts = []Artifact{}
	}
	if dropped > 0 {
		h.log.Warn().Int64("id", st.id).Int("denials_not_logged", dropped).Int("denials_logged", len(ev)).
			Msg("more denials in this execution than the per-execution cap: the rest were counted, not logged one by one")
		res.Truncated = true
		res.Notes = append(res.Notes, fmt.Sprintf("%d more denials were not listed", dropped))
	}
	if len(res.Notes) == 0 {
		res.Notes = nil
	}
	h.send(&hostMessage{Type: "result", ID: st.id, Result: res})
}

// clampResponse caps what the worker's response put in res. worker.py
// keeps within these caps; a response the code forged on fd 4 may not,
// and nothing from it may exceed what the server's limits promise.
func (h *host) clampResponse(res *Result) {
	cut := false
	clip := func(s *string, max int, keepTail bool) {
		if len(*s) <= max {
			return
		}
		cut = true
		if keepTail {
			*s = "\u2026" + string(trimPartialRuneFront([]byte((*s)[len(*s)-max:])))
		} else {
			*s = string(trimPartialRune([]byte((*s)[:max]), true)) + "\u2026"
		}
	}
	if res.Result != nil {
		r := *res.Result
		clip(&r, maxResultChars, false)
		res.Result = &r
	}
	if e := res.Error; e != nil {
		c := *e
		clip(&c.Name, 1024, false)
		clip(&c.Message, maxErrorChars, false)
		clip(&c.Traceback, maxErrorChars, true)
		res.Error = &c
	}
	if len(res.Notes) > maxNotes {
		res.Notes, cut = res.Notes[:maxNotes], true
	}
	for i := range res.Notes {
		clip(&res.Notes[i], maxNoteChars, false)
	}
	if len(res.Artifacts) > h.cfg.MaxArtifacts {
		res.Artifacts, cut = res.Artifacts[:h.cfg.MaxArtifacts], true
	}
	for i := range res.Artifacts {
		a := &res.Artifacts[i]
		clip(&a.Path, maxPathChars, false)
		clip(&a.Change, 16, false)
		clip(&a.Kind, 16, false)
		clip(&a.MIME, 128, false)
	}
	if cut {
		res.Truncated = true
		res.Notes = append(res.Notes, "the worker's response was larger than the host's caps and was cut")
	}
}

// trimPartialRuneFront drops the continuation bytes a cut left at the
// start of b.
func trimPartialRuneFront(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// trimPartialRune drops an incomplete UTF-8 sequence that truncation left
// at the end of b.
func trimPartialRune(b []byte, truncated bool) []byte {
	if !truncated || len(b) == 0 {
		return b
	}
	j := len(b) - 1
	for j > 0 && j > len(b)-utf8.UTFMax && !utf8.RuneStart(b[j]) {
		j--
	}
	if !utf8.FullRune(b[j:]) {
		return b[:j]
	}
	return b
}
