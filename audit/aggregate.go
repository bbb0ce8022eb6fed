package audit

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// Aggregator folds events into a Summary in bounded memory. Add the
// sources' events in order with Event; call Summary once at the end. It is
// not safe for concurrent use.
type Aggregator struct {
	s Summary

	cur *Source // the source being read

	procs     map[int]*Process
	procOrder []*Process // stored processes, in order of appearance
	dropped   []uint64   // bitset of the pids past MaxProcesses
	denials   map[string]*Denial
	rules     map[policy.Rule]*RuleGroup
	files     map[string]*FileOp
	net       map[string]*NetOp
	procOps   map[string]*ProcOp
	reads     map[string]int64
	readsMore int64 // opens of paths past MaxReadKeys

	// Timeline: buckets of width w from t0; w doubles when a bucket past
	// MaxBuckets is needed, so memory is fixed whatever the duration.
	t0, tEnd time.Time
	w        time.Duration
	buckets  []Bucket
	marks    []Mark
	markT    []time.Time // the marks' times
	hasTrace bool
	// skipDenials: a report read alongside a trace gives only its
	// metadata (the trace holds every denial already).
	skipDenials bool
	// held: the reports read alongside a trace, whose denials wait until
	// every input is read (ReadFiles, showMissing): a trace cut short (a
	// full disk, tracecell killed) lacks some, and those are then shown
	// from the report. traceDenials holds the keys (heldKey) of the
	// denials read from traces meanwhile; inTrace: a trace is being read.
	held         []heldReport
	traceDenials map[string]struct{}
	traceDenialN int
	inTrace      bool
}

// reportDenials are the denials rep lists: Denials, then those of
// UntracedDenials (a failed trace's) that Denials does not hold already.
func reportDenials(rep *report.Report) []*report.Event {
	out := make([]*report.Event, 0, len(rep.Denials)+len(rep.UntracedDenials))
	listed := map[string]bool{}
	for i := range rep.Denials {
		out = append(out, &rep.Denials[i])
		if len(rep.UntracedDenials) > 0 {
			listed[heldKey(&rep.Denials[i])] = true
		}
	}
	for i := range rep.UntracedDenials {
		if !listed[heldKey(&rep.UntracedDenials[i])] {
			out = append(out, &rep.UntracedDenials[i])
		}
	}
	return out
}

// maxHeldKeys bounds the trace denials remembered for showMissing.
const maxHeldKeys = 100_000

// heldReport is a report read alongside a trace, and the index of its
// source in Summary.Sources (a pointer would go stale as the slice grows).
type heldReport struct {
	rep *report.Report
	src int
}

// heldKey identifies one denial event in a trace and in a report.
func heldKey(ev *report.Event) string {
	var k strings.Builder
	k.WriteString(strconv.FormatInt(ev.Time.UnixNano(), 10))
	for _, s := range []string{strconv.Itoa(ev.Pid), strconv.Itoa(ev.Tid), ev.Syscall, ev.Decision} {
		k.WriteByte(0)
		k.WriteString(s)
	}
	for _, p := range ev.Paths {
		k.WriteByte(1)
		k.WriteString(p.Given)
	}
	return k.String()
}

// showMissing adds the denials of the held reports that the traces read
// with them lack, when they lack any (the traces hold fewer denials than
// the reports count, or a report says its trace failed), and says so on
// the report's source.
func (a *Aggregator) showMissing() {
	want, failed := 0, false
	for _, h := range a.held {
		want += h.rep.Counts.Denied + h.rep.Counts.Audited
		failed = failed || h.rep.TraceError != ""
	}
	held := a.held
	a.held, a.skipDenials, a.inTrace = nil, false, false
	if !failed && a.traceDenialN >= want {
		return
	}
	for _, h := range held {
		a.cur = &a.s.Sources[h.src] // the report's denials are its source's
		shown := 0
		for _, ev := range reportDenials(h.rep) {
			if _, ok := a.traceDenials[heldKey(ev)]; !ok {
				a.Event(ev)
				shown++
			}
		}
		note := fmt.Sprintf("the trace read with this report holds %d of the %d denials it counts; the %d it lacks are shown from the report", a.traceDenialN, want, shown)
		if h.rep.TraceError != "" {
			note += " (" + h.rep.TraceError + ")"
		}
		if e := a.cur.Error; e != "" {
			note = e + "; " + note
		}
		a.cur.Error = note
	}
}

// NewAggregator returns an empty aggregator.
func NewAggregator() *Aggregator {
	return &Aggregator{
		s:       Summary{Version: 1, Totals: Totals{ByKind: map[string]int64{}}},
		procs:   map[int]*Process{},
		denials: map[string]*Denial{},
		rules:   map[policy.Rule]*RuleGroup{},
		files:   map[string]*FileOp{},
		net:     map[string]*NetOp{},
		procOps: map[string]*ProcOp{},
		reads:   map[string]int64{},
		w:       time.Millisecond,
	}
}

// begin starts a new source; later events belong to it.
func (a *Aggregator) begin(src Source) *Source {
	if len(a.procs) > 0 {
		// Pids are per run: the next input's pid 42 is another process.
		a.procs = map[int]*Process{}
	}
	a.s.Sources = append(a.s.Sources, src)
	a.cur = &a.s.Sources[len(a.s.Sources)-1]
	if src.Kind == "trace" {
		a.hasTrace = true
	}
	return a.cur
}

// Event folds one event of the current source.
func (a *Aggregator) Event(ev *report.Event) {
	if a.cur == nil {
		a.begin(Source{Name: "-", Kind: "trace"})
	}
	a.cur.Events++
	if a.cur.Started == nil || ev.Time.Before(*a.cur.Started) {
		t := ev.Time
		a.cur.Started = &t
	}
	if a.cur.Ended == nil || ev.Time.After(*a.cur.Ended) {
		t := ev.Time
		a.cur.Ended = &t
	}
	t := &a.s.Totals
	t.Events++
	kind := ev.Kind.String()
	lifecycle := ev.Rule == report.RuleLifecycle
	if lifecycle {
		kind = ev.Syscall
	}
	t.ByKind[kind]++
	switch ev.Decision {
	case report.Deny:
		t.Denied++
	case report.Audit:
		t.Audited++
	default:
		t.Allowed++
	}

	p := a.proc(ev.Pid, ev.Time)
	p.Events++
	if ev.Program != "" && ev.Program != "?" {
		p.Program = ev.Program
		if ev.Exe != "" {
			p.Exe = ev.Exe
		}
		if len(ev.Argv) > 0 && !sameArgv(p.Argv, ev.Argv) {
			p.Argv = capArgv(ev.Argv)
		}
	}
	if lifecycle {
		a.lifecycle(p, ev)
		return
	}
	denied := ev.Decision == report.Deny || ev.Decision == report.Audit
	if denied {
		p.Denied++
		a.denial(ev)
	}
	cat := -1
	switch ev.Kind {
	case syscalls.KindRead:
		cat = 0
		if !denied {
			a.read(ev)
		}
	case syscalls.KindWrite, syscalls.KindCreate, syscalls.KindDelete, syscalls.KindRename,
		syscalls.KindLink, syscalls.KindChmod, syscalls.KindChown, syscalls.KindXattr:
		cat = 1
		if !denied {
			a.file(ev)
		}
	case syscalls.KindExec:
		cat = 2
		a.exec(p, ev)
	case syscalls.KindConnect, syscalls.KindBind:
		cat = 3
		a.network(ev)
	case syscalls.KindSignal, syscalls.KindProcess:
		cat = 4
		a.procOp(ev)
	case syscalls.KindForbidden:
		cat = 4
	}
	if denied {
		cat = 5
		a.mark(ev, ev.Decision, ev.Kind.String()+" "+opLabel(ev))
	} else if ev.Kind == syscalls.KindExec {
		a.mark(ev, "exec", "exec "+firstResolved(ev))
	}
	if cat >= 0 {
		a.count(ev.Time, cat)
	}
}

func (a *Aggregator) proc(pid int, at time.Time) *Process {
	p := a.procs[pid]
	if p == nil {
		p = &Process{Pid: pid, First: at, Last: at, src: a.cur.Name}
		if len(a.procOrder) < MaxProcesses {
			a.procs[pid] = p
			a.procOrder = append(a.procOrder, p)
		} else if a.markDropped(pid) {
			a.s.ProcessesDropped++
		}
	}
	if at.Before(p.First) {
		p.First = at
	}
	if at.After(p.Last) {
		p.Last = at
	}
	return p
}

func (a *Aggregator) lifecycle(p *Process, ev *report.Event) {
	switch {
	case ev.ChildPid != 0:
		c := a.proc(ev.ChildPid, ev.Time)
		if c.parent == nil && c != p && a.procs[p.Pid] == p && a.procs[c.Pid] == c {
			c.Parent, c.parent = p.Pid, p
			p.kids = append(p.kids, c)
			p.Children = append(p.Children, c.Pid)
			if len(c.Argv) == 0 { // a fork runs its parent's program until it execs
				c.Program, c.Exe, c.Argv = p.Program, p.Exe, p.Argv
			}
		}
		a.count(ev.Time, 4)
		a.mark(ev, "fork", ev.Syscall+" → "+strconv.Itoa(ev.ChildPid))
	case ev.Syscall == "exit":
		p.Exit = &ProcExit{Code: ev.ExitCode, Signal: ev.Signal}
		a.count(ev.Time, 4)
		a.mark(ev, "exit", "exit "+exitText(p.Exit))
	}
}

func exitText(e *ProcExit) string {
	if e == nil {
		return "?"
	}
	if e.Signal != "" {
		return e.Signal
	}
	if e.Code != nil {
		return strconv.Itoa(*e.Code)
	}
	return "?"
}

func (a *Aggregator) exec(p *Process, ev *report.Event) {
	if len(ev.Paths) == 0 {
		return
	}
	if len(p.Execs) >= MaxExecsPerProc {
		p.ExecsDropped++
		return
	}
	p.Execs = append(p.Execs, Exec{Time: ev.Time, Given: ev.Paths[0].Given, Program: ev.Paths[0].Resolved, Decision: ev.Decision, Rule: ev.Rule})
}

func (a *Aggregator) denial(ev *report.Event) {
	if a.inTrace && a.traceDenials != nil {
		// The report lists the run's first denials (report.MaxDenials):
		// the keys of the trace's first ones are all a match needs.
		if len(a.traceDenials) < maxHeldKeys {
			a.traceDenials[heldKey(ev)] = struct{}{}
		}
		a.traceDenialN++
	}
	if a.skipDenials {
		return
	}
	rule := ev.Rule
	if rule == "" {
		rule = "(no rule)"
	}
	g := a.rules[rule]
	if g == nil {
		g = &RuleGroup{Rule: rule}
		a.rules[rule] = g
	}
	g.Count++
	if ev.Decision == report.Audit {
		g.Audited++
	} else {
		g.Denied++
	}
	var k strings.Builder
	for _, s := range []string{string(rule), ev.Decision, ev.Syscall, ev.Kind.String(), ev.Program, ev.Family, ev.Address, strconv.Itoa(ev.Port), ev.Signal, ev.Flags} {
		k.WriteString(s)
		k.WriteByte(0)
	}
	for _, p := range ev.Paths {
		k.WriteString(p.Given)
		k.WriteByte(1)
		k.WriteString(p.Resolved)
		k.WriteByte(0)
	}
	if ev.TargetPid != nil {
		k.WriteString(strconv.Itoa(*ev.TargetPid))
	}
	key := k.String()
	d := a.denials[key]
	if d == nil {
		if len(a.denials) >= MaxDenialKeys {
			g.OpsDropped++
			a.s.DenialKeysDropped++
			return
		}
		d = &Denial{
			Decision: ev.Decision, Kind: ev.Kind.String(), Syscall: ev.Syscall, Paths: ev.Paths,
			Family: ev.Family, Address: ev.Address, Port: ev.Port, Signal: ev.Signal, TargetPid: ev.TargetPid,
			Flags: ev.Flags, Program: ev.Program, Exe: ev.Exe, Reason: ev.Reason, Errno: ev.Errno, First: ev.Time,
		}
		if len(a.s.Sources) > 1 {
			d.SourceName = a.cur.Name
		}
		a.denials[key] = d
		g.Ops = append(g.Ops, d)
	}
	d.Count++
	if len(d.Pids) < MaxPidsPerKey && !containsInt(d.Pids, ev.Pid) {
		d.Pids = append(d.Pids, ev.Pid)
	}
}

func containsInt(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func (a *Aggregator) file(ev *report.Event) {
	var k strings.Builder
	k.WriteString(ev.Kind.String())
	k.WriteByte(0)
	k.WriteString(string(ev.Rule))
	var paths, given []string
	for _, p := range ev.Paths {
		k.WriteByte(0)
		k.WriteString(p.Resolved)
		paths = append(paths, p.Resolved)
		given = append(given, p.Given)
	}
	key := k.String()
	f := a.files[key]
	if f == nil {
		if len(a.files) >= MaxFileKeys {
			a.s.FilesDropped++
			return
		}
		f = &FileOp{Kind: ev.Kind.String(), Rule: ev.Rule, Paths: paths, Given: given, First: ev.Time}
		a.files[key] = f
	}
	f.Count++
	if len(f.Programs) < MaxPidsPerKey {
		pp := ev.Program + "[" + strconv.Itoa(ev.Pid) + "]"
		if !containsStr(f.Programs, pp) {
			f.Programs = append(f.Programs, pp)
		}
	}
}

func containsStr(l []string, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func (a *Aggregator) network(ev *report.Event) {
	n := NetOp{Syscall: ev.Syscall, Kind: ev.Kind.String(), Family: ev.Family, Address: ev.Address, Port: ev.Port,
		Abstract: ev.Abstract, Decision: ev.Decision, Rule: ev.Rule, Program: ev.Program}
	if len(ev.Paths) > 0 {
		n.Path = ev.Paths[0].Resolved
		if n.Path == "" {
			n.Path = ev.Paths[0].Given
		}
	}
	key := strings.Join([]string{n.Syscall, n.Kind, n.Family, n.Address, strconv.Itoa(n.Port), n.Path, strconv.FormatBool(n.Abstract), n.Decision, string(n.Rule), n.Program}, "\x00")
	o := a.net[key]
	if o == nil {
		if len(a.net) >= MaxNetKeys {
			a.s.NetworkDropped++
			return
		}
		o = &n
		a.net[key] = o
	}
	o.Count++
}

func (a *Aggregator) procOp(ev *report.Event) {
	o := ProcOp{Syscall: ev.Syscall, Kind: ev.Kind.String(), Signal: ev.Signal, InTree: ev.TargetInTree,
		Decision: ev.Decision, Program: ev.Program}
	if ev.TargetPid != nil {
		o.TargetPid = *ev.TargetPid
	}
	key := strings.Join([]string{o.Syscall, o.Kind, o.Signal, strconv.Itoa(o.TargetPid), strconv.FormatBool(o.InTree), o.Decision, o.Program}, "\x00")
	x := a.procOps[key]
	if x == nil {
		if len(a.procOps) >= MaxProcOpKeys {
			a.s.ProcOpsDropped++
			return
		}
		x = &o
		a.procOps[key] = x
	}
	x.Count++
}

func (a *Aggregator) read(ev *report.Event) {
	if len(ev.Paths) == 0 {
		return
	}
	p := ev.Paths[0].Resolved
	if ev.Paths[0].Special != "" {
		p = ev.Paths[0].Special
	}
	if _, ok := a.reads[p]; ok || len(a.reads) < MaxReadKeys {
		a.reads[p]++
	} else {
		a.readsMore++
	}
}

// An argv is kept cut (a program may pass megabytes of arguments, and
// 2000 processes are kept): at most maxArgs arguments of maxArgLen bytes.
const (
	maxArgs   = 64
	maxArgLen = 512
)

// sameArgv: kept (capped) is what capArgv made of argv. Most events repeat
// their process's argv; this spares a copy per event.
func sameArgv(kept, argv []string) bool {
	if len(kept) != min(len(argv), maxArgs) {
		return false
	}
	for i, a := range kept {
		if i == maxArgs-1 && len(argv) > maxArgs {
			return true
		}
		if len(argv[i]) > maxArgLen {
			if !strings.HasPrefix(argv[i], strings.TrimSuffix(a, "…")) {
				return false
			}
		} else if a != argv[i] {
			return false
		}
	}
	return true
}

func capArgv(argv []string) []string {
	out := make([]string, 0, min(len(argv), maxArgs))
	for i, a := range argv {
		if i == maxArgs {
			out[maxArgs-1] = fmt.Sprintf("… (%d more arguments)", len(argv)-maxArgs+1)
			break
		}
		if len(a) > maxArgLen {
			i := maxArgLen
			for i > 0 && (a[i]&0xc0) == 0x80 {
				i--
			}
			a = a[:i] + "…"
		}
		out = append(out, strings.Clone(a))
	}
	return out
}

// count adds an event at time at to category cat of the timeline.
func (a *Aggregator) count(at time.Time, cat int) {
	if at.IsZero() {
		return
	}
	if a.t0.IsZero() {
		a.t0 = at
	}
	if at.After(a.tEnd) {
		a.tEnd = at
	}
	i := 0
	if at.After(a.t0) {
		i = int(at.Sub(a.t0) / a.w)
	}
	for i >= MaxBuckets {
		// Double the width: merge bucket pairs.
		n := make([]Bucket, (len(a.buckets)+1)/2, MaxBuckets)
		for j, b := range a.buckets {
			for c := range b.Counts {
				n[j/2].Counts[c] += b.Counts[c]
			}
		}
		a.buckets = n
		a.w *= 2
		i = int(at.Sub(a.t0) / a.w)
	}
	for len(a.buckets) <= i {
		a.buckets = append(a.buckets, Bucket{})
	}
	a.buckets[i].Counts[cat]++
}

func (a *Aggregator) mark(ev *report.Event, what, label string) {
	if len(a.marks) >= MaxMarks {
		if a.s.Timeline == nil {
			a.s.Timeline = &Timeline{}
		}
		a.s.Timeline.MarksDropped++
		return
	}
	a.marks = append(a.marks, Mark{Pid: ev.Pid, What: what, Label: label, proc: a.procs[ev.Pid]})
	a.markT = append(a.markT, ev.Time)
}

// pidLimit is PID_MAX_LIMIT on 64-bit Linux (include/linux/threads.h):
// no pid is larger, so a bitset of dropped pids has a fixed bound (512 KiB).
const pidLimit = 4 << 20

// markDropped records pid as a process past MaxProcesses; it reports
// whether pid is new there.
func (a *Aggregator) markDropped(pid int) bool {
	if pid < 0 || pid >= pidLimit {
		return true
	}
	if a.dropped == nil {
		a.dropped = make([]uint64, pidLimit/64)
	}
	w, bit := pid/64, uint64(1)<<(pid%64)
	if a.dropped[w]&bit != 0 {
		return false
	}
	a.dropped[w] |= bit
	return true
}

// Summary finishes the aggregation. The Aggregator must not be used after.
func (a *Aggregator) Summary() *Summary {
	s := &a.s
	// Processes by first appearance; children by pid.
	s.Processes = append(s.Processes, a.procOrder...)
	sort.SliceStable(s.Processes, func(i, j int) bool { return s.Processes[i].First.Before(s.Processes[j].First) })
	for _, p := range s.Processes {
		sort.Ints(p.Children)
		sort.SliceStable(p.kids, func(i, j int) bool { return p.kids[i].Pid < p.kids[j].Pid })
		if len(s.Sources) > 1 {
			p.Source = p.src
		}
	}

	for _, g := range a.rules {
		sort.SliceStable(g.Ops, func(i, j int) bool {
			if g.Ops[i].Count != g.Ops[j].Count {
				return g.Ops[i].Count > g.Ops[j].Count
			}
			return g.Ops[i].First.Before(g.Ops[j].First)
		})
		s.Denials = append(s.Denials, g)
	}
	sort.Slice(s.Denials, func(i, j int) bool {
		if s.Denials[i].Count != s.Denials[j].Count {
			return s.Denials[i].Count > s.Denials[j].Count
		}
		return s.Denials[i].Rule < s.Denials[j].Rule
	})

	for _, f := range a.files {
		s.Files = append(s.Files, f)
	}
	sort.Slice(s.Files, func(i, j int) bool {
		if !s.Files[i].First.Equal(s.Files[j].First) {
			return s.Files[i].First.Before(s.Files[j].First)
		}
		return strings.Join(s.Files[i].Paths, "\x00")+s.Files[i].Kind < strings.Join(s.Files[j].Paths, "\x00")+s.Files[j].Kind
	})
	for _, n := range a.net {
		s.Network = append(s.Network, n)
	}
	sort.Slice(s.Network, func(i, j int) bool {
		x, y := s.Network[i], s.Network[j]
		if x.Count != y.Count {
			return x.Count > y.Count
		}
		return strings.Join([]string{x.Address, x.Path, strconv.Itoa(x.Port), x.Decision, x.Syscall, x.Family, x.Program, string(x.Rule)}, "\x00") <
			strings.Join([]string{y.Address, y.Path, strconv.Itoa(y.Port), y.Decision, y.Syscall, y.Family, y.Program, string(y.Rule)}, "\x00")
	})
	for _, o := range a.procOps {
		s.ProcOps = append(s.ProcOps, o)
	}
	sort.Slice(s.ProcOps, func(i, j int) bool {
		x, y := s.ProcOps[i], s.ProcOps[j]
		if x.Count != y.Count {
			return x.Count > y.Count
		}
		return strings.Join([]string{x.Syscall, x.Signal, strconv.Itoa(x.TargetPid), x.Decision, x.Program, strconv.FormatBool(x.InTree)}, "\x00") <
			strings.Join([]string{y.Syscall, y.Signal, strconv.Itoa(y.TargetPid), y.Decision, y.Program, strconv.FormatBool(y.InTree)}, "\x00")
	})

	if a.hasTrace {
		r := &Reads{Distinct: int64(len(a.reads)), Capped: a.readsMore > 0}
		for p, n := range a.reads {
			r.Opens += n
			r.Top = append(r.Top, ReadCount{p, n})
		}
		r.Opens += a.readsMore
		sort.Slice(r.Top, func(i, j int) bool {
			if r.Top[i].Count != r.Top[j].Count {
				return r.Top[i].Count > r.Top[j].Count
			}
			return r.Top[i].Path < r.Top[j].Path
		})
		if len(r.Top) > TopReads {
			r.Top = r.Top[:TopReads]
		}
		if r.Top == nil {
			r.Top = []ReadCount{}
		}
		s.Reads = r
	}

	if !a.t0.IsZero() {
		tl := s.Timeline
		if tl == nil {
			tl = &Timeline{}
		}
		tl.Start, tl.End, tl.Width, tl.Buckets = a.t0, a.tEnd, a.w.Seconds(), a.buckets
		for i, m := range a.marks {
			m.At = a.markT[i].Sub(a.t0).Seconds()
			if m.At < 0 {
				m.At = 0
			}
			tl.Marks = append(tl.Marks, m)
		}
		s.Timeline = tl
	} else {
		s.Timeline = nil
	}

	// A trace names no command: the root process's, after its exec.
	for i := range s.Sources {
		src := &s.Sources[i]
		if src.Kind == "trace" && src.Started != nil && src.Ended != nil {
			src.Wall = src.Ended.Sub(*src.Started).Seconds()
		}
	}
	if len(s.Sources) == 1 && s.Sources[0].Kind == "trace" {
		for _, p := range s.Processes {
			if p.parent == nil {
				s.Sources[0].Command = p.Argv
				if p.Exit != nil && s.Sources[0].Exit == nil {
					e := &report.Exit{Code: -1, Signal: p.Exit.Signal}
					if p.Exit.Code != nil {
						e.Code = *p.Exit.Code
					}
					s.Sources[0].Exit = e
				}
				break
			}
		}
	}
	if s.Processes == nil {
		s.Processes = []*Process{}
	}
	if s.Denials == nil {
		s.Denials = []*RuleGroup{}
	}
	if s.Files == nil {
		s.Files = []*FileOp{}
	}
	if s.Network == nil {
		s.Network = []*NetOp{}
	}
	if s.ProcOps == nil {
		s.ProcOps = []*ProcOp{}
	}
	return s
}

func firstResolved(ev *report.Event) string {
	if len(ev.Paths) == 0 {
		return ""
	}
	if ev.Paths[0].Resolved != "" {
		return ev.Paths[0].Resolved
	}
	return ev.Paths[0].Given
}

// opLabel is the object of an operation in a few words.
func opLabel(ev *report.Event) string {
	switch {
	case len(ev.Paths) > 0:
		var l []string
		for _, p := range ev.Paths {
			l = append(l, p.Given)
		}
		return strings.Join(l, " → ")
	case ev.Address != "":
		return netAddr(ev.Family, ev.Address, ev.Port)
	case ev.TargetPid != nil:
		s := "pid " + strconv.Itoa(*ev.TargetPid)
		if ev.Signal != "" {
			s = ev.Signal + " " + s
		}
		return s
	}
	return ev.Syscall
}

func netAddr(family, addr string, port int) string {
	if family == "inet6" {
		return "[" + addr + "]:" + strconv.Itoa(port)
	}
	if family == "inet" {
		return addr + ":" + strconv.Itoa(port)
	}
	if addr != "" {
		return family + " " + addr
	}
	return family
}
