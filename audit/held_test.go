package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// TestReportWithShortTrace: `tracecell report r.json t.jsonl` takes the
// denials from the trace, which has every one; but a trace cut short (the
// tree filled the disk it was on, red team round 50) lacks some, and those
// were then shown nowhere. The report's denials the trace lacks are shown
// from the report, once, and the report's source says so; with a whole
// trace nothing is counted twice.
func TestReportWithShortTrace(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	deny := func(i int, path string) report.Event {
		return report.Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Decision: report.Deny, Pid: 100, Tid: 100,
			Program: "python3", Syscall: "openat", Kind: syscalls.KindWrite, Rule: "outside-writable-roots", Reason: "outside writable roots",
			Paths: []policy.Path{{Role: "path", Given: path, Resolved: path}}}
	}
	denials := []report.Event{deny(1, "/etc/a"), deny(2, "/etc/b"), deny(3, "/etc/c")}
	for _, tc := range []struct {
		name       string
		inTrace    int    // how many of the denials the trace holds
		listed     int    // how many the report lists in denials (the cap)
		untraced   []int  // which it lists in untraced_denials
		traceError string // the report's trace_error
		wantPaths  []string
		wantNote   bool
	}{
		{"whole", 3, 3, nil, "", []string{"/etc/a", "/etc/b", "/etc/c"}, false},
		{"cut-short", 1, 3, nil, "", []string{"/etc/a", "/etc/b", "/etc/c"}, true},
		{"disk-full", 0, 3, nil, "--trace t.jsonl: write t.jsonl: no space left on device", []string{"/etc/a", "/etc/b", "/etc/c"}, true},
		// Round 51: the list full (1 of 3 listed), the trace failed on the
		// third: it is in untraced_denials, and shown once.
		{"past-the-cap", 2, 1, []int{2}, "--trace t.jsonl: write t.jsonl: no space left on device", []string{"/etc/a", "/etc/b", "/etc/c"}, true},
		// Untraced denials the list holds too are not shown twice.
		{"untraced-listed", 2, 3, []int{2}, "--trace t.jsonl: write t.jsonl: no space left on device", []string{"/etc/a", "/etc/b", "/etc/c"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rep := report.Report{Version: 1, Command: []string{"python3", "x.py"}, Started: t0, Denials: denials[:tc.listed],
				DenialsDropped: 3 - tc.listed, Counts: report.Counts{Checked: 3, Denied: 3}, TraceError: tc.traceError}
			for _, i := range tc.untraced {
				rep.UntracedDenials = append(rep.UntracedDenials, denials[i])
			}
			b, err := json.MarshalIndent(&rep, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			rp, tp := filepath.Join(dir, "r.json"), filepath.Join(dir, "t.jsonl")
			if err := os.WriteFile(rp, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var lines []string
			allow := report.Event{Time: t0, Decision: report.Allow, Pid: 100, Tid: 100, Program: "python3", Syscall: "openat", Kind: syscalls.KindRead,
				Paths: []policy.Path{{Role: "path", Given: "x.py", Resolved: "/w/x.py"}}}
			for _, ev := range append([]report.Event{allow}, denials[:tc.inTrace]...) {
				b, _ := json.Marshal(&ev)
				lines = append(lines, string(b))
			}
			if err := os.WriteFile(tp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, order := range [][]string{{rp, tp}, {tp, rp}, {rp}} {
				if len(order) == 1 && tc.listed+len(tc.untraced) < 3 {
					continue // the report alone lacks what only the trace has
				}
				a := NewAggregator()
				if err := ReadFiles(a, order, nil, nil); err != nil {
					t.Fatal(err)
				}
				s := a.Summary()
				got := map[string]int64{}
				for _, g := range s.Denials {
					for _, op := range g.Ops {
						got[op.Paths[0].Resolved] += op.Count
					}
				}
				for _, p := range tc.wantPaths {
					if got[p] != 1 {
						t.Errorf("%v: %s shown %d times, want once (all: %v)", order, p, got[p], got)
					}
				}
				note := ""
				for _, src := range s.Sources {
					if src.Kind == "report" {
						note = src.Error
					}
				}
				if has := strings.Contains(note, "lacks are shown from the report"); has != (tc.wantNote && len(order) == 2) {
					t.Errorf("%v: report source error %q, want the note: %v", order, note, tc.wantNote)
				}
				if tc.traceError != "" && len(order) == 2 && !strings.Contains(note, tc.traceError) {
					t.Errorf("%v: note %q does not repeat the report's trace_error", order, note)
				}
			}
		})
	}
}
