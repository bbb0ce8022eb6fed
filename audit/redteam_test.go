package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// summaryOf is the summary of a trace that recorded events.
func summaryOf(events []report.Event) *Summary {
	a := NewAggregator()
	a.begin(Source{Name: "t.jsonl", Kind: "trace"})
	for i := range events {
		a.Event(&events[i])
	}
	return a.Summary()
}

// renderAll is s in each format of Formats but json, and the policy
// suggest learns from it, by name ("yaml").
func renderAll(t *testing.T, s *Summary) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		if err := Render(&b, s, f, Options{}); err != nil {
			t.Fatal(err)
		}
		out[f] = b.String()
	}
	var b bytes.Buffer
	if err := Suggest(s).WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	out["yaml"] = b.String()
	return out
}

// TestLongPathsKeepTheirEnds: a tree that pads a given path cannot push the
// path it resolved to (the host file the operation reached) out of any
// format, nor the end of either path: each is elided on its own, its head
// and its tail kept.
func TestLongPathsKeepTheirEnds(t *testing.T) {
	padded := "results/cache_" + strings.Repeat("0", 120) + "/run_" + strings.Repeat("1", 120) + "/latest/authorized_keys"
	deep := "/srv/" + strings.Repeat("d", 1500) + "/.ssh/authorized_keys"
	ev := func(kind syscalls.Kind, paths ...policy.Path) report.Event {
		return report.Event{Time: time.Unix(1, 0), Decision: report.Audit, Pid: 10, Program: "python3", Syscall: "openat", Kind: kind,
			Rule: policy.RuleOutsideRoots, Reason: "outside the writable roots", Paths: paths}
	}
	for _, tc := range []struct {
		name string
		ev   report.Event
		want []string // in every format
	}{
		{"a padded given path and the host file it reached",
			ev(syscalls.KindCreate, policy.Path{Role: "path", Given: padded, Resolved: "/home/x/.ssh/authorized_keys"}),
			[]string{"results/cache_000", "/latest/authorized_keys", "/home/x/.ssh/authorized_keys", " bytes)…"}},
		{"a resolved path past the budget: its head and its end",
			ev(syscalls.KindCreate, policy.Path{Role: "path", Given: "x", Resolved: deep}),
			[]string{"/srv/ddd", "ddd/.ssh/authorized_keys", " bytes)…"}},
		{"a rename: both paths' ends",
			ev(syscalls.KindRename, policy.Path{Role: "from", Given: padded, Resolved: "/srv/sbx/" + padded},
				policy.Path{Role: "to", Given: padded + "2", Resolved: "/home/x/.ssh/authorized_keys"}),
			[]string{"/latest/authorized_keys2", "/home/x/.ssh/authorized_keys", "/srv/sbx/results/cache_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for format, out := range renderAll(t, summaryOf([]report.Event{tc.ev})) {
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("%s: %q is not in\n%s", format, w, out)
					}
				}
			}
		})
	}
}

// TestElide: elide keeps the head and the tail, cuts on rune boundaries
// and says how many bytes it cut.
func TestElide(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		max     int
		want    string
	}{
		{"short: whole", "/etc/passwd", 160, "/etc/passwd"},
		{"no budget: whole", strings.Repeat("a", 500), 0, strings.Repeat("a", 500)},
		{"long: a third of the head, the rest of the tail", "abc" + strings.Repeat("x", 100) + "/tail", 12, "abcx…(96 bytes)…xxx/tail"},
		{"multi-byte runes stay whole", strings.Repeat("é", 20), 9, "é…(32 bytes)…ééé"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := elide(tc.s, tc.max)
			if got != tc.want {
				t.Errorf("elide(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("elide(%q, %d) = %q: not UTF-8", tc.s, tc.max, got)
			}
		})
	}
}

// section is the part of out from the line heading to the next heading
// of the format (text: a line that does not start with a space).
func section(t *testing.T, format, out, heading string) string {
	t.Helper()
	start := map[string]string{"text": "\n" + heading + "\n", "markdown": "\n### " + heading + "\n", "html": "<h2>" + heading + "</h2>"}[format]
	i := strings.Index(out, start)
	if i < 0 {
		t.Fatalf("%s: no %q heading in\n%s", format, heading, out)
	}
	rest := out[i+len(start):]
	next := map[string]string{"text": "\n\n", "markdown": "\n### ", "html": "<h2>"}[format]
	if j := strings.Index(rest, next); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestNetworkAbstractNames: the Network section names the abstract unix
// socket a connect or a bind was aimed at (its name is in the event's
// address), made visible like the other text the tree chose.
func TestNetworkAbstractNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision string
		addr     string
		path     string
		want     string
	}{
		{"denied connect to an abstract socket", report.Deny, "@/tmp/.X11-unix/X0", "", "unix @/tmp/.X11-unix/X0"},
		{"allowed connect to an abstract socket", report.Allow, "@dbus-abc", "", "unix @dbus-abc"},
		{"a name with controls", report.Deny, "@evil\x1b[2J\u202e", "", `unix @evil\x1b[2J\u202e`},
		{"a path socket", report.Deny, "/run/docker.sock", "/run/docker.sock", "unix /run/docker.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := report.Event{Time: time.Unix(1, 0), Decision: tc.decision, Pid: 10, Program: "python3", Syscall: "connect", Kind: syscalls.KindConnect,
				Family: "unix", Address: tc.addr, Abstract: tc.path == "", Rule: policy.RuleUnixAbstract, Reason: "not allowed"}
			if tc.path != "" {
				e.Paths = []policy.Path{{Role: "socket", Given: tc.path, Resolved: tc.path}}
				e.Rule = policy.RuleUnixOutsideRoots
			}
			if tc.decision == report.Allow {
				e.Rule = policy.RuleNetAllow
			}
			out := renderAll(t, summaryOf([]report.Event{e}))
			for _, format := range []string{"text", "markdown", "html"} {
				net := section(t, format, out[format], "Network")
				if !strings.Contains(net, tc.want) {
					t.Errorf("%s: %q is not in the Network section:\n%s", format, tc.want, net)
				}
				if strings.ContainsAny(net, "\x1b\u202e") {
					t.Errorf("%s: a control character printed raw:\n%q", format, net)
				}
			}
		})
	}
}

// mdSource splits a line of markdown into its text outside code spans
// (where GFM may find an autolink: an escaped '.' or ':' is none, NUL
// stands for it; any other escaped character is one) and the text it
// renders (escapes undone, code spans' content as it shows in a table
// cell).
func mdSource(t *testing.T, l string) (outside, rendered string) {
	t.Helper()
	var o, r strings.Builder
	for j := 0; j < len(l); {
		switch {
		case l[j] == '\\' && j+1 < len(l) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", l[j+1]) >= 0:
			if c := l[j+1]; c == '.' || c == ':' {
				o.WriteByte(0)
			} else {
				o.WriteByte(c)
			}
			r.WriteByte(l[j+1])
			j += 2
		case l[j] == '`':
			code, next, ok := codeSpan(l, j)
			if !ok {
				t.Fatalf("an unclosed code span: %q", l)
			}
			code = strings.ReplaceAll(code, `\|`, "|")
			if len(code) > 1 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
				code = code[1 : len(code)-1]
			}
			r.WriteString(code)
			j = next
		default:
			o.WriteByte(l[j])
			r.WriteByte(l[j])
			j++
		}
	}
	return o.String(), r.String()
}

// TestMarkdownNoAutolinks: text the tree chose becomes no GFM extended
// autolink (www, url, email, mailto:, xmpp:) in a markdown table cell, and
// renders as the same characters.
func TestMarkdownNoAutolinks(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"www", "cannot write www.example.com/x"},
		{"www in any case", "see WwW.Example.COM and (www.x.org)"},
		{"url", "fetch https://evil.example/login?u=1 now"},
		{"other schemes", "ftp://x.org and http://y.org"},
		{"email", "mail admin@evil.example"},
		{"mailto and xmpp", "mailto:a@b.co xmpp:c@d.co/r"},
		{"email in a path", "/tmp/a@b.co|`x`_y_"},
		{"escapes around", `\www.x.org \https://x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cell := mdCell(tc.text)
			outside, rendered := mdSource(t, cell)
			low := strings.ToLower(outside)
			for _, bad := range []string{"www.", "://", "@"} {
				if strings.Contains(low, bad) {
					t.Errorf("mdCell(%q) = %q: %q outside a code span, which GFM links", tc.text, cell, bad)
				}
			}
			if rendered != tc.text {
				t.Errorf("mdCell(%q) = %q renders as %q", tc.text, cell, rendered)
			}
		})
	}
	// In a report: the reason of a denial is such a cell.
	e := report.Event{Time: time.Unix(1, 0), Decision: report.Deny, Pid: 10, Program: "python3", Syscall: "openat", Kind: syscalls.KindCreate,
		Rule: policy.RuleOutsideRoots, Reason: "cannot write www.evil.example or https://evil.example or x@evil.example",
		Paths: []policy.Path{{Role: "path", Given: "f", Resolved: "/srv/f"}}}
	var b bytes.Buffer
	if err := Render(&b, summaryOf([]report.Event{e}), "markdown", Options{}); err != nil {
		t.Fatal(err)
	}
	fenced := false
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if fenced || strings.HasPrefix(l, "```") {
			continue
		}
		if outside, _ := mdSource(t, l); strings.Contains(outside, "evil") && strings.ContainsAny(outside, ":@") {
			t.Errorf("a link GFM would make: %q", l)
		}
	}
}

// TestHTMLCodeBidi: the code of a session execution shows its bidi
// controls as escapes (as the text and markdown formats do), never raw:
// the code a reader sees is the code that ran ("Trojan Source").
func TestHTMLCodeBidi(t *testing.T) {
	for _, r := range []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c} {
		t.Run(strings.ToLower(strings.TrimPrefix(report.Visible(string(r)), `\`)), func(t *testing.T) {
			code := "access = 'user'\nif access != 'none" + string(r) + "':\n\tprint(1)"
			s := &Summary{Sources: []Source{{Name: "s#1", Kind: "session-execution", Code: code}}}
			var b bytes.Buffer
			if err := Render(&b, s, "html", Options{}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if strings.ContainsRune(out, r) {
				t.Errorf("%U is in the html raw", r)
			}
			if want := "if access != &#39;none" + report.Visible(string(r)) + "&#39;:\n\tprint(1)"; !strings.Contains(out, want) {
				t.Errorf("no %q (lines and tabs kept, %U visible) in\n%s", want, r, out)
			}
		})
	}
}

// TestSuggestExecGone: a program that is not on this host (deleted before
// it ran, as a memfd exec'd through /proc/self/fd/N is; deleted since) is
// left out of allow_exec, with the reason in a NOT SUGGESTED comment: an
// entry naming no file makes policy check reject the whole policy.
func TestSuggestExecGone(t *testing.T) {
	tmp := t.TempDir()
	exe := func(p string) string {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, prog, why string // why: "" when it is suggested
	}{
		{"a memfd", "/memfd:evil (deleted)", "the program was deleted before it ran"},
		{"an unlinked file", filepath.Join(tmp, "tool (deleted)"), "the program was deleted before it ran"},
		{"a deleted file's name, taken by another file", exe(filepath.Join(tmp, "other (deleted)")), "the program was deleted before it ran"},
		{"deleted since the run", filepath.Join(tmp, "gone"), "no such file on this host"},
		{"on this host", exe(filepath.Join(tmp, "tool")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := report.Event{Time: time.Unix(1, 0), Decision: report.Audit, Pid: 10, Program: "sh", Syscall: "execve", Kind: syscalls.KindExec,
				Rule: policy.RuleExecNotAllowed, Paths: []policy.Path{{Role: "program", Given: "/proc/self/fd/3", Resolved: tc.prog}}}
			_, y, f := suggestFrom(t, nil, []report.Event{e})
			p := decide(t, f) // the policy loads and builds
			if tc.why == "" {
				if !execAllowed(p, tc.prog) {
					t.Errorf("the suggested policy denies %s:\n%s", tc.prog, y)
				}
				return
			}
			if !strings.Contains(y, "  # NOT SUGGESTED: "+yamlQuote(tc.prog)+": "+tc.why) {
				t.Errorf("no NOT SUGGESTED comment saying %q in\n%s", tc.why, y)
			}
			if strings.Contains(y, "\n  - "+yamlQuote(tc.prog)) {
				t.Errorf("%s suggested:\n%s", tc.prog, y)
			}
		})
	}
}

// TestOperationNamedOnce: a denied operation whose kind is its call
// (connect, bind) is named once in every format.
func TestOperationNamedOnce(t *testing.T) {
	for _, tc := range []struct {
		name          string
		kind          syscalls.Kind
		syscall, want string
	}{
		{"connect", syscalls.KindConnect, "connect", "connect"},
		{"bind", syscalls.KindBind, "bind", "bind"},
		{"a kind other than the call", syscalls.KindBind, "listen", "bind listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := report.Event{Time: time.Unix(1, 0), Decision: report.Deny, Pid: 10, Program: "python3", Syscall: tc.syscall, Kind: tc.kind,
				Family: "inet", Address: "192.0.2.1", Port: 53, Rule: policy.RuleNetDeny, Reason: "network access is not allowed"}
			for format, out := range renderAll(t, summaryOf([]report.Event{e})) {
				if strings.Contains(out, tc.syscall+" "+tc.syscall) {
					t.Errorf("%s: %q named twice:\n%s", format, tc.syscall, out)
				}
				want := map[string]string{"text": " " + tc.want + "(", "markdown": "| `" + tc.want + "` |",
					"html": "<td><code>" + tc.want + "</code></td>", "yaml": "needed by " + tc.want + "("}[format]
				if !strings.Contains(out, want) {
					t.Errorf("%s: no %q in\n%s", format, want, out)
				}
			}
		})
	}
}
