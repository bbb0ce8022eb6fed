package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

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

// Budgets of the paths shown (elide). A path as given, and any other path
// shown, keeps pathBudget bytes; the path a denied operation resolved to —
// the host file it reached, which a tree may pad a given path to hide — is
// shown whole up to resolvedBudget.
const (
	pathBudget     = 160
	resolvedBudget = 1024
)

// elide shortens s, a path, to about max bytes by cutting its middle: its
// head and its tail stay (a path's last components say what it names, and
// a tree can pad the rest to push them out), the cut says how many bytes it
// took ("…(N bytes)…"). It cuts on rune boundaries and makes nothing
// visible (the caller does: report.Visible, strconv.Quote). max <= 0 keeps
// s whole.
func elide(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	head, tail := max/3, len(s)-(max-max/3)
	for i := 0; i < utf8.UTFMax-1 && head > 0 && !utf8.RuneStart(s[head]); i++ {
		head--
	}
	for i := 0; i < utf8.UTFMax-1 && tail < len(s) && !utf8.RuneStart(s[tail]); i++ {
		tail++
	}
	return s[:head] + "…(" + strconv.Itoa(tail-head) + " bytes)…" + s[tail:]
}

// elided is elide made visible (report.Visible): a path the traced program
// chose, as text.
func elided(s string, max int) string {
	return report.Visible(elide(s, max))
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

// opName is a denied operation's kind and call, or the call alone when they
// are the same word (connect, bind).
func opName(d *Denial) string {
	if d.Kind == d.Syscall || d.Kind == "" {
		return d.Syscall
	}
	return d.Kind + " " + d.Syscall
}

// denialObject is what a denied operation was aimed at, paths as given and
// (when different) as resolved. Each path is elided on its own, the end of
// neither lost: a long given path cannot push the resolved one, the host
// file the operation reached, out of the text. What it returns is not all
// made visible (an abstract socket's name): the caller does that.
func denialObject(d *Denial) string {
	var parts []string
	for _, p := range d.Paths {
		s := strconv.Quote(elide(p.Given, pathBudget))
		if p.Null {
			s = "NULL"
		}
		if p.Special != "" {
			s += " (" + p.Special + ")"
		} else if p.Resolved != "" && p.Resolved != p.Given {
			s += " → " + elided(p.Resolved, resolvedBudget)
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

// netObject is what a network operation was aimed at. An abstract unix
// socket's name (the tree chose it) is in Address, "@" first; like the
// other text, the caller makes it visible.
func netObject(n *NetOp) string {
	switch {
	case n.Abstract:
		name := n.Address
		if name == "" {
			name = n.Path
		}
		if !strings.HasPrefix(name, "@") {
			name = "@" + name
		}
		return "unix " + elide(name, pathBudget)
	case n.Path != "":
		return "unix " + elide(n.Path, pathBudget)
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

// fileObject is the paths of an allowed change (two for a rename), each
// elided to max bytes on its own (elide; 0: whole) and made visible.
func fileObject(f *FileOp, max int) string {
	var l []string
	for _, p := range f.Paths {
		l = append(l, elided(p, max))
	}
	return strings.Join(l, " → ")
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
