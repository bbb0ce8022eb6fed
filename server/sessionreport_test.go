package server

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/audit"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/worker"
)

// TestOpenAPISessionReport: the documented session report has exactly the
// JSON fields of the Go types.
func TestOpenAPISessionReport(t *testing.T) {
	d, _ := loadOpenAPI(t)
	for name, v := range map[string]any{"SessionReport": audit.SessionReport{}, "SessionExecution": audit.SessionExecution{}} {
		s, ok := d.Components.Schemas[name]
		if !ok {
			t.Fatalf("schema %s missing", name)
		}
		got := keys(s.Properties)
		sort.Strings(got)
		if want := jsonFields(reflect.TypeOf(v)); !reflect.DeepEqual(got, want) {
			t.Errorf("schema %s has %v, the Go type %v", name, got, want)
		}
	}
}

func TestSessionLogCaps(t *testing.T) {
	var l sessionLog
	ev := report.Event{Decision: report.Deny, Syscall: "openat"}
	many := make([]report.Event, 1000)
	for i := range many {
		many[i] = ev
	}
	long := strings.Repeat("x", maxLoggedCode+10)
	for i := 0; i < maxLoggedDenials/1000+2; i++ {
		l.add(worker.ExecRequest{Code: long}, &worker.Result{Denials: many}, time.Time{}, 0)
	}
	if l.denials != maxLoggedDenials {
		t.Errorf("kept %d denials, want the cap %d", l.denials, maxLoggedDenials)
	}
	last := l.execs[len(l.execs)-1]
	if len(last.Denials) != 0 || !last.Truncated {
		t.Errorf("past the cap: %d denials kept, truncated %v", len(last.Denials), last.Truncated)
	}
	if len(l.execs[0].Code) != maxLoggedCode || !l.execs[0].CodeTruncated {
		t.Errorf("code kept %d bytes (truncated %v), want %d", len(l.execs[0].Code), l.execs[0].CodeTruncated, maxLoggedCode)
	}
	for i := len(l.execs); i < maxLoggedExecs+5; i++ {
		l.add(worker.ExecRequest{Code: "1"}, &worker.Result{}, time.Time{}, 0)
	}
	if len(l.execs) != maxLoggedExecs || l.dropped != 5 {
		t.Errorf("%d executions kept, %d dropped; want %d and 5", len(l.execs), l.dropped, maxLoggedExecs)
	}
}

// TestSessionLogBytes: the denials a session keeps are capped by their
// text too: executions that each list 2 MiB of long paths (the worker's
// cap) grew the shared server by 3 MB each (red team, round 46).
func TestSessionLogBytes(t *testing.T) {
	var l sessionLog
	path := "/" + strings.Repeat("d", 4000)
	ev := report.Event{Decision: report.Deny, Syscall: "openat", Paths: []policy.Path{{Given: path, Resolved: path}}}
	per := make([]report.Event, 250) // 250 x 8 KB: 2 MB, as the worker allows
	for i := range per {
		per[i] = ev
	}
	for i := 0; i < 100; i++ {
		l.add(worker.ExecRequest{Code: "x"}, &worker.Result{Denials: per}, time.Time{}, 0)
	}
	bytes := 0
	for _, x := range l.execs {
		for i := range x.Denials {
			bytes += x.Denials[i].ListedBytes()
		}
	}
	if bytes > maxLoggedDenialBytes || l.bytes != bytes {
		t.Errorf("kept %d bytes of denials (counted %d), cap %d", bytes, l.bytes, maxLoggedDenialBytes)
	}
	if len(l.execs) != 100 || !l.execs[99].Truncated || len(l.execs[99].Denials) != 0 {
		t.Errorf("%d executions; the last one keeps %d denials, truncated %v", len(l.execs), len(l.execs[99].Denials), l.execs[99].Truncated)
	}
	if len(l.execs[0].Denials) != 250 || l.execs[0].Truncated {
		t.Errorf("the first execution keeps %d denials, truncated %v", len(l.execs[0].Denials), l.execs[0].Truncated)
	}
}

// TestSessionReportEndpoint: the session's executions and denials come
// back from GET /v1/sessions/{id}/report, and tracecell report's reader
// (package audit) turns them into the report of a run.
func TestSessionReportEndpoint(t *testing.T) {
	e := newEnv(t, nil)
	e.create("s1")
	e.exec("s1", "set:a=1")
	e.exec("s1", "deny:/etc/passwd")
	e.exec("s1", "deny:/etc/passwd")
	st, b := e.do("GET", "/v1/sessions/s1/report", "")
	if st != 200 {
		t.Fatalf("GET report: %d %s", st, b)
	}
	var r audit.SessionReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Kind != audit.SessionKind || r.Session != "s1" || len(r.Executions) != 3 || r.Policy == nil {
		t.Fatalf("report %+v", r)
	}
	if x := r.Executions[1]; x.Index != 2 || x.Code != "deny:/etc/passwd" || len(x.Denials) != 1 || x.Outcome != "exception PermissionError" {
		t.Errorf("execution 2: %+v", x)
	}
	if r.Policy.WriteRoots[0] != r.Sandbox {
		t.Errorf("policy write roots %v, want the sandbox %s first", r.Policy.WriteRoots, r.Sandbox)
	}
	a := audit.NewAggregator()
	if err := audit.Read(a, strings.NewReader(string(b)), "s1", nil); err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	if len(s.Sources) != 3 || len(s.Denials) != 1 || s.Denials[0].Count != 2 {
		t.Fatalf("summary: %d sources, denials %+v", len(s.Sources), s.Denials)
	}
	if g := s.Denials[0]; g.Rule != "outside-writable-roots" || g.Ops[0].SourceName != "s1#2" {
		t.Errorf("denials grouped under %q, first from %q; want outside-writable-roots from s1#2", g.Rule, g.Ops[0].SourceName)
	}
	// Go API, and a deleted session has no report.
	if _, err := e.s.SessionReport("s1"); err != nil {
		t.Fatal(err)
	}
	e.do("DELETE", "/v1/sessions/s1", "")
	if st, _ := e.do("GET", "/v1/sessions/s1/report", ""); st != 404 {
		t.Errorf("report of a deleted session: %d, want 404", st)
	}
}
