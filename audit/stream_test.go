package audit

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// TestStreamBounded feeds a trace far past every cap through a pipe (it is
// never whole in memory, not even on disk) and checks that the counts stay
// exact, the stored detail stays within its caps, and the heap stays small.
func TestStreamBounded(t *testing.T) {
	const n = 200000
	pr, pw := io.Pipe()
	go func() {
		enc := json.NewEncoder(pw)
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < n; i++ {
			ev := report.Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Decision: report.Allow, Pid: 1000 + i%5000, Tid: 1000 + i%5000,
				Program: "python3", Syscall: "openat", Kind: syscalls.KindRead,
				Paths: []policy.Path{{Role: "path", Given: fmt.Sprintf("/data/f%d", i), Resolved: fmt.Sprintf("/data/f%d", i)}}}
			if i%3 == 0 {
				ev.Decision, ev.Kind, ev.Rule, ev.Reason = report.Deny, syscalls.KindCreate, "outside-writable-roots", "outside writable roots"
			}
			if err := enc.Encode(&ev); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	var ticks int
	a := NewAggregator()
	if err := Read(a, pr, "pipe", func(string, int64, int64) { ticks++ }); err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	denied := int64((n + 2) / 3)
	if s.Totals.Events != n || s.Totals.Denied != denied || s.Totals.Allowed != n-denied {
		t.Errorf("totals %+v, want %d events, %d denied", s.Totals, n, denied)
	}
	if len(s.Processes) != MaxProcesses || s.ProcessesDropped != 5000-MaxProcesses {
		t.Errorf("%d processes kept, %d dropped; want %d and %d", len(s.Processes), s.ProcessesDropped, MaxProcesses, 5000-MaxProcesses)
	}
	if g := s.Denials[0]; g.Count != denied || len(g.Ops) != MaxDenialKeys || g.OpsDropped != denied-MaxDenialKeys {
		t.Errorf("denials: count %d, %d kept, %d dropped", g.Count, len(g.Ops), g.OpsDropped)
	}
	if r := s.Reads; r.Opens != n-denied || r.Distinct != MaxReadKeys || !r.Capped || len(r.Top) != TopReads {
		t.Errorf("reads: %d opens, %d distinct, capped %v, %d listed", r.Opens, r.Distinct, r.Capped, len(r.Top))
	}
	if len(s.Timeline.Buckets) > MaxBuckets || len(s.Timeline.Marks) != MaxMarks {
		t.Errorf("timeline: %d buckets, %d marks", len(s.Timeline.Buckets), len(s.Timeline.Marks))
	}
	var sum int64
	for _, b := range s.Timeline.Buckets {
		for _, c := range b.Counts {
			sum += c
		}
	}
	if sum != n {
		t.Errorf("the timeline counts %d events, want %d", sum, n)
	}
	if ms.HeapAlloc > 64<<20 {
		t.Errorf("heap %d MB after summarising %d events: not bounded", ms.HeapAlloc>>20, n)
	}
	t.Logf("heap in use %.1f MB after %d events (%d progress calls)", float64(ms.HeapAlloc)/(1<<20), n, ticks)
}

// TestArgvCapped: a process's argv is kept cut, however long the program
// made it.
func TestArgvCapped(t *testing.T) {
	a := NewAggregator()
	a.begin(Source{Name: "t", Kind: "trace"})
	long := make([]string, 5000)
	for i := range long {
		long[i] = strings.Repeat("a", 10000)
	}
	for i := 0; i < 3; i++ {
		a.Event(&report.Event{Time: time.Unix(int64(i), 0), Decision: report.Allow, Pid: 1, Program: "p", Argv: long, Kind: syscalls.KindRead})
	}
	p := a.Summary().Processes[0]
	n := 0
	for _, x := range p.Argv {
		n += len(x)
	}
	if len(p.Argv) != maxArgs || n > maxArgs*(maxArgLen+8) || !strings.HasPrefix(p.Argv[maxArgs-1], "… (4937 more") {
		t.Errorf("argv kept: %d args, %d bytes, last %q", len(p.Argv), n, p.Argv[len(p.Argv)-1])
	}
}

// TestGzipInput: a gzipped trace reads as the trace itself.
func TestGzipInput(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "reports", "tree.trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(t.TempDir(), "tree.trace.jsonl.gz")
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(raw)
	zw.Close()
	os.WriteFile(gz, b.Bytes(), 0o644)
	plain, zipped := summarise(t, []string{"tree.trace.jsonl"}), NewAggregator()
	if err := ReadFiles(zipped, []string{gz}, nil, nil); err != nil {
		t.Fatal(err)
	}
	z := zipped.Summary()
	if z.Totals.Events != plain.Totals.Events || len(z.Processes) != len(plain.Processes) || z.Sources[0].Kind != "trace" {
		t.Errorf("gzipped: %d events, %d processes, kind %s; plain: %d, %d", z.Totals.Events, len(z.Processes), z.Sources[0].Kind, plain.Totals.Events, len(plain.Processes))
	}
}

// TestPidsPerInput: two traces that reuse a pid give two processes, each
// in its own tree.
func TestPidsPerInput(t *testing.T) {
	a := NewAggregator()
	for _, name := range []string{"run1", "run2"} {
		a.begin(Source{Name: name, Kind: "trace"})
		a.Event(&report.Event{Time: time.Unix(1, 0), Decision: report.Allow, Pid: 100, Program: "sh-" + name, Kind: syscalls.KindProcess, Syscall: "fork", Rule: report.RuleLifecycle, ChildPid: 101})
		a.Event(&report.Event{Time: time.Unix(2, 0), Decision: report.Allow, Pid: 101, Program: "ls-" + name, Kind: syscalls.KindRead})
	}
	s := a.Summary()
	rows, _ := treeRows(s)
	if len(s.Processes) != 4 || len(rows) != 4 {
		t.Fatalf("%d processes, %d rows; want 4", len(s.Processes), len(rows))
	}
	for i, want := range []string{"sh-run1", "ls-run1", "sh-run2", "ls-run2"} {
		if rows[i].p.Program != want || (i%2 == 1) != (rows[i].depth == 1) {
			t.Errorf("row %d: %s at depth %d, want %s", i, rows[i].p.Program, rows[i].depth, want)
		}
	}
	if s.Processes[3].Source != "run2" {
		t.Errorf("source %q", s.Processes[3].Source)
	}
}
