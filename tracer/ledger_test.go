package tracer

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tracecell/tracecell/report"
)

// TestLedgerOwned: an entry is owned with everything below it; a drop
// takes the entry and everything below, nothing beside it.
func TestLedgerOwned(t *testing.T) {
	l := ledger{"/s/a": true, "/s/a/b/c": true, "/s/ab": true, "/s/x": true}
	l.drop("/s/a")
	l.drop("") // nothing
	cases := []struct {
		path string
		want bool
	}{
		{"/s/a", false},
		{"/s/a/b/c", false},
		{"/s/ab", true},
		{"/s/ab/deep/er", true},
		{"/s/x", true},
		{"/s", false},
		{"/", false},
		{".", false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			if got := l.Owned(c.path); got != c.want {
				t.Errorf("Owned(%q) = %v, want %v", c.path, got, c.want)
			}
		})
	}
}

// TestLedgerLeft: what is left is what still exists, outermost first,
// never nil.
func TestLedgerLeft(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	j := func(p string) string { return filepath.Join(d, p) }
	cases := []struct {
		name string
		l    ledger
		want []string
	}{
		{"empty", ledger{}, []string{}},
		{"gone", ledger{j("gone"): true}, []string{}},
		{"nested under a listed directory", ledger{j("a"): true, j("a/b"): true, j("c"): true, j("gone"): true}, []string{j("a"), j("c")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.l.left(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("left = %#v, want %#v", got, c.want)
			}
		})
	}
}

// TestBoundSocketsCap: past maxBound no socket is recorded.
func TestBoundSocketsCap(t *testing.T) {
	b := boundSockets{}
	for i := range uint64(maxBound) {
		b.add(i + 1)
	}
	if !b.full() || !b.has(1) {
		t.Fatalf("full %v has(1) %v", b.full(), b.has(1))
	}
	b.add(maxBound + 1)
	if b.has(maxBound+1) || len(b) != maxBound {
		t.Fatalf("recorded past the cap: %d sockets", len(b))
	}
}

// TestRecorder: counts are exact, kept events stop at the cap and the rest
// are counted as dropped, every event reaches onEvent.
func TestRecorder(t *testing.T) {
	cases := []struct {
		name      string
		max       int
		decisions []string
		kept      int
		dropped   int
		counts    report.Counts
	}{
		{"under the cap", 0, []string{report.Deny, report.Audit, report.Allow}, 2, 0, report.Counts{Denied: 1, Audited: 1}},
		{"at the cap", 2, []string{report.Deny, report.Deny, report.Deny, report.Audit, report.Allow}, 2, 2, report.Counts{Denied: 3, Audited: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen := 0
			r := recorder{maxDenials: c.max, onEvent: func(*report.Event) { seen++ }}
			for _, d := range c.decisions {
				r.add(&report.Event{Decision: d})
			}
			if len(r.denials) != c.kept || r.dropped != c.dropped || r.counts != c.counts || seen != len(c.decisions) {
				t.Errorf("kept %d dropped %d counts %+v seen %d; want %d %d %+v %d", len(r.denials), r.dropped, r.counts, seen, c.kept, c.dropped, c.counts, len(c.decisions))
			}
		})
	}
	t.Run("tasks born", func(t *testing.T) {
		var r recorder
		r.taskBorn(&task{tid: 5, tgid: 5})
		r.taskBorn(&task{tid: 6, tgid: 5})
		if r.counts.Processes != 1 || r.counts.Threads != 2 {
			t.Errorf("processes %d threads %d, want 1 2", r.counts.Processes, r.counts.Threads)
		}
	})
}
