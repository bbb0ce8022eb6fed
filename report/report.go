// Package report holds what tracecell tells the operator: one Event per
// checked decision, the one-line notice printed on a denial, the JSON-lines
// trace and the JSON report written at exit.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// Decision values of an Event.
const (
	Allow = "allow" // allowed by policy
	Deny  = "deny"  // denied: the call failed with Errno
	Audit = "audit" // would have been denied; allowed because of --mode audit
)

// RuleLifecycle marks the trace's process events, which are no checked
// call: "fork", "vfork" and "clone" (a new process, ChildPid) and "exit"
// (ExitCode or Signal). Their decision is allow and they are not counted.
// It is policy.RuleLifecycle, named here where the events are.
const RuleLifecycle = policy.RuleLifecycle

// Event is one checked decision. Its JSON form is the report's and the
// trace's format.
type Event struct {
	Time     time.Time `json:"time"`
	Decision string    `json:"decision"`
	Pid      int       `json:"pid"` // thread group id
	Tid      int       `json:"tid"`
	Exe      string    `json:"exe,omitempty"`
	Argv     []string  `json:"argv,omitempty"`
	// ArgvTruncated: the process's argv was longer than tracecell keeps
	// (4 KiB): Argv is its start.
	ArgvTruncated bool `json:"argv_truncated,omitempty"`
	// ExeBytes and ArgvBytes repeat Exe and Argv byte for byte when one
	// of them is not valid UTF-8 (KeepBytes; see policy.Path.GivenBytes).
	ExeBytes  []byte        `json:"exe_base64,omitempty"`
	ArgvBytes [][]byte      `json:"argv_base64,omitempty"`
	Program   string        `json:"program"` // short name used in notices
	Syscall   string        `json:"syscall"`
	ABI       string        `json:"abi"`
	Nr        int           `json:"nr"`
	Flags     string        `json:"flags,omitempty"` // decoded flags argument
	Kind      syscalls.Kind `json:"kind"`
	Paths     []policy.Path `json:"paths,omitempty"`
	Family    string        `json:"family,omitempty"`
	Address   string        `json:"address,omitempty"`
	Port      int           `json:"port,omitempty"`
	Abstract  bool          `json:"abstract,omitempty"`
	// TargetPid is set for signal and process calls.
	TargetPid    *int        `json:"target_pid,omitempty"`
	TargetInTree bool        `json:"target_in_tree,omitempty"`
	Signal       string      `json:"signal,omitempty"`
	Rule         policy.Rule `json:"rule,omitempty"`
	Reason       string      `json:"reason,omitempty"`
	Errno        string      `json:"errno,omitempty"`
	// Tried is set on an exec denial that stands for a PATH search
	// (execvp, posix_spawnp, subprocess, os.system's shell): every program
	// path the search tried and was refused, in order, the first being
	// Paths[0]'s. Each try was a refused execve of its own (Counts.Denied
	// and the --trace file count and list each); see ExecWalks.
	Tried []policy.Path `json:"tried,omitempty"`
	// ChildPid is the new process of a lifecycle fork event.
	ChildPid int `json:"child_pid,omitempty"`
	// ExitCode is the status of a lifecycle exit event (nil when the
	// process was killed by Signal).
	ExitCode *int `json:"exit_code,omitempty"`
	// Summary is Summarize() of a denial or an audit event. It is an
	// output: MarshalJSON renders it from the other fields every time
	// (so it never goes stale when ExecWalks adds to Tried), and decoding
	// keeps what the encoder wrote for readers of the JSON.
	Summary string `json:"summary,omitempty"`
}

// ListedBytes is the size of the text of e that its program chose (paths,
// argv, exe, address) or that names it (reason, tried paths): what a list
// of denials holds per event beyond its fixed fields. Caps on such lists
// count it (a program can make each denial name 4 KiB paths).
func (e *Event) ListedBytes() int {
	n := len(e.Exe) + len(e.Address) + len(e.Reason)
	for _, a := range e.Argv {
		n += len(a)
	}
	for _, ps := range [][]policy.Path{e.Paths, e.Tried} {
		for _, p := range ps {
			n += len(p.Given) + len(p.Resolved) + len(p.Base) + len(p.Special)
		}
	}
	return n
}

// MarshalJSON is the event's JSON with Summary rendered for a denial or
// an audit event (allowed and lifecycle events have none).
func (e Event) MarshalJSON() ([]byte, error) {
	type fields Event // the fields without this method
	f := fields(e)
	f.Summary = ""
	if e.Decision != Allow {
		f.Summary = e.Summarize()
	}
	return json.Marshal(f)
}

// Summarize is the event in one line, in words that carry no detail of
// the operator's policy: whether the call was blocked (or, in audit mode,
// would be), its kind, the call with its arguments as the program gave
// them, and the program and pid, e.g.
//
//	blocked write: openat("/etc/hosts", O_WRONLY|O_CREAT) by python3[4242]
//
// It is written once here and shown by every surface: Notice and
// Detailed add the reason and the resolved paths; the MCP result
// (mcpserver) and the Python client's formatter say what to do instead
// where they know, and show it (the MCP result Detailed) where not.
func (e *Event) Summarize() string {
	var b strings.Builder
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
		args = append(args, p.Shown())
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
	// The program's name and a socket's path are the tree's to choose:
	// nothing of them may act on a terminal or end the line (Visible).
	return Visible(b.String())
}

// Notice is the one line printed on tracecell's stderr for a denial: the
// event's Summarize, its reason, the paths given that resolved elsewhere
// and the paths a PATH search tried, e.g.
//
//	tracecell: blocked write: openat("/etc/hosts", O_WRONLY|O_CREAT) by python3[4242]: outside writable roots (/srv/sbx)
func (e *Event) Notice() string { return "tracecell: " + e.Detailed() }

// Detailed is Summarize with the reason, the paths given that resolved
// elsewhere and the paths a PATH search tried: the notice without its
// "tracecell: ", for readers who may see the policy's words.
func (e *Event) Detailed() string {
	var b strings.Builder
	b.WriteString(e.Summarize())
	b.WriteString(": ")
	b.WriteString(elide(e.Reason))
	for _, p := range e.Paths {
		if p.Resolved != "" && p.Resolved != p.Given && p.Special == "" {
			given := p.Given
			if p.Null {
				given = "NULL"
			}
			b.WriteString(" [" + given + " -> " + elide(p.Resolved) + "]")
		}
	}
	if len(e.Tried) > 1 {
		var ts []string
		for _, p := range e.Tried {
			ts = append(ts, strconv.Quote(p.Given))
		}
		b.WriteString(" (PATH search tried " + strings.Join(ts, ", ") + ")")
	}
	// A resolved path, like the given one, is the tree's to choose (Visible).
	return Visible(b.String())
}

// maxShown is the most bytes of one resolved path or reason a line of
// text shows (Detailed): a given path is at most PATH_MAX, but a relative
// one resolves against a cwd that may be deeper (tracecell names paths up
// to 1 MiB), and a notice per denial of half-megabyte paths put 150 MB on
// stderr for 300 denials (red team, round 45). The report keeps them
// whole.
const maxShown = 4096

// elide is s, or its start and end around a note of the bytes left out
// when it is longer than maxShown.
func elide(s string) string {
	if len(s) <= maxShown {
		return s
	}
	head, tail := maxShown/2, maxShown/4
	return s[:head] + "…(" + strconv.Itoa(len(s)-head-tail) + " bytes not shown)…" + s[len(s)-tail:]
}

// ExecWalks groups the exec denials of one PATH search into one event.
//
// execvp(3), posix_spawnp(3) and CPython's subprocess (_posixsubprocess's
// child_exec) look a bare program name up by calling execve(2) on each
// PATH entry in turn until one succeeds; with exec denied, each entry
// where the program exists (/usr/bin/uname and, on a merged-/usr system,
// /bin/uname) is one refused call, for one action of the program. The
// rule: an exec denial continues the walk of the previous denial of the
// same process when that one was an exec denial too, from the same thread,
// with the same decision (deny or audit), of a program with the same base
// name, and this path was not tried in the walk yet (a walk tries each
// entry once; a second os.execvp of the same name starts a new walk).
// Nothing runs between the tries of a walk (the loops above make no other
// system call), so any other recorded event of the process ends it.
//
// A walk ends after maxWalkTries tries: the next denial starts a new one.
// A PATH search tries each PATH entry once, so that is more than any real
// search; without it a tree that exec'd one name by ever new spellings
// (/usr/./bin/ls, /usr/.//bin/ls, ...) made a single walk that never ended,
// and `run`'s notice printer kept every path of it (red team, round 44:
// 827 MB after 150,000 denials of 4 KB paths). The paths tried are kept
// as hashes, so an open walk holds at most maxWalkTries words.
//
// The zero value is ready to use; it is not safe for concurrent use.
type ExecWalks struct {
	open map[int]*execWalk // by Pid: the walk its last denial may continue
	seed maphash.Seed      // for execWalk.tried; set at the first walk
}

type execWalk struct {
	idx      int // index of the walk's event in the caller's list (Add)
	tid      int
	base     string
	decision string
	tried    map[uint64]bool // maphash of each path tried (Given)
}

// maxWalkTries is the most tries one walk stands for (ExecWalks).
const maxWalkTries = 64

// maxOpenWalks bounds the processes remembered: each is forgotten when
// its next event is recorded, but a process that exits after a refused
// walk (the child of a failed subprocess) is never heard from again.
const maxOpenWalks = 4096

func execBase(e *Event) string {
	if e.Kind != syscalls.KindExec || e.Decision == Allow || len(e.Paths) == 0 || e.Paths[0].Given == "" {
		return ""
	}
	return filepath.Base(e.Paths[0].Given)
}

// Continues reports whether e continues the open walk of its process
// (then e adds to that walk's event rather than standing for an action of
// its own), and records e as the process's last event either way.
func (w *ExecWalks) Continues(e *Event) bool {
	_, ok := w.step(e, -1)
	return ok
}

// step is Continues; idx is where e is stored when it starts a walk, and
// the index of the walk's event is returned when it continues one.
func (w *ExecWalks) step(e *Event, idx int) (int, bool) {
	base := execBase(e)
	wk := w.open[e.Pid]
	if base == "" {
		delete(w.open, e.Pid)
		return 0, false
	}
	tries := e.Tried
	if len(tries) == 0 {
		tries = e.Paths[:1]
	}
	if wk != nil && wk.tid == e.Tid && wk.base == base && wk.decision == e.Decision &&
		len(wk.tried)+len(tries) <= maxWalkTries && !w.anyTried(wk.tried, tries) {
		for _, p := range tries {
			wk.tried[maphash.String(w.seed, p.Given)] = true
		}
		return wk.idx, true
	}
	if w.open == nil || len(w.open) >= maxOpenWalks {
		w.open = map[int]*execWalk{}
		if w.seed == (maphash.Seed{}) {
			w.seed = maphash.MakeSeed()
		}
	}
	wk = &execWalk{idx: idx, tid: e.Tid, base: base, decision: e.Decision, tried: map[uint64]bool{}}
	for _, p := range tries {
		wk.tried[maphash.String(w.seed, p.Given)] = true
	}
	w.open[e.Pid] = wk
	return 0, false
}

func (w *ExecWalks) anyTried(tried map[uint64]bool, ps []policy.Path) bool {
	for _, p := range ps {
		if tried[maphash.String(w.seed, p.Given)] {
			return true
		}
	}
	return false
}

// Add appends e to list, or, when e continues a walk (Continues), adds
// its paths to the Tried of the walk's event in list instead; merged says
// which. list must be the list earlier calls returned.
func (w *ExecWalks) Add(list []Event, e *Event) (out []Event, merged bool) {
	i, ok := w.step(e, len(list))
	if !ok {
		return append(list, *e), false
	}
	first := &list[i]
	if len(first.Tried) == 0 {
		first.Tried = []policy.Path{first.Paths[0]}
	}
	// [:n:n]: append copies, never writing into an array the caller's
	// events share (GroupExecWalks leaves its input as it was).
	first.Tried = first.Tried[:len(first.Tried):len(first.Tried)]
	if len(e.Tried) > 0 {
		first.Tried = append(first.Tried, e.Tried...)
	} else {
		first.Tried = append(first.Tried, e.Paths[0])
	}
	return list, true
}

// GroupExecWalks returns evs with the exec denials of each PATH search
// merged into its first (ExecWalks); evs is not changed. Grouping a
// grouped list changes nothing.
func GroupExecWalks(evs []Event) []Event {
	if evs == nil {
		return nil
	}
	var w ExecWalks
	out := make([]Event, 0, len(evs))
	for i := range evs {
		out, _ = w.Add(out, &evs[i])
	}
	return out
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
	NoFreeze bool `json:"no_freeze,omitempty"`
	// Capabilities is set when tracecell had capabilities (ran as root,
	// say) and the tree was started without some of them.
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	Denials      []Event       `json:"denials"`
	// DenialsDropped counts denials past the report's cap (the counts stay exact).
	DenialsDropped int      `json:"denials_dropped,omitempty"`
	ScratchLeft    []string `json:"scratch_left"`
	Error          string   `json:"error,omitempty"`
	// TraceError: the --trace file could not be written in full (a full
	// disk): it stops there, while the counts and denials above are
	// complete. `tracecell report` then shows the denials the trace lacks
	// from this report.
	TraceError string `json:"trace_error,omitempty"`
	// UntracedDenials are the denials from the one the trace failed on to
	// the end of the run, listed whatever the cap of Denials (at most
	// 1000, UntracedDropped counting more): the run is stopped at that
	// failure, so every denial is in the trace, in Denials or here.
	UntracedDenials []Event `json:"untraced_denials,omitempty"`
	UntracedDropped int     `json:"untraced_dropped,omitempty"`
	// CommandBytes and ScratchLeftBytes repeat Command and ScratchLeft
	// byte for byte when one of their strings is not valid UTF-8 (set by
	// WriteTarget): a JSON string cannot hold such bytes.
	CommandBytes     [][]byte `json:"command_base64,omitempty"`
	ScratchLeftBytes [][]byte `json:"scratch_left_base64,omitempty"`
}

// RawStrings returns ss byte for byte when one of them is not valid
// UTF-8 (encoding/json would write U+FFFD for each bad byte, and two
// different lists could read alike), nil otherwise.
func RawStrings(ss []string) [][]byte {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			out := make([][]byte, len(ss))
			for i, x := range ss {
				out[i] = []byte(x)
			}
			return out
		}
	}
	return nil
}

// KeepBytes sets ExeBytes and ArgvBytes when Exe or Argv is not valid
// UTF-8.
func (e *Event) KeepBytes() {
	if !utf8.ValidString(e.Exe) {
		e.ExeBytes = []byte(e.Exe)
	}
	e.ArgvBytes = RawStrings(e.Argv)
}

// Capabilities are the Linux capabilities the tree kept of tracecell's
// own and those it was started without (names as "net_admin").
type Capabilities struct {
	Kept    []string `json:"kept"`
	Dropped []string `json:"dropped"`
}

// Target is where a report goes: the report file's directory, opened once,
// and the file's name in it. Open it with OpenTarget before the traced
// program starts: the report is then written into that directory at exit
// even if the program, which may write where the report lives, has renamed
// the directory away and put a symlink to a host directory in its place.
// Its fd is close-on-exec. A Target is not safe for concurrent use.
type Target struct {
	path string // as given, for messages
	base string // the file's name in dir
	dir  int    // O_PATH fd of the directory; -1 once closed
}

// OpenTarget opens path's directory and checks, as a program writing the
// report there would, that path can be created (an empty file is left
// there until the report replaces it). The directory must exist.
func OpenTarget(path string) (*Target, error) {
	base := filepath.Base(path)
	if path == "" || strings.HasSuffix(path, "/") || base == "." || base == ".." || base == "/" {
		return nil, fmt.Errorf("report %q: not a file name (give a FILE, e.g. out/report.json)", path)
	}
	dir := filepath.Dir(path)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("report %s: open directory %s: %w (it must exist)", path, dir, err)
	}
	// O_NOFOLLOW: a symlink left at path (by a traced program of an
	// earlier run, say) must not make tracecell create its target; the
	// final rename would replace the link, but the target would be made
	// by then. O_NONBLOCK: a FIFO there must not block the probe.
	f, err := unix.Openat(fd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EACCES) && replaceable(fd, base) {
		// The report replaces the file by a rename, which needs only the
		// directory: a file there that this user may not write (left by
		// a root run, say) does not stop it.
		return &Target{path: path, base: base, dir: fd}, nil
	}
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("report %s: is a symbolic link; tracecell never writes through a link (a traced program may have left it there): remove it or give another path", path)
		}
		return nil, fmt.Errorf("create report %s: %w", path, err)
	}
	unix.Close(f)
	return &Target{path: path, base: base, dir: fd}, nil
}

// replaceable reports whether WriteTarget's rename can replace base, a
// file in dir this process may not open for writing: base is a regular
// file, a file can be created (and is removed again) in dir, and dir is
// not sticky, or this user owns base or dir (a sticky directory lets only
// them replace an entry; rename(2) fails with EPERM otherwise).
func replaceable(dir int, base string) bool {
	var st, dst unix.Stat_t
	if unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	if unix.Fstat(dir, &dst) != nil {
		return false
	}
	if euid := uint32(unix.Geteuid()); dst.Mode&unix.S_ISVTX != 0 && st.Uid != euid && dst.Uid != euid {
		return false
	}
	for try := 0; try < 100; try++ {
		tmp := ".tracecell-report-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return false
		}
		unix.Close(f)
		unix.Unlinkat(dir, tmp, 0)
		return true
	}
	return false
}

// Path is the report's path as given to OpenTarget.
func (t *Target) Path() string { return t.path }

// Close closes the directory; t cannot be written to afterwards.
func (t *Target) Close() error {
	if t.dir < 0 {
		return nil
	}
	err := unix.Close(t.dir)
	t.dir = -1
	return err
}

// WriteFile writes the report to path atomically (see WriteTarget). It
// resolves path now: use OpenTarget and WriteTarget when a program that
// may write near path runs in between.
func (r *Report) WriteFile(path string) error {
	t, err := OpenTarget(path)
	if err != nil {
		return err
	}
	defer t.Close()
	return r.WriteTarget(t)
}

// WriteTarget writes the report atomically (temp file + rename, both in t's
// directory, never following a symlink) so a reader never sees half a
// report, even when tracecell is stopped by a signal.
func (r *Report) WriteTarget(t *Target) error {
	if r.Denials == nil {
		r.Denials = []Event{}
	}
	if r.ScratchLeft == nil {
		r.ScratchLeft = []string{}
	}
	r.CommandBytes, r.ScratchLeftBytes = RawStrings(r.Command), RawStrings(r.ScratchLeft)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	b = append(b, '\n')
	if t.dir < 0 {
		return fmt.Errorf("write report %s: %w", t.path, os.ErrClosed)
	}
	var fd int
	var tmp string
	for try := 0; ; try++ {
		tmp = ".tracecell-report-" + strconv.FormatUint(rand.Uint64(), 36)
		fd, err = unix.Openat(t.dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if !errors.Is(err, unix.EEXIST) || try == 100 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write report %s: create temporary file: %w", t.path, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(t.path), tmp))
	if _, err := f.Write(b); err != nil {
		f.Close()
		unix.Unlinkat(t.dir, tmp, 0)
		return fmt.Errorf("write report %s: %w", t.path, err)
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(t.dir, tmp, 0)
		return fmt.Errorf("write report %s: %w", t.path, err)
	}
	if err := unix.Renameat(t.dir, tmp, t.dir, t.base); err != nil {
		unix.Unlinkat(t.dir, tmp, 0)
		return fmt.Errorf("write report %s: %w", t.path, err)
	}
	return nil
}

// Warm builds, for this process, the JSON encoders of a Report and of the
// types in it. encoding/json builds a type's encoder by reflection at the
// type's first use and keeps it: a run's first report took 0.21–0.23 ms to
// encode and a second one 23–28 µs (bench VM). The CLI calls Warm while the
// command loads (tracer.Config.OnRunning), when the tracer has nothing to
// answer, rather than after the command exits, when the caller waits.
// The encoders' memory is then part of the tracer's peak RSS as the report
// gives it (tracer_peak_rss_kb, read before the report is encoded): about
// 0.3 MB more than a build that encoded only after that reading.
func Warm() {
	json.MarshalIndent(&Report{Denials: []Event{{}}, Capabilities: &Capabilities{}}, "", "  ")
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
