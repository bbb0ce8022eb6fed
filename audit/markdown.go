package audit

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tracecell/tracecell/report"
)

// mdCell makes text a markdown table cell shows as it is: every character
// that is not printable made visible (report.Visible: no \n or \r ends the row,
// no control reaches the reader), and the characters markdown reads as
// markup backslash-escaped — '|' (a cell's end), '<' (raw HTML: "<!--"
// would hide the rest of the report), '&' (an entity could spell U+202E),
// '`', '*', '_', '~', '[' and ']' (code, emphasis, links) and '\\' itself —
// and GFM's extended autolinks broken (mdNoAutolink): no text the tree
// chose becomes a link where GitHub renders the report.
func mdCell(s string) string {
	s = report.Visible(s)
	if !strings.Contains(s, "@") {
		return mdNoAutolink(backslashed(s, mdSpecial))
	}
	// GFM links "local@domain.tld" (an email autolink, and the mailto:
	// and xmpp: ones) after it has joined the text of the escapes and
	// entities around it: no escape breaks one. A code span does (GFM
	// links nothing in it), with the same characters: each word (Visible
	// leaves no space but ' ') holding an '@' is one.
	words := strings.Split(s, " ")
	for i, w := range words {
		if strings.Contains(w, "@") {
			words[i] = mdCode(w)
		} else {
			words[i] = mdNoAutolink(backslashed(w, mdSpecial))
		}
	}
	return strings.Join(words, " ")
}

const mdSpecial = "\\|<>&`*_~[]"

// mdNoAutolink breaks GFM's www and url autolinks in s, text of mdCell
// (escaped already: no '.' or ':' of it follows a backslash): a backslash
// before the '.' of "www." (any case) and before the ':' of "://". GFM
// matches "www." and "scheme://" in the source, where an escaped character
// no longer is one; each renders as the character alone, and the cell
// reads the same.
func mdNoAutolink(s string) string {
	if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "www.") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "://") || s[i] == '.' && i >= 3 && strings.EqualFold(s[i-3:i], "www") {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mdCode puts s in an inline code span that no backtick in s can close,
// its non-printable characters made visible (report.Visible): nothing inside a
// code span is interpreted but '|', which a table cell needs escaped.
func mdCode(s string) string {
	s = report.Visible(s)
	if s == "" {
		return ""
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return strings.ReplaceAll(fence+pad+s+pad+fence, "|", `\|`)
}

func renderMarkdown(w io.Writer, s *Summary) error {
	out := bufio.NewWriter(w)
	fmt.Fprintln(out, "## tracecell report")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| | |")
	fmt.Fprintln(out, "|---|---|")
	for i := range s.Sources {
		src := &s.Sources[i]
		fmt.Fprintf(out, "| **Source** | %s (%s) |\n", mdCode(src.Name), src.Kind)
		if len(src.Command) > 0 {
			fmt.Fprintf(out, "| Command | %s |\n", mdCode(shellQuote(src.Command, 200)))
		}
		if src.Code != "" {
			fmt.Fprintf(out, "| Code | %s |\n", mdCode(cut(firstLines(src.Code, 1), 100)))
		}
		if src.Started != nil {
			fmt.Fprintf(out, "| Started | %s |\n", src.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		if src.Wall > 0 {
			fmt.Fprintf(out, "| Duration | %s |\n", seconds(src.Wall))
		}
		if e := exitLine(src); e != "" {
			fmt.Fprintf(out, "| Exit | %s |\n", mdCell(e))
		}
		if src.Sandbox != "" {
			fmt.Fprintf(out, "| Sandbox | %s |\n", mdCode(src.Sandbox))
		}
		if p := policyLine(src.Policy); p != "" {
			fmt.Fprintf(out, "| Policy | %s |\n", mdCode(p))
		}
		if c := countsLine(s, src); c != "" {
			fmt.Fprintf(out, "| Counts | %s |\n", mdCell(c))
		}
		if src.Error != "" {
			fmt.Fprintf(out, "| Error | %s |\n", mdCode(cut(src.Error, 300)))
		}
	}
	fmt.Fprintf(out, "| Read | %s |\n", mdCell(totalsLine(s)))

	if rows, more := treeRows(s); len(rows) > 0 {
		fmt.Fprintln(out, "\n### Process tree")
		fmt.Fprintln(out)
		fmt.Fprintln(out, "```")
		// The tree drawn as in the text format, without colours.
		for _, r := range rows {
			branch := ""
			if r.depth > 0 {
				branch = "├─ "
				if r.last {
					branch = "└─ "
				}
			}
			p := r.p
			line := fmt.Sprintf("%s%s%d %s", r.prefix, branch, p.Pid, cut(p.Program, 40))
			if len(p.Argv) > 0 {
				line += "  " + shellQuote(p.Argv, 80)
			}
			if e := procExit(p); e != "" {
				line += "  [" + e + "]"
			}
			if p.Denied > 0 {
				line += "  " + plural(p.Denied, "denial", "denials")
			}
			fmt.Fprintln(out, strings.ReplaceAll(line, "```", "'''"))
			for _, x := range p.Execs {
				pad := r.prefix
				if r.depth > 0 {
					pad += map[bool]string{true: "   ", false: "│  "}[r.last]
				}
				fmt.Fprintf(out, "%s   exec %s %s\n", pad, strings.ReplaceAll(elided(x.Program, 80), "```", "'''"), decisionWord(x.Decision))
			}
		}
		if more > 0 {
			fmt.Fprintf(out, "… %d more processes (the json format lists them)\n", more)
		}
		fmt.Fprintln(out, "```")
	}

	fmt.Fprintln(out, "\n### Denied and would-be-denied operations")
	fmt.Fprintln(out)
	if len(s.Denials) == 0 {
		fmt.Fprintln(out, "None.")
	} else {
		fmt.Fprintln(out, "| Rule | Count | Decision | Operation | Paths / target (given → resolved) | Program [pids] | Reason |")
		fmt.Fprintln(out, "|---|---:|---|---|---|---|---|")
		for _, g := range s.Denials {
			for _, d := range g.Ops {
				fmt.Fprintf(out, "| %s | %d | %s | %s | %s | %s | %s |\n", mdCode(g.Rule.String()), d.Count, decisionWord(d.Decision),
					mdCode(opName(d)), mdCode(denialObject(d)), mdCode(cut(d.Program, 40)+" ["+pidsText(d)+"]"),
					mdCell(cut(d.Reason, 200)))
			}
			if g.OpsDropped > 0 {
				fmt.Fprintf(out, "| %s | %d | | more operations past the cap | | | |\n", mdCode(g.Rule.String()), g.OpsDropped)
			}
		}
	}

	if s.hasTraceSource() {
		fmt.Fprintln(out, "\n### Files changed (allowed)")
		fmt.Fprintln(out)
		if len(s.Files) == 0 {
			fmt.Fprintln(out, "None.")
		} else {
			fmt.Fprintln(out, "| Kind | Path | Count | By |")
			fmt.Fprintln(out, "|---|---|---:|---|")
			for _, f := range s.Files {
				fmt.Fprintf(out, "| %s | %s | %d | %s |\n", f.Kind, mdCode(fileObject(f, pathBudget)), f.Count, mdCode(cut(strings.Join(f.Programs, ", "), 120)))
			}
		}
	}

	fmt.Fprintln(out, "\n### Network")
	fmt.Fprintln(out)
	if len(s.Network) == 0 {
		fmt.Fprintln(out, "None.")
	} else {
		fmt.Fprintln(out, "| Call | Address | Decision | Program | Count |")
		fmt.Fprintln(out, "|---|---|---|---|---:|")
		for _, n := range s.Network {
			fmt.Fprintf(out, "| %s | %s | %s | %s | %d |\n", n.Syscall, mdCode(netObject(n)), decisionWord(n.Decision), mdCode(cut(n.Program, 40)), n.Count)
		}
	}

	fmt.Fprintln(out, "\n### Signals and process operations")
	fmt.Fprintln(out)
	if len(s.ProcOps) == 0 {
		fmt.Fprintln(out, "None.")
	} else {
		fmt.Fprintln(out, "| Call | Target | Decision | Program | Count |")
		fmt.Fprintln(out, "|---|---|---|---|---:|")
		for _, o := range s.ProcOps {
			fmt.Fprintf(out, "| %s | %s | %s | %s | %d |\n", o.Syscall, mdCell(procOpObject(o)), decisionWord(o.Decision), mdCode(cut(o.Program, 40)), o.Count)
		}
	}

	if r := s.Reads; r != nil {
		fmt.Fprintf(out, "\n### Reads\n\n%d opens of %d distinct files; the most opened:\n\n", r.Opens, r.Distinct)
		fmt.Fprintln(out, "| Path | Opens |")
		fmt.Fprintln(out, "|---|---:|")
		for _, x := range r.Top {
			fmt.Fprintf(out, "| %s | %d |\n", mdCode(elided(x.Path, pathBudget)), x.Count)
		}
	}

	if tl := s.Timeline; tl != nil && len(tl.Buckets) > 0 {
		fmt.Fprintf(out, "\n### Timeline\n\n%s from %s, one column per %s:\n\n```\n", seconds(tl.End.Sub(tl.Start).Seconds()),
			tl.Start.UTC().Format("15:04:05.000"), seconds(tl.Width*float64(len(tl.Buckets))/float64(min(len(tl.Buckets), 60))))
		for c, name := range Categories {
			v := resample(series(tl, c), 60)
			var sum int64
			for _, x := range v {
				sum += x
			}
			if sum > 0 {
				fmt.Fprintf(out, "%-8s %s %s\n", name, sparkline(v), strconv.FormatInt(sum, 10))
			}
		}
		fmt.Fprintln(out, "```")
	}
	return out.Flush()
}

func decisionWord(d string) string {
	switch d {
	case "deny":
		return "denied"
	case "audit":
		return "would deny"
	}
	return "allowed"
}
