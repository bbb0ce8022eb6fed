package audit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// TestSuggestRules: each rule of a would-be denial maps to the least grant
// the policy file can make (or to none), table-driven on events as the
// tracer writes them.
func TestSuggestRules(t *testing.T) {
	p := func(given, resolved string, exists, dir bool) policy.Path {
		return policy.Path{Role: "path", Given: given, Resolved: resolved, Exists: exists, IsDir: dir}
	}
	ev := func(kind syscalls.Kind, rule policy.Rule, paths ...policy.Path) report.Event {
		return report.Event{Time: time.Unix(1, 0), Decision: report.Audit, Pid: 10, Program: "python3", Syscall: "openat", Kind: kind, Rule: rule, Paths: paths}
	}
	netEv := func(kind syscalls.Kind, rule policy.Rule, addr string) report.Event {
		e := ev(kind, rule)
		e.Syscall, e.Family, e.Address, e.Port = "connect", "inet", addr, 80
		return e
	}
	for _, tc := range []struct {
		name    string
		base    *policy.Config
		events  []report.Event
		want    []string // lines of the YAML
		notWant []string
		ungrant string
	}{
		{"create outside: its directory", nil,
			[]report.Event{ev(syscalls.KindCreate, policy.RuleOutsideRoots, p("out/x.txt", "/srv/out/x.txt", false, false))},
			[]string{"write:", `  - "/srv/out"`, "#   needed by create openat(\"out/x.txt\" → /srv/out/x.txt) by python3"}, nil, ""},
		{"nested creates collapse into the outer root", nil,
			[]report.Event{
				ev(syscalls.KindCreate, policy.RuleOutsideRoots, p("/srv/out/d", "/srv/out/d", false, false)),
				ev(syscalls.KindCreate, policy.RuleOutsideRoots, p("/srv/out/d/f", "/srv/out/d/f", false, false)),
			},
			[]string{`  - "/srv/out"`}, []string{`  - "/srv/out/d"`}, ""},
		{"chmod of an existing directory: the directory", nil,
			[]report.Event{ev(syscalls.KindChmod, policy.RuleOutsideRoots, p("/srv/data", "/srv/data", true, true))},
			[]string{`  - "/srv/data"`}, []string{`  - "/srv"`}, ""},
		{"the root itself deleted: its parent", &policy.Config{WriteRoots: []string{"/srv/sbx"}},
			[]report.Event{ev(syscalls.KindDelete, policy.RuleRootItself, p("/srv/sbx", "/srv/sbx", true, true))},
			[]string{`  - "/srv"`, "    #   WARNING: all of /srv becomes writable; better make the program write elsewhere"}, []string{`  - "/srv/sbx"`}, ""},
		// A device on every host (the suggestion grants only a device that is
		// one here); a default one, but the suggestion does not know.
		{"device write: allow_device, no write root", nil,
			[]report.Event{ev(syscalls.KindWrite, policy.RuleOutsideRoots, p("/dev/null", "/dev/null", true, false))},
			[]string{"allow_device:", `  - "/dev/null"`}, []string{"\nwrite:"}, ""},
		{"exec: the resolved program", nil,
			[]report.Event{ev(syscalls.KindExec, policy.RuleExecNotAllowed, policy.Path{Role: "program", Given: "/bin/ls", Resolved: "/usr/bin/ls"})},
			[]string{"allow_exec:", `  - "/usr/bin/ls"`}, nil, ""},
		{"loopback connect: net loopback", nil,
			[]report.Event{netEv(syscalls.KindConnect, policy.RuleNetDeny, "127.0.0.1")},
			[]string{"net: loopback"}, nil, ""},
		{"v4-mapped loopback: net loopback", nil,
			[]report.Event{netEv(syscalls.KindConnect, policy.RuleNetDeny, "::ffff:127.0.0.1")},
			[]string{"net: loopback"}, nil, ""},
		{"any other address: net allow", nil,
			[]report.Event{netEv(syscalls.KindConnect, policy.RuleNetDeny, "127.0.0.1"), netEv(syscalls.KindConnect, policy.RuleNetLoopback, "192.0.2.1")},
			[]string{"net: allow"}, nil, ""},
		{"read outside read roots: that path", &policy.Config{WriteRoots: []string{"/srv/sbx"}, ReadRoots: []string{"/data"}},
			[]report.Event{ev(syscalls.KindRead, policy.RuleReadNotAllowed, p("/etc/ssl/cert.pem", "/etc/ssl/cert.pem", true, false))},
			[]string{"read:", `  - "/data"`, `  - "/etc/ssl/cert.pem"`}, nil, ""},
		// The program under audit chooses what it reads: reading a denied
		// secret must not take it out of the suggestion (a red team
		// stripped ~/.ssh from deny_read this way).
		{"deny_read entry read: kept, with a note", &policy.Config{WriteRoots: []string{"/srv/sbx"}, DenyRead: []string{"/root/.ssh", "/srv/secret"}},
			[]report.Event{ev(syscalls.KindRead, policy.RuleDenyRead, p("/root/.ssh/id_rsa", "/root/.ssh/id_rsa", true, false))},
			[]string{"deny_read:", `  - "/root/.ssh"`, "    #   NOTE: the run tried to read here and was denied; the suggestion keeps it denied: remove this entry yourself only if the program must read it", `  - "/srv/secret"`}, []string{"left out"}, ""},
		{"signal outside the tree: not grantable", nil,
			[]report.Event{ev(syscalls.KindSignal, policy.RuleOutsideTree)},
			[]string{"# NOT GRANTABLE: no policy allows these; the program must not do them:"}, nil, "rule outside-tree"},
		{"a file at the top: not grantable", nil,
			[]report.Event{ev(syscalls.KindCreate, policy.RuleOutsideRoots, p("/x", "/x", false, false))},
			nil, []string{"\nwrite:"}, "would need the whole file system writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAggregator()
			a.begin(Source{Name: "r.json", Kind: "report", Policy: tc.base})
			for i := range tc.events {
				a.Event(&tc.events[i])
			}
			sg := Suggest(a.Summary())
			var b bytes.Buffer
			if err := sg.WriteYAML(&b); err != nil {
				t.Fatal(err)
			}
			y := b.String()
			for _, w := range tc.want {
				if !strings.Contains(y, w+"\n") {
					t.Errorf("no line %q in\n%s", w, y)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(y, w) {
					t.Errorf("%q in\n%s", w, y)
				}
			}
			if tc.ungrant != "" && (len(sg.Ungrantable) == 0 || !strings.Contains(sg.Ungrantable[0], tc.ungrant)) {
				t.Errorf("ungrantable %q, want %q", sg.Ungrantable, tc.ungrant)
			}
		})
	}
}

// TestSuggestCommentsStayComments: text the traced program chose (a file
// name with a newline) cannot end a comment and add a key to the policy.
func TestSuggestCommentsStayComments(t *testing.T) {
	a := NewAggregator()
	a.begin(Source{Name: "r.json", Kind: "report"})
	e := report.Event{Decision: report.Audit, Program: "x\nnet: allow", Syscall: "openat", Kind: syscalls.KindCreate, Rule: policy.RuleOutsideRoots,
		Paths: []policy.Path{{Given: "/srv/a\nallow_exec: [/bin/sh]", Resolved: "/srv/a\nallow_exec: [/bin/sh]"}}}
	a.Event(&e)
	var b bytes.Buffer
	Suggest(a.Summary()).WriteYAML(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "net:") && line != "net: deny" || strings.HasPrefix(line, "allow_exec") {
			t.Errorf("program-chosen text became a key: %q\n%s", line, b.String())
		}
	}
}

// TestRenderEscapes: names the traced program chose (its argv, a file
// name) are text in every format: no markup in html, no closed code span or
// table cell in markdown, no terminal escape in text.
func TestRenderEscapes(t *testing.T) {
	a := NewAggregator()
	a.begin(Source{Name: "t.jsonl", Kind: "trace"})
	evil := "<script>alert(1)</script>`|\x1b[2J"
	e := report.Event{Time: time.Unix(1, 0), Decision: report.Deny, Pid: 7, Program: evil, Argv: []string{evil}, Syscall: "openat",
		Kind: syscalls.KindCreate, Rule: policy.RuleOutsideRoots, Reason: evil,
		Paths: []policy.Path{{Given: evil, Resolved: "/srv/" + evil}}}
	a.Event(&e)
	s := a.Summary()
	for _, f := range Formats {
		var b bytes.Buffer
		if err := Render(&b, s, f, Options{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, "\x1b") {
			t.Errorf("%s: a terminal escape got through", f)
		}
		if f == "html" && (strings.Contains(out, "<script") || strings.Contains(out, "</script")) {
			t.Errorf("html: markup got through")
		}
		if f == "markdown" {
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "alert(1)") && strings.HasPrefix(line, "|") && !strings.Contains(line, "\\|") {
					t.Errorf("markdown: a | in a cell is not escaped: %s", line)
				}
			}
		}
	}
}
