package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
)

// Formats are the names Render accepts.
var Formats = []string{"text", "markdown", "html", "json"}

// Options change how a summary is drawn.
type Options struct {
	// Color: ANSI colours in the text format (the caller decides: a
	// terminal, and NO_COLOR unset).
	Color bool
}

// Render writes s in format (one of Formats).
func Render(w io.Writer, s *Summary, format string, o Options) error {
	switch format {
	case "text", "":
		return renderText(w, s, o)
	case "markdown", "md":
		return renderMarkdown(w, s)
	case "html":
		return renderHTML(w, s)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return fmt.Errorf("format %q: want text, markdown, html or json", format)
}

// shellQuote writes argv as a shell would read it back, cut to max bytes.
func shellQuote(argv []string, max int) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			b.WriteString(a)
		} else {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		}
	}
	return cut(b.String(), max)
}

// backslashed puts a backslash before each character of s that is in
// special (markdown's markup characters, path.Match's metacharacters).
func backslashed(s, special string) string {
	if !strings.ContainsAny(s, special) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(special, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cut shortens s to max bytes (on a rune boundary) with an ellipsis, and
// makes control characters visible (report.Visible): the text comes from the
// traced program.
func cut(s string, max int) string {
	s = report.Visible(s)
	if max > 0 && len(s) > max {
		i := max
		for i > 0 && (s[i]&0xc0) == 0x80 {
			i--
		}
		return s[:i] + "…"
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

func seconds(f float64) string {
	switch {
	case f >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64) + "s"
	case f >= 1:
		return strconv.FormatFloat(f, 'f', 2, 64) + "s"
	default:
		return strconv.FormatFloat(f*1000, 'f', 1, 64) + "ms"
	}
}

func exitLine(src *Source) string {
	var parts []string
	if src.Exit != nil {
		e := src.Exit
		switch {
		case e.Signal != "":
			parts = append(parts, "killed by "+e.Signal)
		case e.TimedOut:
			parts = append(parts, "timed out")
		default:
			parts = append(parts, "exit "+strconv.Itoa(e.Code))
		}
		if e.Status != 0 && e.Status != e.Code {
			parts = append(parts, "tracecell status "+strconv.Itoa(e.Status))
		}
	}
	if src.Outcome != "" {
		parts = append(parts, src.Outcome)
	}
	return strings.Join(parts, ", ")
}

func policyLine(p *policy.Config) string {
	if p == nil {
		return ""
	}
	parts := []string{p.Mode.String()}
	parts = append(parts, "write "+listOr(p.WriteRoots, "nowhere"))
	if p.ReadRoots != nil {
		parts = append(parts, "read "+listOr(p.ReadRoots, "only the runtime"))
	}
	if len(p.DenyRead) > 0 {
		parts = append(parts, "deny-read "+strings.Join(p.DenyRead, ", "))
	}
	parts = append(parts, "exec "+listOr(p.AllowExec, "none"))
	parts = append(parts, "net "+p.Net.String())
	return strings.Join(parts, "; ")
}

func listOr(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}

func countsLine(s *Summary, src *Source) string {
	if c := src.Counts; c != nil && src.Kind == "report" {
		return fmt.Sprintf("%s, %s; %d checked calls: %d allowed, %d denied, %d audited, %d failed",
			plural(int64(c.Processes), "process", "processes"), plural(int64(c.Execs), "exec", "execs"),
			c.Checked, c.Allowed, c.Denied, c.Audited, c.Failed)
	}
	return ""
}

func totalsLine(s *Summary) string {
	t := s.Totals
	return fmt.Sprintf("%s: %d allowed, %d denied, %d would be denied (audit); from %s",
		plural(t.Events, "event", "events"), t.Allowed, t.Denied, t.Audited, plural(int64(len(s.Processes)), "process", "processes"))
}

// treeOrder walks the process tree depth first: each process with its
// depth and whether it is its parent's last child.
type treeRow struct {
	p     *Process
	depth int
	// prefix is the text tree's indentation ("│  ", "   ") per level above.
	prefix string
	last   bool
}

// MaxTreeRows caps the processes drawn (the json format has every one kept).
const MaxTreeRows = 300

// treeRows is the tree's first MaxTreeRows rows and how many more there are.
func treeRows(s *Summary) ([]treeRow, int) {
	rows := allTreeRows(s)
	if len(rows) > MaxTreeRows {
		return rows[:MaxTreeRows], len(rows) - MaxTreeRows
	}
	return rows, 0
}

func allTreeRows(s *Summary) []treeRow {
	var rows []treeRow
	seen := map[*Process]bool{}
	var walk func(p *Process, depth int, prefix string, last bool)
	walk = func(p *Process, depth int, prefix string, last bool) {
		if seen[p] {
			return
		}
		seen[p] = true
		rows = append(rows, treeRow{p, depth, prefix, last})
		next := prefix
		if depth > 0 {
			if last {
				next += "   "
			} else {
				next += "│  "
			}
		}
		for i, c := range p.kids {
			walk(c, depth+1, next, i == len(p.kids)-1)
		}
	}
	for _, p := range s.Processes {
		if p.parent == nil {
			walk(p, 0, "", true)
		}
	}
	return rows
}

func procExit(p *Process) string {
	if p.Exit == nil {
		return ""
	}
	if p.Exit.Signal != "" {
		return "killed by " + p.Exit.Signal
	}
	return "exit " + exitText(p.Exit)
}

func pidsText(d *Denial) string {
	var l []string
	for _, p := range d.Pids {
		l = append(l, strconv.Itoa(p))
	}
	s := strings.Join(l, ",")
	if len(d.Pids) == MaxPidsPerKey {
		s += ",…"
	}
	return s
}

// denialObject is what a denied operation was aimed at, paths as given and
// (when different) as resolved.
func denialObject(d *Denial) string {
	var parts []string
	for _, p := range d.Paths {
		s := strconv.Quote(p.Given)
		if p.Special != "" {
			s += " (" + p.Special + ")"
		} else if p.Resolved != "" && p.Resolved != p.Given {
			s += " → " + report.Visible(p.Resolved)
		}
		parts = append(parts, s)
	}
	if d.Address != "" && len(d.Paths) == 0 {
		parts = append(parts, netAddr(d.Family, d.Address, d.Port))
	} else if d.Family != "" && len(d.Paths) == 0 {
		parts = append(parts, d.Family)
	}
	if d.TargetPid != nil {
		parts = append(parts, "pid "+strconv.Itoa(*d.TargetPid))
	}
	if d.Signal != "" {
		parts = append(parts, d.Signal)
	}
	if d.Flags != "" {
		parts = append(parts, d.Flags)
	}
	return strings.Join(parts, ", ")
}

func netObject(n *NetOp) string {
	switch {
	case n.Abstract:
		return "unix @" + n.Path
	case n.Path != "":
		return "unix " + n.Path
	case n.Address != "":
		return netAddr(n.Family, n.Address, n.Port)
	}
	return n.Family
}

func procOpObject(o *ProcOp) string {
	s := "pid " + strconv.Itoa(o.TargetPid)
	if o.InTree {
		s += " (in the tree)"
	} else {
		s += " (outside the tree)"
	}
	if o.Signal != "" {
		s = o.Signal + " to " + s
	} else if o.Kind == "signal" {
		s = "signal 0 (does it exist?) to " + s
	}
	return s
}

func fileObject(f *FileOp) string {
	return strings.Join(f.Paths, " → ")
}

// sparkline draws counts as block characters.
func sparkline(v []int64) string {
	const blocks = " ▁▂▃▄▅▆▇█"
	r := []rune(blocks)
	var max int64
	for _, x := range v {
		if x > max {
			max = x
		}
	}
	var b strings.Builder
	for _, x := range v {
		i := 0
		if max > 0 && x > 0 {
			i = 1 + int(x*int64(len(r)-2)/max)
		}
		b.WriteRune(r[i])
	}
	return b.String()
}

// series is one category's counts over the timeline's buckets.
func series(tl *Timeline, cat int) []int64 {
	out := make([]int64, len(tl.Buckets))
	for i, b := range tl.Buckets {
		out[i] = b.Counts[cat]
	}
	return out
}

// resample sums v into n slots (n >= 1).
func resample(v []int64, n int) []int64 {
	if len(v) <= n {
		return v
	}
	out := make([]int64, n)
	for i, x := range v {
		out[i*n/len(v)] += x
	}
	return out
}
