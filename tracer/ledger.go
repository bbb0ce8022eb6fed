package tracer

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tracecell/tracecell/report"
)

// ledger records the scratch entries the tree created: the resolved paths
// of entries a create in a scratch directory made (callDone), each with
// everything below it. An entry leaves it when the tree deletes or renames
// it away (scratchStarts, drop). It is the policy's view of ownership
// (policy.Ledger).
type ledger map[string]bool

// Owned reports whether p or a directory above it was created by the tree.
func (l ledger) Owned(p string) bool {
	for q := p; ; q = filepath.Dir(q) {
		if l[q] {
			return true
		}
		if q == "/" || q == "." {
			return false
		}
	}
}

// left lists the recorded entries that still exist, outermost first.
func (l ledger) left() []string {
	out := []string{}
	for p := range l {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	// Drop entries inside a directory that is listed already.
	var res []string
	for _, p := range out {
		if n := len(res); n > 0 && strings.HasPrefix(p, res[n-1]+"/") {
			continue
		}
		res = append(res, p)
	}
	if res == nil {
		res = []string{}
	}
	return res
}

// drop forgets p and everything recorded below it.
func (l ledger) drop(p string) {
	if p == "" {
		return
	}
	delete(l, p)
	for q := range l {
		if strings.HasPrefix(q, p+"/") {
			delete(l, q)
		}
	}
}

// boundSockets holds the inet sockets (by inode) that a bind of the
// tree's bound to an allowed address: listen may use them (listen.go). It
// holds at most maxBound.
type boundSockets map[uint64]bool

// add records socket ino, unless the set is full.
func (b boundSockets) add(ino uint64) {
	if len(b) < maxBound {
		b[ino] = true
	}
}

// has reports whether socket ino was bound by an allowed bind.
func (b boundSockets) has(ino uint64) bool { return b[ino] }

// full reports whether no more sockets are recorded.
func (b boundSockets) full() bool { return len(b) >= maxBound }

// recorder is the record side of the tracer: the counts of a run and the
// events kept for its Result.
//
// Invariants: len(denials) <= the cap (maxDenials, 0: 10000); every
// denial or audit past the cap is counted in dropped instead; counts are
// exact whatever the cap.
type recorder struct {
	counts  report.Counts
	denials []report.Event
	dropped int
	// maxDenials caps denials (Config.MaxDenials; 0: 10000).
	maxDenials int
	// onEvent is Config.OnEvent: called for every recorded event.
	onEvent func(*report.Event)
}

// add counts ev, keeps it if it is a denial or an audit and the cap
// allows, and hands it to onEvent.
func (r *recorder) add(ev *report.Event) {
	switch ev.Decision {
	case report.Deny:
		r.counts.Denied++
	case report.Audit:
		r.counts.Audited++
	}
	if ev.Decision != report.Allow {
		max := r.maxDenials
		if max == 0 {
			max = 10000
		}
		if len(r.denials) < max {
			r.denials = append(r.denials, *ev)
		} else {
			r.dropped++
		}
	}
	if r.onEvent != nil {
		r.onEvent(ev)
	}
}

// taskBorn counts a new task of the tree: a thread, and a process when it
// leads its group.
func (r *recorder) taskBorn(tk *task) {
	if tk.tid == tk.tgid {
		r.counts.Processes++
	}
	r.counts.Threads++
}
