// Package report holds what tracecell tells the operator: one Event per
// checked decision, the one-line notice printed on a denial, the JSON-lines
// trace and the JSON report written at exit.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// Decision values of an Event.
const (
	Allow = "allow" // allowed by policy
	Deny  = "deny"  // denied: the call failed with Errno
	Audit = "audit" // would have been denied; allowed because of --mode audit
)

// Event is one checked decision. Its JSON form is the report's and the
// trace's format.
type Event struct {
	Time     time.Time     `json:"time"`
	Decision string        `json:"decision"`
	Pid      int           `json:"pid"` // thread group id
	Tid      int           `json:"tid"`
	Exe      string        `json:"exe,omitempty"`
	Argv     []string      `json:"argv,omitempty"`
	Program  string        `json:"program"` // short name used in notices
	Syscall  string        `json:"syscall"`
	ABI      string        `json:"abi"`
	Nr       int           `json:"nr"`
	Flags    string        `json:"flags,omitempty"` // decoded flags argument
	Kind     syscalls.Kind `json:"kind"`
	Paths    []policy.Path `json:"paths,omitempty"`
	Family   string        `json:"family,omitempty"`
	Address  string        `json:"address,omitempty"`
	Port     int           `json:"port,omitempty"`
	Abstract bool          `json:"abstract,omitempty"`
	// TargetPid is set for signal and process calls.
	TargetPid    *int   `json:"target_pid,omitempty"`
	TargetInTree bool   `json:"target_in_tree,omitempty"`
	Signal       string `json:"signal,omitempty"`
	Rule         string `json:"rule,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Errno        string `json:"errno,omitempty"`
}

// Notice is the one line printed on tracecell's stderr for a denial, e.g.
//
//	tracecell: blocked write: openat("/etc/hosts", O_WRONLY|O_CREAT) by python3[4242]: outside writable roots (/srv/sbx)
func (e *Event) Notice() string {
	var b strings.Builder
	b.WriteString("tracecell: ")
	if e.Decision == Audit {
		b.WriteString("would block ")
	} else {
		b.WriteString("blocked ")
	}
	b.WriteString(e.Kind.String())
	b.WriteString(": ")
	b.WriteString(e.Syscall)
	b.WriteByte('(')
	var args []string
	for _, p := range e.Paths {
		args = append(args, strconv.Quote(p.Given))
	}
	switch {
	case e.Family != "" && e.Address != "":
		a := e.Family + " " + e.Address
		if e.Port != 0 || e.Family == "inet" || e.Family == "inet6" {
			a += " port " + strconv.Itoa(e.Port)
		}
		if len(e.Paths) == 0 {
			args = append(args, a)
		}
	case e.Family != "" && len(e.Paths) == 0:
		args = append(args, e.Family)
	}
	if e.TargetPid != nil {
		args = append(args, "pid "+strconv.Itoa(*e.TargetPid))
	}
	if e.Signal != "" {
		args = append(args, e.Signal)
	}
	if e.Flags != "" {
		args = append(args, e.Flags)
	}
	b.WriteString(strings.Join(args, ", "))
	b.WriteString(") by ")
	b.WriteString(e.Program)
	b.WriteString("[" + strconv.Itoa(e.Pid) + "]")
	b.WriteString(": ")
	b.WriteString(e.Reason)
	for _, p := range e.Paths {
		if p.Resolved != "" && p.Resolved != p.Given && p.Special == "" {
			b.WriteString(" [" + p.Given + " -> " + p.Resolved + "]")
		}
	}
	return strings.ReplaceAll(b.String(), "\n", `\n`)
}

// Exit describes how the command ended.
type Exit struct {
	Code     int    `json:"code"`             // exit code, or -1 when killed by a signal
	Signal   string `json:"signal,omitempty"` // "SIGKILL" when killed by a signal
	TimedOut bool   `json:"timed_out"`
	// Status is tracecell's own exit status (the code, 128+N, 124, 125, 126, 127).
	Status int `json:"status"`
}

// Counts are totals over the run.
type Counts struct {
	Processes int `json:"processes"`
	Threads   int `json:"threads"`
	Execs     int `json:"execs"`
	// Checked calls stopped at the tracer; each is allowed, denied,
	// audited, or failed.
	Checked int `json:"checked"`
	Allowed int `json:"allowed"`
	Denied  int `json:"denied"`
	// Failed calls were failed as the kernel itself would have failed them
	// (a missing directory on the path, a bad fd or pointer, a name too
	// long), without a policy decision: not denials.
	Failed int `json:"failed"`
	// Freezes counts the checked calls that ran with the rest of the tree
	// stopped (the race hardening; 0 for a single-task tree).
	Freezes int `json:"freezes"`
	// Copied counts the checked calls of such a tree that ran with their
	// path copied where the tree cannot write instead (the path page).
	Copied       int `json:"copied"`
	Audited      int `json:"audited"`
	KilledAtExit int `json:"killed_at_exit"`
}

// Report is the JSON document written by --report.
type Report struct {
	Version          int           `json:"version"`
	Tracecell        string        `json:"tracecell"`
	Command          []string      `json:"command"`
	Cwd              string        `json:"cwd"`
	Sandbox          string        `json:"sandbox"`
	Policy           policy.Config `json:"policy"`
	Limits           any           `json:"limits,omitempty"`
	Started          time.Time     `json:"started"`
	Exit             Exit          `json:"exit"`
	WallSeconds      float64       `json:"wall_seconds"`
	CPUUserSeconds   float64       `json:"cpu_user_seconds"`
	CPUSystemSeconds float64       `json:"cpu_system_seconds"`
	PeakRSSKB        int64         `json:"peak_rss_kb"`
	TracerPeakRSSKB  int64         `json:"tracer_peak_rss_kb"`
	Counts           Counts        `json:"counts"`
	// NoFreeze is set when the operator turned the race hardening off.
	NoFreeze bool    `json:"no_freeze,omitempty"`
	Denials  []Event `json:"denials"`
	// DenialsDropped counts denials past the report's cap (the counts stay exact).
	DenialsDropped int      `json:"denials_dropped,omitempty"`
	ScratchLeft    []string `json:"scratch_left"`
	Error          string   `json:"error,omitempty"`
}

// WriteFile writes the report atomically (temp file + rename) so a reader
// never sees half a report, even when tracecell is stopped by a signal.
func (r *Report) WriteFile(path string) error {
	if r.Denials == nil {
		r.Denials = []Event{}
	}
	if r.ScratchLeft == nil {
		r.ScratchLeft = []string{}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tracecell-report-*")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// TraceWriter writes one JSON line per event. It is safe for concurrent use.
type TraceWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewTraceWriter wraps w.
func NewTraceWriter(w io.Writer) *TraceWriter { return &TraceWriter{enc: json.NewEncoder(w)} }

// Write appends e; the first error is kept and returned by Err.
func (t *TraceWriter) Write(e *Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = t.enc.Encode(e)
	}
}

// Err is the first write error.
func (t *TraceWriter) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
