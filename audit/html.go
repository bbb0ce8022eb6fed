package audit

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/tracecell/tracecell/report"
)

// The HTML format is one self-contained file: inline CSS, inline SVG, no
// script, no external font, image or style sheet.

const htmlStyle = `body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d1d1f;background:#fff}
h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:4px 0 8px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.n{text-align:right;font-variant-numeric:tabular-nums}code{font:12.5px ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.deny{color:#b3261e;font-weight:600}.audit{color:#9a6700;font-weight:600}.allow{color:#1a7f37}
table.kv th{width:110px}.muted{color:#666}svg text{font:12px ui-monospace,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;margin:0}.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}`

var catColors = []string{"#8fb3d9", "#2e7d32", "#6a1b9a", "#ef6c00", "#607d8b", "#c62828"}

func esc(s string) string { return html.EscapeString(cut(s, 0)) }

func decisionClass(d string) string {
	switch d {
	case "deny":
		return "deny"
	case "audit":
		return "audit"
	}
	return "allow"
}

func renderHTML(w io.Writer, s *Summary) error {
	out := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	title := "tracecell report"
	if len(s.Sources) > 0 {
		title += ": " + cut(s.Sources[0].Name, 80)
	}
	p("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n", esc(title))
	p("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<style>%s</style></head><body>\n", htmlStyle)
	p("<h1>tracecell report</h1>\n")
	for i := range s.Sources {
		src := &s.Sources[i]
		p("<table class=\"kv\">\n<tr><th>Source</th><td><code>%s</code> (%s)</td></tr>\n", esc(src.Name), esc(src.Kind))
		row := func(k, v string, code bool) {
			if v == "" {
				return
			}
			if code {
				p("<tr><th>%s</th><td><code>%s</code></td></tr>\n", k, esc(v))
			} else {
				p("<tr><th>%s</th><td>%s</td></tr>\n", k, esc(v))
			}
		}
		if len(src.Command) > 0 {
			row("Command", shellQuote(src.Command, 400), true)
		}
		if src.Code != "" {
			p("<tr><th>Code</th><td><pre><code>%s</code></pre></td></tr>\n", html.EscapeString(codeText(src.Code, 2000)))
		}
		if src.Started != nil {
			row("Started", src.Started.UTC().Format("2006-01-02 15:04:05 UTC"), false)
		}
		if src.Wall > 0 {
			row("Duration", seconds(src.Wall), false)
		}
		row("Exit", exitLine(src), false)
		row("Sandbox", src.Sandbox, true)
		row("Policy", policyLine(src.Policy), true)
		row("Counts", countsLine(s, src), false)
		if src.Error != "" {
			p("<tr><th>Error</th><td class=\"deny\">%s</td></tr>\n", esc(src.Error))
		}
		p("</table>\n")
	}
	p("<p class=\"muted\">%s</p>\n", esc(totalsLine(s)))

	rows, more := treeRows(s)
	if len(rows) > 0 {
		p("<h2>Process tree</h2>\n")
		treeSVG(out, rows)
		if more > 0 {
			p("<p class=\"muted\">… %d more processes (the json format lists them).</p>\n", more)
		}
		if s.ProcessesDropped > 0 {
			p("<p class=\"muted\">… %d more processes past the cap of %d.</p>\n", s.ProcessesDropped, MaxProcesses)
		}
	}

	if tl := s.Timeline; tl != nil && len(tl.Buckets) > 0 {
		p("<h2>Timeline</h2>\n")
		timelineSVG(out, s, rows)
	}

	p("<h2>Denied and would-be-denied operations, by rule</h2>\n")
	if len(s.Denials) == 0 {
		p("<p>None.</p>\n")
	} else {
		p("<table><tr><th>Rule</th><th>Count</th><th>Decision</th><th>Operation</th><th>Paths / target (given → resolved)</th><th>Program [pids]</th><th>Reason</th></tr>\n")
		for _, g := range s.Denials {
			for i, d := range g.Ops {
				rule := ""
				if i == 0 {
					rule = fmt.Sprintf("<td rowspan=\"%d\"><code>%s</code><br><span class=\"muted\">%d</span></td>", len(g.Ops), esc(g.Rule.String()), g.Count)
				}
				p("<tr>%s<td class=\"n\">%d</td><td class=\"%s\">%s</td><td><code>%s</code></td><td><code>%s</code></td><td><code>%s [%s]</code></td><td>%s</td></tr>\n",
					rule, d.Count, decisionClass(d.Decision), decisionWord(d.Decision), esc(opName(d)),
					esc(denialObject(d)), esc(d.Program), esc(pidsText(d)), esc(d.Reason))
			}
		}
		p("</table>\n")
		if s.DenialKeysDropped > 0 {
			p("<p class=\"muted\">%d more operations past the cap of %d distinct ones (counted in the rules' totals).</p>\n", s.DenialKeysDropped, MaxDenialKeys)
		}
	}

	if s.hasTraceSource() {
		p("<h2>Files changed (allowed)</h2>\n")
		if len(s.Files) == 0 {
			p("<p>None.</p>\n")
		} else {
			p("<table><tr><th>Kind</th><th>Path</th><th>Count</th><th>By</th></tr>\n")
			for _, f := range s.Files {
				p("<tr><td>%s</td><td><code>%s</code></td><td class=\"n\">%d</td><td><code>%s</code></td></tr>\n",
					esc(f.Kind), esc(fileObject(f, 0)), f.Count, esc(strings.Join(f.Programs, ", ")))
			}
			p("</table>\n")
		}
	}

	p("<h2>Network</h2>\n")
	if len(s.Network) == 0 {
		p("<p>None.</p>\n")
	} else {
		p("<table><tr><th>Call</th><th>Address</th><th>Decision</th><th>Program</th><th>Count</th></tr>\n")
		for _, n := range s.Network {
			p("<tr><td>%s</td><td><code>%s</code></td><td class=\"%s\">%s</td><td><code>%s</code></td><td class=\"n\">%d</td></tr>\n",
				esc(n.Syscall), esc(netObject(n)), decisionClass(n.Decision), decisionWord(n.Decision), esc(n.Program), n.Count)
		}
		p("</table>\n")
	}

	p("<h2>Signals and process operations</h2>\n")
	if len(s.ProcOps) == 0 {
		p("<p>None.</p>\n")
	} else {
		p("<table><tr><th>Call</th><th>Target</th><th>Decision</th><th>Program</th><th>Count</th></tr>\n")
		for _, o := range s.ProcOps {
			p("<tr><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td><code>%s</code></td><td class=\"n\">%d</td></tr>\n",
				esc(o.Syscall), esc(procOpObject(o)), decisionClass(o.Decision), decisionWord(o.Decision), esc(o.Program), o.Count)
		}
		p("</table>\n")
	}

	if r := s.Reads; r != nil {
		p("<h2>Reads</h2>\n<p>%d opens of %d distinct files; the most opened:</p>\n", r.Opens, r.Distinct)
		p("<table><tr><th>Path</th><th>Opens</th></tr>\n")
		for _, x := range r.Top {
			p("<tr><td><code>%s</code></td><td class=\"n\">%d</td></tr>\n", esc(x.Path), x.Count)
		}
		p("</table>\n")
	}
	p("</body></html>\n")
	return out.Flush()
}

// treeSVG draws the process tree: one box per process, indented by depth,
// joined to its parent by elbow lines; its execs beside it.
func treeSVG(out *bufio.Writer, rows []treeRow) {
	const rowH, indent, boxH = 30, 28, 22
	width := 1100
	height := len(rows)*rowH + 10
	fmt.Fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" style=\"max-width:100%%;height:auto\" role=\"img\" aria-label=\"process tree\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", width, height, width, height)
	y := map[*Process]int{} // row centre
	x := map[*Process]int{} // box left
	for i, r := range rows {
		y[r.p] = 5 + i*rowH + boxH/2
		x[r.p] = 5 + r.depth*indent
	}
	for _, r := range rows {
		if par := r.p.parent; par != nil {
			if py, ok := y[par]; ok {
				px := x[par] + 10
				fmt.Fprintf(out, "<path d=\"M%d %d V%d H%d\" fill=\"none\" stroke=\"#999\"/>\n", px, py+boxH/2, y[r.p], x[r.p])
			}
		}
	}
	for _, r := range rows {
		p := r.p
		label := strconv.Itoa(p.Pid) + " " + cut(p.Program, 24)
		if e := procExit(p); e != "" {
			label += "  [" + e + "]"
		}
		w := 14 + 7*len([]rune(label))
		stroke, fill := "#5b7fa6", "#eef3f9"
		if p.Denied > 0 {
			stroke, fill = "#c62828", "#fdecea"
		}
		bx, by := x[p], y[p]-boxH/2
		fmt.Fprintf(out, "<g><title>%s</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"%s\" stroke=\"%s\"/>",
			esc(shellQuote(p.Argv, 300)), bx, by, w, boxH, fill, stroke)
		fmt.Fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text></g>\n", bx+7, by+15, esc(label))
		tx := bx + w + 10
		var extra []string
		if len(p.Argv) > 0 {
			extra = append(extra, shellQuote(p.Argv, 50))
		}
		if p.Denied > 0 {
			extra = append(extra, plural(p.Denied, "denial", "denials"))
		}
		fmt.Fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"#555\">%s", tx, by+15, esc(strings.Join(extra, "  ")))
		for _, e := range p.Execs {
			color := map[string]string{"deny": "#c62828", "audit": "#9a6700"}[e.Decision]
			if color == "" {
				color = "#6a1b9a"
			}
			fmt.Fprintf(out, "<tspan fill=\"%s\">  exec %s%s</tspan>", color, esc(cut(e.Program, 40)), map[string]string{"deny": " ✗", "audit": " ⚠"}[e.Decision])
		}
		fmt.Fprintf(out, "</text>\n")
	}
	fmt.Fprintf(out, "</svg>\n")
}

// timelineSVG draws a stacked histogram of the events per category over
// time, and below it one lane per process (first to last event) with its
// notable events marked.
func timelineSVG(out *bufio.Writer, s *Summary, rows []treeRow) {
	tl := s.Timeline
	const left, width, histH, laneH = 150, 900, 120, 16
	lanes := rows
	if len(lanes) > 60 {
		lanes = lanes[:60]
	}
	height := histH + 40 + len(lanes)*laneH + 20
	// The buckets cover whole widths: the last may end after tl.End.
	span := max(tl.End.Sub(tl.Start).Seconds(), tl.Width*float64(len(tl.Buckets)))
	if span <= 0 {
		span = 1e-3
	}
	xOf := func(sec float64) float64 { return left + sec/span*width }
	fmt.Fprintf(out, "<p class=\"legend\">")
	for c, name := range Categories {
		fmt.Fprintf(out, "<span><i style=\"background:%s\"></i>%s</span>", catColors[c], name)
	}
	fmt.Fprintf(out, "</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" style=\"max-width:100%%;height:auto\" role=\"img\" aria-label=\"timeline\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		left+width+20, height, left+width+20, height)
	var max int64
	for _, b := range tl.Buckets {
		var sum int64
		for _, c := range b.Counts {
			sum += c
		}
		if sum > max {
			max = sum
		}
	}
	bw := tl.Width / span * width
	for i, b := range tl.Buckets {
		y := float64(histH)
		for c, n := range b.Counts {
			if n == 0 || max == 0 {
				continue
			}
			h := float64(n) / float64(max) * (histH - 10)
			y -= h
			fmt.Fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s: %d at +%s</title></rect>\n",
				xOf(float64(i)*tl.Width), y, max1(bw-0.5), h, catColors[c], Categories[c], n, seconds(float64(i)*tl.Width))
		}
	}
	fmt.Fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", left, histH, left+width, histH)
	fmt.Fprintf(out, "<text x=\"%d\" y=\"%d\">events (max %d per %s)</text>\n", 4, 14, max, seconds(tl.Width))
	for i := 0; i <= 4; i++ {
		sec := span * float64(i) / 4
		anchor := map[int]string{0: "start", 4: "end"}[i]
		if anchor == "" {
			anchor = "middle"
		}
		fmt.Fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" fill=\"#555\">+%s</text>\n", xOf(sec), histH+16, anchor, seconds(sec))
	}
	top := histH + 34
	laneY := map[*Process]int{}
	for i, r := range lanes {
		p := r.p
		yy := top + i*laneH
		laneY[p] = yy
		fmt.Fprintf(out, "<text x=\"4\" y=\"%d\">%s</text>\n", yy+11, esc(cut(strings.Repeat(" ", r.depth)+strconv.Itoa(p.Pid)+" "+p.Program, 18)))
		x0 := xOf(p.First.Sub(tl.Start).Seconds())
		x1 := xOf(p.Last.Sub(tl.Start).Seconds())
		fmt.Fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"8\" rx=\"3\" fill=\"#cfd8e3\"><title>%d %s: +%s to +%s</title></rect>\n",
			x0, yy+4, max1(x1-x0), p.Pid, esc(p.Program), seconds(p.First.Sub(tl.Start).Seconds()), seconds(p.Last.Sub(tl.Start).Seconds()))
	}
	for _, m := range tl.Marks {
		yy, ok := laneY[m.proc]
		if !ok {
			continue
		}
		x := xOf(m.At)
		color := map[string]string{"deny": "#c62828", "audit": "#d29922", "exec": "#6a1b9a", "fork": "#607d8b", "exit": "#222"}[m.What]
		if m.What == "deny" || m.What == "audit" {
			fmt.Fprintf(out, "<path d=\"M%.1f %d l4 8 h-8 z\" fill=\"%s\"><title>%s +%s: %s</title></path>\n", x, yy+2, color, m.What, seconds(m.At), esc(cut(m.Label, 200)))
		} else {
			fmt.Fprintf(out, "<circle cx=\"%.1f\" cy=\"%d\" r=\"3.5\" fill=\"%s\"><title>%s +%s: %s</title></circle>\n", x, yy+8, color, m.What, seconds(m.At), esc(cut(m.Label, 200)))
		}
	}
	fmt.Fprintf(out, "</svg>\n<p class=\"legend\"><span><i style=\"background:#c62828\"></i>denied (▲)</span><span><i style=\"background:#d29922\"></i>would deny (▲)</span><span><i style=\"background:#6a1b9a\"></i>exec</span><span><i style=\"background:#607d8b\"></i>fork</span><span><i style=\"background:#222\"></i>exit</span></p>\n")
	if len(rows) > len(lanes) {
		fmt.Fprintf(out, "<p class=\"muted\">Lanes of the first %d of %d processes.</p>\n", len(lanes), len(rows))
	}
	if tl.MarksDropped > 0 {
		fmt.Fprintf(out, "<p class=\"muted\">%d more notable events past the cap of %d marks.</p>\n", tl.MarksDropped, MaxMarks)
	}
}

// codeText is code kept readable in a <pre>: lines and tabs stay, every
// other character that is not printable is made visible as the text and
// markdown formats show it (report.Visible: controls, bidi overrides and
// isolates, which would make the code read otherwise than it ran), cut to
// max bytes.
func codeText(s string, max int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cols := strings.Split(l, "\t")
		for j, c := range cols {
			cols[j] = report.Visible(c)
		}
		lines[i] = strings.Join(cols, "\t")
	}
	s = strings.Join(lines, "\n")
	if len(s) > max {
		i := max
		for i > 0 && (s[i]&0xc0) == 0x80 {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}

func max1(f float64) float64 {
	if f < 1 {
		return 1
	}
	return f
}
