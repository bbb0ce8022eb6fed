package audit

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ANSI styles of the text format.
const (
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiGreen  = "\x1b[32m"
	ansiDim    = "\x1b[2m"
	ansiReset  = "\x1b[0m"
)

type textOut struct {
	w     *bufio.Writer
	color bool
}

func (t *textOut) style(code, s string) string {
	if !t.color {
		return s
	}
	return code + s + ansiReset
}

func (t *textOut) head(s string) {
	fmt.Fprintf(t.w, "\n%s\n", t.style(ansiBold, s))
}

func (t *textOut) decision(d string) string {
	switch d {
	case "deny":
		return t.style(ansiRed, "denied")
	case "audit":
		return t.style(ansiYellow, "would deny")
	}
	return t.style(ansiGreen, "allowed")
}

func renderText(w io.Writer, s *Summary, o Options) error {
	t := &textOut{w: bufio.NewWriter(w), color: o.Color}
	out := t.w
	fmt.Fprintln(out, t.style(ansiBold, "tracecell report"))
	for i := range s.Sources {
		src := &s.Sources[i]
		label := src.Kind
		if src.Kind == "trace" {
			label += ", " + plural(src.Events, "event", "events")
		}
		fmt.Fprintf(out, "  %-9s %s (%s)\n", "Source", cut(src.Name, 120), label)
		if len(src.Command) > 0 {
			fmt.Fprintf(out, "  %-9s %s\n", "Command", shellQuote(src.Command, 200))
		}
		if src.Code != "" {
			fmt.Fprintf(out, "  %-9s %s\n", "Code", cut(firstLines(src.Code, 1), 100))
		}
		var when []string
		if src.Started != nil {
			when = append(when, src.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		if src.Wall > 0 {
			when = append(when, "wall "+seconds(src.Wall))
		}
		if e := exitLine(src); e != "" {
			when = append(when, e)
		}
		if len(when) > 0 {
			fmt.Fprintf(out, "  %-9s %s\n", "Ran", cut(strings.Join(when, ", "), 0))
		}
		if src.Sandbox != "" {
			fmt.Fprintf(out, "  %-9s %s\n", "Sandbox", cut(src.Sandbox, 0))
		}
		if p := policyLine(src.Policy); p != "" {
			fmt.Fprintf(out, "  %-9s %s\n", "Policy", cut(p, 0))
		}
		if c := countsLine(s, src); c != "" {
			fmt.Fprintf(out, "  %-9s %s\n", "Counts", c)
		}
		if src.DenialsDropped > 0 {
			fmt.Fprintf(out, "  %-9s %d denials past the report's cap are counted but not listed\n", "Note", src.DenialsDropped)
		}
		if src.Error != "" {
			fmt.Fprintf(out, "  %-9s %s\n", "Error", t.style(ansiRed, cut(src.Error, 300)))
		}
	}
	fmt.Fprintf(out, "  %-9s %s\n", "Events", totalsLine(s))

	rows, moreRows := treeRows(s)
	if len(rows) > 0 {
		t.head("Process tree")
		for _, r := range rows {
			branch := ""
			if r.depth > 0 {
				branch = "├─ "
				if r.last {
					branch = "└─ "
				}
			}
			p := r.p
			line := fmt.Sprintf("  %s%s%s %s", r.prefix, branch, t.style(ansiBold, strconv.Itoa(p.Pid)), cut(p.Program, 40))
			if len(p.Argv) > 0 {
				line += "  " + t.style(ansiDim, shellQuote(p.Argv, 80))
			}
			if e := procExit(p); e != "" {
				line += "  [" + e + "]"
			}
			if p.Denied > 0 {
				line += "  " + t.style(ansiRed, plural(p.Denied, "denial", "denials"))
			}
			fmt.Fprintln(out, line)
			for _, x := range p.Execs {
				pad := r.prefix
				if r.depth > 0 {
					if r.last {
						pad += "   "
					} else {
						pad += "│  "
					}
				}
				given := ""
				if x.Given != x.Program {
					given = " (as " + elided(x.Given, 60) + ")"
				}
				fmt.Fprintf(out, "  %s   exec %s%s %s\n", pad, elided(x.Program, 80), given, t.decision(x.Decision))
			}
			if p.ExecsDropped > 0 {
				fmt.Fprintf(out, "  %s   … %d more execs\n", r.prefix, p.ExecsDropped)
			}
		}
		if moreRows > 0 {
			fmt.Fprintf(out, "  … %d more processes (the json format lists them)\n", moreRows)
		}
		if s.ProcessesDropped > 0 {
			fmt.Fprintf(out, "  … %d more processes past the cap of %d\n", s.ProcessesDropped, MaxProcesses)
		}
	}

	t.head("Denied and would-be-denied operations, by rule")
	if len(s.Denials) == 0 {
		fmt.Fprintln(out, "  none")
	}
	for _, g := range s.Denials {
		var what []string
		if g.Denied > 0 {
			what = append(what, t.style(ansiRed, strconv.FormatInt(g.Denied, 10)+" denied"))
		}
		if g.Audited > 0 {
			what = append(what, t.style(ansiYellow, strconv.FormatInt(g.Audited, 10)+" would be denied"))
		}
		fmt.Fprintf(out, "  %s  (%s)\n", t.style(ansiBold, g.Rule.String()), strings.Join(what, ", "))
		for _, d := range g.Ops {
			fmt.Fprintf(out, "    %5d× %s %s(%s) by %s[%s]\n", d.Count, t.decision(d.Decision), opName(d),
				cut(denialObject(d), 0), cut(d.Program, 40), pidsText(d))
			reason := d.Reason
			if d.Errno != "" {
				reason += " (" + d.Errno + ")"
			}
			if d.SourceName != "" {
				reason += " [" + cut(d.SourceName, 60) + "]"
			}
			fmt.Fprintf(out, "           %s\n", t.style(ansiDim, cut(reason, 200)))
		}
		if g.OpsDropped > 0 {
			fmt.Fprintf(out, "    … %d more operations past the cap of %d distinct ones (counted above)\n", g.OpsDropped, MaxDenialKeys)
		}
	}

	if s.hasTraceSource() {
		t.head("Files changed (allowed)")
		if len(s.Files) == 0 {
			fmt.Fprintln(out, "  none")
		}
		for _, f := range s.Files {
			fmt.Fprintf(out, "    %5d× %-7s %s  by %s\n", f.Count, f.Kind, fileObject(f, pathBudget), cut(strings.Join(f.Programs, ", "), 120))
		}
		if s.FilesDropped > 0 {
			fmt.Fprintf(out, "    … %d more changes past the cap of %d files\n", s.FilesDropped, MaxFileKeys)
		}
	}

	t.head("Network")
	if len(s.Network) == 0 {
		fmt.Fprintln(out, "  none")
	}
	for _, n := range s.Network {
		fmt.Fprintf(out, "    %5d× %s %s %s by %s\n", n.Count, t.decision(n.Decision), n.Syscall, cut(netObject(n), 0), cut(n.Program, 40))
	}
	if s.NetworkDropped > 0 {
		fmt.Fprintf(out, "    … %d more past the cap\n", s.NetworkDropped)
	}

	t.head("Signals and process operations")
	if len(s.ProcOps) == 0 {
		fmt.Fprintln(out, "  none")
	}
	for _, o := range s.ProcOps {
		fmt.Fprintf(out, "    %5d× %s %s %s by %s\n", o.Count, t.decision(o.Decision), o.Syscall, procOpObject(o), cut(o.Program, 40))
	}
	if s.ProcOpsDropped > 0 {
		fmt.Fprintf(out, "    … %d more past the cap\n", s.ProcOpsDropped)
	}

	if r := s.Reads; r != nil {
		more := ""
		if r.Capped {
			more = " or more"
		}
		t.head(fmt.Sprintf("Reads (%d opens of %d%s files; most opened first)", r.Opens, r.Distinct, more))
		for i, x := range r.Top {
			if i == 15 {
				fmt.Fprintf(out, "    … (the json and html formats list %d)\n", len(r.Top))
				break
			}
			fmt.Fprintf(out, "    %5d× %s\n", x.Count, elided(x.Path, pathBudget))
		}
	}

	if tl := s.Timeline; tl != nil && len(tl.Buckets) > 0 {
		span := tl.End.Sub(tl.Start).Seconds()
		t.head(fmt.Sprintf("Timeline (%s, %s per column)", seconds(span), seconds(tl.Width*float64(len(tl.Buckets))/float64(min(len(tl.Buckets), 60)))))
		for c, name := range Categories {
			v := resample(series(tl, c), 60)
			var sum int64
			for _, x := range v {
				sum += x
			}
			if sum == 0 {
				continue
			}
			line := sparkline(v)
			if name == "denied" {
				line = t.style(ansiRed, line)
			}
			fmt.Fprintf(out, "  %-8s %s %d\n", name, line, sum)
		}
	}
	return out.Flush()
}

func (s *Summary) hasTraceSource() bool {
	for _, src := range s.Sources {
		if src.Kind == "trace" {
			return true
		}
	}
	return false
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		return strings.Join(lines[:n], " ⏎ ") + " …"
	}
	return strings.Join(lines, " ⏎ ")
}
