package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
)

// SessionKind is the "kind" of a SessionReport document.
const SessionKind = "tracecell-session"

// SessionReport is a session server's record of one session's decisions
// (GET /v1/sessions/{id}/report): every execution with its outcome and its
// denials, so that an operator gets the same report as for a run.
type SessionReport struct {
	Version int            `json:"version"`
	Kind    string         `json:"kind"` // SessionKind
	Session string         `json:"session"`
	Sandbox string         `json:"sandbox"`
	Created time.Time      `json:"created"`
	Policy  *policy.Config `json:"policy,omitempty"`
	Limits  any            `json:"limits,omitempty"`
	// Executions are in order; at most the server's cap are kept (the
	// first ones), ExecutionsDropped counts the rest.
	Executions        []SessionExecution `json:"executions"`
	ExecutionsDropped int                `json:"executions_dropped,omitempty"`
}

// SessionExecution is one execution of a session.
type SessionExecution struct {
	Index      int       `json:"index"` // 1 for the session's first execution
	Started    time.Time `json:"started"`
	DurationMS float64   `json:"duration_ms"`
	// Code is the code run, cut to MaxCode bytes (CodeTruncated is then set).
	Code          string `json:"code"`
	CodeTruncated bool   `json:"code_truncated,omitempty"`
	// Outcome: "ok", "exception NAME", "timed out" or "session lost: REASON".
	Outcome string         `json:"outcome"`
	Denials []report.Event `json:"denials"`
	// Truncated: denials were dropped: past the worker's cap (1000 per
	// execution) or the session's (20000, or 4 MiB of their text).
	Truncated bool `json:"truncated,omitempty"`
}

// Progress is told, now and then, how far a read has got.
type Progress func(name string, events, bytes int64)

// ReadFiles reads the named files (reports, traces, session reports; "-"
// is stdin) into a. A report given along with a trace adds only its
// summary (command, exit, counts, policy): the trace has its denials too.
func ReadFiles(a *Aggregator, names []string, stdin io.Reader, progress Progress) error {
	traces := 0
	for _, n := range names {
		if n == "-" {
			continue
		}
		if looksLikeTrace(n) {
			traces++
		}
	}
	for _, n := range names {
		var r io.Reader = stdin
		if n != "-" {
			f, err := os.Open(n)
			if err != nil {
				return fmt.Errorf("report %s: %w (give a file written by tracecell run --report or --trace, or a session report)", n, err)
			}
			defer f.Close()
			r = f
		}
		isTrace := looksLikeTrace(n)
		a.skipDenials, a.inTrace = traces > 0 && !isTrace, traces > 0 && isTrace
		if traces > 0 && a.traceDenials == nil {
			a.traceDenials = map[string]struct{}{}
		}
		err := Read(a, r, n, progress)
		a.skipDenials, a.inTrace = false, false
		if err != nil {
			return err
		}
	}
	a.showMissing()
	return nil
}

// looksLikeTrace: a trace's first line is a whole event; a report (and a
// session report) is indented JSON whose first line is "{".
func looksLikeTrace(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var r io.Reader = f
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return false
		}
		r = zr
	} else {
		r = br
	}
	line, _ := bufio.NewReader(r).ReadSlice('\n')
	t := bytes.TrimSpace(line)
	return len(t) > 1 && t[0] == '{'
}

// probe holds the keys that tell the inputs apart.
type probe struct {
	Decision *string `json:"decision"`
	Kind     string  `json:"kind"`
	Command  []string
	Denials  json.RawMessage `json:"denials"`
}

// Read reads one input, sniffing what it is: a trace (JSON lines of
// events), a run's report (one JSON object) or a session report.
func Read(a *Aggregator, r io.Reader, name string, progress Progress) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		// gzip (a trace compresses some 20 times): read through it.
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("report %s: bad gzip: %v", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	dec := json.NewDecoder(br)
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("report %s: empty (give a file written by tracecell run --report or --trace)", name)
		}
		return fmt.Errorf("report %s: not JSON: %v (give a file written by tracecell run --report or --trace)", name, err)
	}
	var p probe
	if err := json.Unmarshal(first, &p); err != nil {
		return fmt.Errorf("report %s: not a JSON object: %v (give a file written by tracecell run --report or --trace)", name, err)
	}
	switch {
	case p.Decision != nil:
		return readTrace(a, dec, first, name, progress)
	case p.Kind == SessionKind:
		var s SessionReport
		if err := json.Unmarshal(first, &s); err != nil {
			return fmt.Errorf("report %s: bad session report: %v", name, err)
		}
		addSession(a, &s, name)
	case p.Denials != nil:
		var rep report.Report
		if err := json.Unmarshal(first, &rep); err != nil {
			return fmt.Errorf("report %s: bad report: %v", name, err)
		}
		addReport(a, &rep, name)
	default:
		return fmt.Errorf("report %s: neither a tracecell report, a trace nor a session report (no \"denials\", \"decision\" or \"kind\": %q key)", name, SessionKind)
	}
	return nil
}

func readTrace(a *Aggregator, dec *json.Decoder, first json.RawMessage, name string, progress Progress) error {
	src := a.begin(Source{Name: name, Kind: "trace"})
	var ev report.Event
	if err := json.Unmarshal(first, &ev); err != nil {
		return fmt.Errorf("trace %s: event 1: %v", name, err)
	}
	a.Event(&ev)
	n := int64(1)
	tick := time.Now()
	for {
		ev = report.Event{}
		err := dec.Decode(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// A trace cut short (tracecell killed while writing):
				// what came before is still the record.
				src.Error = fmt.Sprintf("the trace ends in the middle of event %d (cut short?); read the %d before it", n+1, n)
				break
			}
			return fmt.Errorf("trace %s: event %d (byte %d): %v (is this a tracecell --trace file?)", name, n+1, dec.InputOffset(), err)
		}
		a.Event(&ev)
		n++
		if progress != nil && n%4096 == 0 && time.Since(tick) > 200*time.Millisecond {
			tick = time.Now()
			progress(name, n, dec.InputOffset())
		}
	}
	if progress != nil {
		progress(name, n, dec.InputOffset())
	}
	return nil
}

func addReport(a *Aggregator, rep *report.Report, name string) {
	src := Source{
		Name: name, Kind: "report", Command: rep.Command, Cwd: rep.Cwd, Sandbox: rep.Sandbox,
		Wall: rep.WallSeconds, Limits: rep.Limits, DenialsDropped: rep.DenialsDropped, Error: rep.Error,
	}
	if !rep.Started.IsZero() {
		t := rep.Started
		src.Started = &t
		e := t.Add(time.Duration(rep.WallSeconds * float64(time.Second)))
		src.Ended = &e
	}
	ex, c, pol := rep.Exit, rep.Counts, rep.Policy
	src.Exit, src.Counts = &ex, &c
	if pol.WriteRoots != nil || rep.Error == "" {
		src.Policy = &pol
	}
	s := a.begin(src)
	if a.skipDenials {
		a.held = append(a.held, heldReport{rep, len(a.s.Sources) - 1})
		return
	}
	for _, ev := range reportDenials(rep) {
		a.Event(ev)
	}
	// Events read from a report are its denials only: keep the source's
	// times those of the run.
	s.Started, s.Ended = src.Started, src.Ended
}

func addSession(a *Aggregator, sr *SessionReport, name string) {
	for _, x := range sr.Executions {
		t := x.Started
		e := t.Add(time.Duration(x.DurationMS * float64(time.Millisecond)))
		s := a.begin(Source{
			Name: fmt.Sprintf("%s#%d", sr.Session, x.Index), Kind: "session-execution", Session: sr.Session,
			Code: x.Code, Sandbox: sr.Sandbox, Started: &t, Ended: &e, Wall: x.DurationMS / 1000,
			Outcome: x.Outcome, Policy: sr.Policy, Limits: sr.Limits,
		})
		if x.Truncated {
			s.Error = "the worker dropped denials past its cap (1000 per execution)"
		}
		for i := range x.Denials {
			a.Event(&x.Denials[i])
		}
		s.Started, s.Ended = &t, &e
	}
	if len(sr.Executions) == 0 {
		a.begin(Source{Name: sr.Session, Kind: "session-execution", Session: sr.Session, Sandbox: sr.Sandbox,
			Policy: sr.Policy, Limits: sr.Limits, Outcome: "no executions yet"})
	}
	_ = name
}
