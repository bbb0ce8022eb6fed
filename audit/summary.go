// Package audit reads what tracecell recorded (the JSON report of --report,
// the JSON-lines trace of --trace, a session server's session report) and
// turns it into something a person reads: a summary, the process tree, the
// files changed, every denial grouped by rule, the network and process
// operations, the reads and a timeline, as text, markdown, HTML or JSON. It
// also learns a policy from an audit-mode run (Suggest).
//
// Inputs are streamed: events are decoded one at a time and folded into
// bounded structures (counts per key, a capped number of stored examples),
// so a trace of millions of events is summarised in constant memory.
package audit

import (
	"time"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
)

// Caps of the stored detail. Counts stay exact past them; what is dropped is
// counted in the *Dropped fields.
const (
	MaxProcesses    = 2000  // processes in the tree
	MaxExecsPerProc = 20    // execs listed per process
	MaxDenialKeys   = 5000  // distinct denied operations
	MaxPidsPerKey   = 5     // pids listed per denied operation
	MaxFileKeys     = 5000  // distinct changed files
	MaxNetKeys      = 1000  // distinct network operations
	MaxProcOpKeys   = 1000  // distinct signals and process operations
	MaxReadKeys     = 20000 // distinct read paths counted
	TopReads        = 30    // read paths shown
	MaxMarks        = 300   // notable events on the timeline
	MaxBuckets      = 120   // timeline buckets
)

// Summary is everything a report shows. Its JSON form is the json format.
type Summary struct {
	Version int      `json:"version"`
	Sources []Source `json:"sources"`
	Totals  Totals   `json:"totals"`

	Processes        []*Process `json:"processes"`
	ProcessesDropped int        `json:"processes_dropped,omitempty"`

	// Denials are the denied and would-be-denied (audit) operations,
	// grouped by rule, most frequent rule first.
	Denials           []*RuleGroup `json:"denials"`
	DenialKeysDropped int64        `json:"denial_keys_dropped,omitempty"`

	// Files are the allowed changes (inside the writable roots, scratch,
	// devices): only in a trace.
	Files        []*FileOp `json:"files"`
	FilesDropped int64     `json:"files_dropped,omitempty"`

	Network        []*NetOp `json:"network"`
	NetworkDropped int64    `json:"network_dropped,omitempty"`

	ProcOps        []*ProcOp `json:"process_operations"`
	ProcOpsDropped int64     `json:"process_operations_dropped,omitempty"`

	Reads    *Reads    `json:"reads,omitempty"`
	Timeline *Timeline `json:"timeline,omitempty"`
}

// Source is one input: a run's report, a trace, or one execution of a
// server session.
type Source struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"` // "report", "trace", "session-execution"
	Session string         `json:"session,omitempty"`
	Command []string       `json:"command,omitempty"`
	Code    string         `json:"code,omitempty"` // a session execution's code
	Cwd     string         `json:"cwd,omitempty"`
	Sandbox string         `json:"sandbox,omitempty"`
	Started *time.Time     `json:"started,omitempty"`
	Ended   *time.Time     `json:"ended,omitempty"`
	Wall    float64        `json:"wall_seconds,omitempty"`
	Exit    *report.Exit   `json:"exit,omitempty"`
	Outcome string         `json:"outcome,omitempty"` // a session execution's: "ok", "exception NAME", "timed out", "session lost"
	Counts  *report.Counts `json:"counts,omitempty"`
	Policy  *policy.Config `json:"policy,omitempty"`
	Limits  any            `json:"limits,omitempty"`
	Events  int64          `json:"events"`
	// DenialsDropped: denials the recorder itself dropped (the report's
	// cap); they are in the counts but not in the groups.
	DenialsDropped int    `json:"denials_dropped,omitempty"`
	Error          string `json:"error,omitempty"`
}

// Totals are over every event read.
type Totals struct {
	Events  int64            `json:"events"`
	Allowed int64            `json:"allowed"`
	Denied  int64            `json:"denied"`
	Audited int64            `json:"audited"`
	ByKind  map[string]int64 `json:"by_kind"`
}

// Process is one process of the tree.
type Process struct {
	Pid          int       `json:"pid"`
	Parent       int       `json:"parent,omitempty"` // 0: unknown or the root
	Program      string    `json:"program"`
	Exe          string    `json:"exe,omitempty"`
	Argv         []string  `json:"argv,omitempty"`
	Execs        []Exec    `json:"execs,omitempty"`
	ExecsDropped int       `json:"execs_dropped,omitempty"`
	Exit         *ProcExit `json:"exit,omitempty"`
	First        time.Time `json:"first"`
	Last         time.Time `json:"last"`
	Events       int64     `json:"events"`
	Denied       int64     `json:"denied"` // denials and audits
	Children     []int     `json:"children,omitempty"`
	// Source names the input the process is from, when there are several
	// (pids are per run: two runs may reuse one).
	Source string `json:"source,omitempty"`

	src    string
	parent *Process
	kids   []*Process
}

// Exec is one exec a process made (or tried).
type Exec struct {
	Time     time.Time   `json:"time"`
	Given    string      `json:"given"`
	Program  string      `json:"program"` // resolved
	Decision string      `json:"decision"`
	Rule     policy.Rule `json:"rule,omitempty"` // the rule that decided ("allow-exec", "initial-exec", ...)
}

// ProcExit is how a process ended.
type ProcExit struct {
	Code   *int   `json:"code,omitempty"`
	Signal string `json:"signal,omitempty"`
}

// RuleGroup is every denied or audited operation of one rule.
type RuleGroup struct {
	Rule    policy.Rule `json:"rule"`
	Count   int64       `json:"count"`
	Denied  int64       `json:"denied"`
	Audited int64       `json:"audited"`
	Ops     []*Denial   `json:"operations"`
	// OpsDropped counts operations past MaxDenialKeys.
	OpsDropped int64 `json:"operations_dropped,omitempty"`
}

// Denial is one denied operation (same rule, call, paths, program) and how
// often it was made.
type Denial struct {
	Decision   string        `json:"decision"`
	Kind       string        `json:"kind"`
	Syscall    string        `json:"syscall"`
	Paths      []policy.Path `json:"paths,omitempty"`
	Family     string        `json:"family,omitempty"`
	Address    string        `json:"address,omitempty"`
	Port       int           `json:"port,omitempty"`
	Signal     string        `json:"signal,omitempty"`
	TargetPid  *int          `json:"target_pid,omitempty"`
	Flags      string        `json:"flags,omitempty"`
	Program    string        `json:"program"`
	Exe        string        `json:"exe,omitempty"`
	Pids       []int         `json:"pids"`
	Count      int64         `json:"count"`
	Reason     string        `json:"reason"`
	Errno      string        `json:"errno,omitempty"`
	First      time.Time     `json:"first"`
	SourceName string        `json:"source,omitempty"`
}

// FileOp is one allowed change of a file (kind and resolved paths) and how
// often it was made.
type FileOp struct {
	Kind     string      `json:"kind"`
	Rule     policy.Rule `json:"rule,omitempty"` // the rule that allowed it ("inside-writable-root", "device", ...)
	Paths    []string    `json:"paths"`          // resolved; two for rename and link
	Given    []string    `json:"given"`
	Programs []string    `json:"programs"`
	Count    int64       `json:"count"`
	First    time.Time   `json:"first"`
}

// NetOp is one network operation (connect, bind, sendto) and its decision.
type NetOp struct {
	Syscall  string      `json:"syscall"`
	Kind     string      `json:"kind"`
	Family   string      `json:"family"`
	Address  string      `json:"address,omitempty"`
	Port     int         `json:"port,omitempty"`
	Path     string      `json:"path,omitempty"` // AF_UNIX socket
	Abstract bool        `json:"abstract,omitempty"`
	Decision string      `json:"decision"`
	Rule     policy.Rule `json:"rule,omitempty"`
	Program  string      `json:"program"`
	Count    int64       `json:"count"`
}

// ProcOp is a signal or another call aimed at a process.
type ProcOp struct {
	Syscall   string `json:"syscall"`
	Kind      string `json:"kind"`
	Signal    string `json:"signal,omitempty"`
	TargetPid int    `json:"target_pid"`
	InTree    bool   `json:"target_in_tree"`
	Decision  string `json:"decision"`
	Program   string `json:"program"`
	Count     int64  `json:"count"`
}

// Reads are the allowed reads of a trace.
type Reads struct {
	Opens    int64       `json:"opens"`
	Distinct int64       `json:"distinct"` // exact up to MaxReadKeys, then a lower bound
	Top      []ReadCount `json:"top"`
	Capped   bool        `json:"capped,omitempty"` // more distinct paths than MaxReadKeys
}

// ReadCount is one read path and how often it was opened.
type ReadCount struct {
	Path  string `json:"path"`
	Count int64  `json:"count"`
}

// Timeline is the events over time in equal buckets.
type Timeline struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Width   float64   `json:"bucket_seconds"`
	Buckets []Bucket  `json:"buckets"`
	Marks   []Mark    `json:"marks"`
	// MarksDropped counts notable events past MaxMarks.
	MarksDropped int64 `json:"marks_dropped,omitempty"`
}

// Categories of the timeline, in drawing order.
var Categories = []string{"read", "change", "exec", "network", "process", "denied"}

// Bucket counts the events of one slice of time per category (Categories).
type Bucket struct {
	Counts [6]int64 `json:"counts"`
}

// Mark is a notable event: a denial, an exec, a fork, an exit.
type Mark struct {
	At    float64 `json:"at"` // seconds after Start
	Pid   int     `json:"pid"`
	What  string  `json:"what"` // "denied", "audit", "exec", "fork", "exit"
	Label string  `json:"label"`

	proc *Process // the lane it is drawn on (pids repeat across inputs)
}
