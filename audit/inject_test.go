package audit

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// hostile are text a traced program can choose (a file name, its own
// name) meant to end a line of a policy file or of a report: YAML ends a
// line at \n, \r, U+0085 (NEL), U+2028 (LS) and U+2029 (PS). The first
// three are the red team's: files the program creates in its working
// directory (a relative path, so the resolved one is printed too).
var hostile = []string{
	"y\u2029  - \"\\x2fetc\" #",
	"w\u0085  - \"\\x2fvar\" #",
	"z\u2028allow_exec: [\"\\x2fusr\\x2fsbin\"] #",
	"v\r  - \"\\x2froot\"",
	"u\u202e\u009b31m\x1b]0;T\x07",
}

// decide is what the policy file at f allows: built by config as
// `tracecell run --policy f` builds it.
func decide(t *testing.T, f string) *policy.Policy {
	t.Helper()
	st, err := config.LoadFile(f)
	if err != nil {
		t.Fatalf("the suggested policy does not load: %v", err)
	}
	plan, err := config.Build(st, []string{"/bin/true"}, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatalf("the suggested policy does not build: %v", err)
	}
	p, err := policy.New(plan.Policy)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unescape undoes the backslashes of exec patterns (each escapes the
// character after it).
func unescape(l []string) []string {
	var out []string
	for _, v := range l {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			b.WriteByte(v[i])
		}
		out = append(out, b.String())
	}
	return out
}

func execAllowed(p *policy.Policy, prog string) bool {
	return p.Decide(&policy.Op{Kind: syscalls.KindExec, Syscall: "execve", Paths: []policy.Path{{Role: "program", Given: prog, Resolved: prog}}}, nil).Allow
}

// TestSuggestInjection: whatever names the traced program chose, the
// suggested policy has the keys and the list items the suggestion means
// and no other (yaml.v3, the parser config uses, reads it), every grant
// reads back as the exact path, each comment stays one comment line, and
// the policy config builds from it allows no exec the run did not need.
func TestSuggestInjection(t *testing.T) {
	// The red team's files alone (with the old writer the file parsed,
	// with keys and items added), then every name everywhere.
	t.Run("files", func(t *testing.T) { suggestInjection(t, hostile[:3], false) })
	t.Run("everywhere", func(t *testing.T) { suggestInjection(t, hostile, true) })
}

func suggestInjection(t *testing.T, names []string, everywhere bool) {
	// A short directory: the paths in the reasons are elided past
	// pathBudget bytes, and the injected text must be in them.
	tmp, err := os.MkdirTemp("", "s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	out := filepath.Join(tmp, "out")
	bin := filepath.Join(tmp, "bin")
	os.MkdirAll(out, 0o755)
	os.MkdirAll(bin, 0o755)
	var events []report.Event
	wantWrite := []string{tmp + "/a", out}
	var wantExec, wantRead []string
	for i, h := range names {
		prog := "python3"
		if everywhere {
			prog = h
		}
		ev := func(kind syscalls.Kind, rule policy.Rule, given, resolved string) report.Event {
			return report.Event{Time: time.Unix(int64(i), 0), Decision: report.Audit, Pid: 10 + i, Program: prog, Syscall: "openat", Kind: kind, Rule: rule,
				Reason: "because " + h, Paths: []policy.Path{{Role: "path", Given: given, Resolved: resolved}}}
		}
		events = append(events, ev(syscalls.KindCreate, policy.RuleOutsideRoots, h, filepath.Join(out, h)))
		if !everywhere {
			continue
		}
		// A file created in a directory named h.
		dir := filepath.Join(tmp, "d", h)
		events = append(events, ev(syscalls.KindCreate, policy.RuleOutsideRoots, h+"/f", filepath.Join(dir, "f")))
		wantWrite = append(wantWrite, dir)
		// A program named h, which exists (config resolves allow_exec).
		p := filepath.Join(bin, h)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		e := ev(syscalls.KindExec, policy.RuleExecNotAllowed, h, p)
		e.Syscall = "execve"
		e.Paths[0].Role = "program"
		events = append(events, e)
		wantExec = append(wantExec, p)
		events = append(events, ev(syscalls.KindRead, policy.RuleReadNotAllowed, h, "/data/"+h))
		wantRead = append(wantRead, "/data/"+h)
		n := ev(syscalls.KindConnect, policy.RuleNetDeny, "", "")
		n.Syscall, n.Family, n.Address, n.Port, n.Paths = "connect", "inet", "127.0.0.1", 80, nil
		events = append(events, n)
		events = append(events, ev(syscalls.KindSignal, policy.RuleOutsideTree, h, h))
	}
	src := Source{Name: "r.json", Kind: "report", Policy: &policy.Config{WriteRoots: []string{tmp + "/a"}}}
	wantKeys := []string{"mode", "net", "scratch", "write"}
	if everywhere {
		src.Name = "r\u2028net: allow.json"
		src.Policy.ReadRoots = []string{}
		wantKeys = []string{"allow_exec", "mode", "net", "read", "scratch", "write"}
	}
	a := NewAggregator()
	a.begin(src)
	for i := range events {
		a.Event(&events[i])
	}
	var b bytes.Buffer
	if err := Suggest(a.Summary()).WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	y := b.String()
	f := filepath.Join(tmp, "p.yaml")
	os.WriteFile(f, b.Bytes(), 0o644)

	for _, r := range strings.TrimSuffix(y, "\n") {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Errorf("a character that is not printable, %U, is in the policy:\n%s", r, y)
		}
	}
	for i, line := range strings.Split(y, "\n") {
		if strings.Contains(line, "needed by") && !strings.HasPrefix(strings.TrimLeft(line, " "), "#") {
			t.Errorf("line %d: a reason outside a comment: %q", i+1, line)
		}
	}

	var doc map[string]any
	if err := yaml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("yaml: %v\n%s", err, y)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Errorf("keys %q, want %q\n%s", keys, wantKeys, y)
	}
	st, err := config.LoadFile(f)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	for _, c := range []struct {
		key       string
		got, want []string
	}{{"write", st.Write, wantWrite}, {"allow_exec", unescape(st.AllowExec), wantExec}, {"read", st.Read, wantRead}} {
		slices.Sort(c.got)
		slices.Sort(c.want)
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: config reads %q, want %q\n%s", c.key, c.got, c.want, y)
		}
	}
	if wantNet := map[bool]string{false: "deny", true: "loopback"}[everywhere]; st.Net != wantNet || st.Mode != "enforce" {
		t.Errorf("config reads net %q, mode %q; want net %s", st.Net, st.Mode, wantNet)
	}

	// What `run --policy` would allow: each program the run executed, not
	// /usr/sbin/nologin (which the first name tried to add).
	p := decide(t, f)
	for _, prog := range wantExec {
		if !execAllowed(p, prog) {
			t.Errorf("the suggested policy denies %q, which the run executed", prog)
		}
	}
	for _, prog := range []string{"/usr/sbin/nologin", "/usr/bin/id"} {
		if execAllowed(p, prog) {
			t.Errorf("the suggested policy allows %s", prog)
		}
	}
}

// TestRenderInjection: a program's name (it chooses it: argv[0], comm)
// with carriage returns, markdown and an unterminated HTML comment, or
// terminal escapes (OSC, CSI, C1 CSI, a bidi override), changes no
// structure of the text or markdown report: no control character is
// printed raw, every section heading is there once, the denied connect is
// still listed in both tables, and no HTML or line break comes out of a
// table cell.
func TestRenderInjection(t *testing.T) {
	names := []string{
		"py\r\r**Nothing was denied.** The run was clean.\r\r<!--",
		"x\x1b]0;TITLE\x07\x1b[31m\u009b2J\u202eevil\u2028<b>&#x202E;</b>|`",
	}
	a := NewAggregator()
	a.begin(Source{Name: "t.jsonl", Kind: "trace"})
	for i, n := range names {
		pid := 20 + i
		at := time.Unix(int64(i), 0)
		for _, e := range []report.Event{
			{Time: at, Decision: report.Allow, Pid: pid, Program: n, Argv: []string{n}, Syscall: "openat", Kind: syscalls.KindCreate,
				Rule: policy.RuleInsideRoot, Paths: []policy.Path{{Role: "path", Given: "out.txt", Resolved: "/srv/sbx/out.txt"}}},
			{Time: at, Decision: report.Deny, Pid: pid, Program: n, Syscall: "connect", Kind: syscalls.KindConnect,
				Rule: policy.RuleNetDeny, Family: "inet", Address: "192.0.2.1", Port: 53, Reason: "network access is not allowed (--net deny) for " + n},
			{Time: at, Decision: report.Deny, Pid: pid, Program: n, Syscall: "kill", Kind: syscalls.KindSignal,
				Rule: policy.RuleOutsideTree, TargetPid: &pid, Signal: "SIGTERM", Reason: "outside the tree"},
		} {
			a.Event(&e)
		}
	}
	s := a.Summary()
	for _, format := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := Render(&b, s, format, Options{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, r := range out {
			if r != '\n' && !unicode.IsPrint(r) {
				t.Errorf("%s: %U printed raw", format, r)
			}
		}
		lines := strings.Split(out, "\n")
		headings := []string{"Process tree", "Denied and would-be-denied operations, by rule", "Files changed (allowed)", "Network", "Signals and process operations"}
		prefix := ""
		if format == "markdown" {
			headings = []string{"## tracecell report", "Process tree", "Denied and would-be-denied operations", "Files changed (allowed)", "Network", "Signals and process operations"}
			prefix = "### "
		}
		for _, h := range headings {
			if !strings.HasPrefix(h, "#") {
				h = prefix + h
			}
			if n := slices.Index(lines, h); n < 0 || slices.Index(lines[n+1:], h) >= 0 {
				t.Errorf("%s: heading %q not there exactly once:\n%s", format, h, out)
			}
		}
		connects := 0
		for _, l := range lines {
			if strings.Contains(l, "192.0.2.1:53") && strings.Contains(l, "denied") {
				connects++
			}
		}
		if connects != 2*len(names) { // the denials and the network section
			t.Errorf("%s: %d lines with a denied connect, want %d:\n%s", format, connects, 2*len(names), out)
		}
		if format == "markdown" {
			checkMarkdownStructure(t, lines)
		}
	}
}

// checkMarkdownStructure: outside the fenced code block, no line starts
// raw HTML (an HTML block swallows what follows), no '<' outside a code
// span is unescaped, and each table row has its header's cells.
// codeSpan reads the markdown code span that starts at l[j] (a run of n
// backticks to the next run of n): its content and the index after it; ok
// is false when it is not closed.
func codeSpan(l string, j int) (code string, next int, ok bool) {
	n := j
	for n < len(l) && l[n] == '`' {
		n++
	}
	fence := l[j:n]
	end := strings.Index(l[n:], fence)
	if end < 0 {
		return "", 0, false
	}
	return l[n : n+end], n + end + len(fence), true
}

func checkMarkdownStructure(t *testing.T, lines []string) {
	t.Helper()
	fenced, cells := false, 0
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(l, " "), "<") {
			t.Errorf("line %d starts raw HTML: %q", i+1, l)
		}
		// Drop the code spans (a run of n backticks to the next run of n).
		var rest strings.Builder
		for j := 0; j < len(l); {
			if l[j] == '\\' && j+1 < len(l) {
				rest.WriteString(l[j : j+2])
				j += 2
				continue
			}
			if l[j] != '`' {
				rest.WriteByte(l[j])
				j++
				continue
			}
			_, next, ok := codeSpan(l, j)
			if !ok {
				t.Errorf("line %d: an unclosed code span: %q", i+1, l)
				break
			}
			rest.WriteString("CODE")
			j = next
		}
		text := rest.String()
		for j := 0; j < len(text); j++ {
			if text[j] == '\\' {
				j++
				continue
			}
			if text[j] == '<' {
				t.Errorf("line %d: '<' outside a code span: %q", i+1, l)
			}
		}
		if !strings.HasPrefix(l, "|") {
			cells = 0
			continue
		}
		n := 0
		for j := 0; j < len(l); j++ {
			if l[j] == '\\' {
				j++
			} else if l[j] == '|' {
				n++
			}
		}
		if cells == 0 {
			cells = n
		} else if n != cells {
			t.Errorf("line %d: %d cell separators, the table's header has %d: %q", i+1, n, cells, l)
		}
	}
}

// TestSuggestExecExact: an exec grant allows the file the run executed and
// nothing else. Execs of directories (which the kernel fails), of a file
// in a directory the tree can write (a writable root, the recorded
// sandbox, the default scratch directory) are left out with the reason; a
// program whose name holds pattern characters is escaped. Checked on the
// policy config builds from the suggestion, as run --policy would.
func TestSuggestExecExact(t *testing.T) {
	tmp := t.TempDir()
	sbx := filepath.Join(tmp, "sbx")
	opt := filepath.Join(tmp, "opt")
	for _, d := range []string{sbx, opt, filepath.Join(tmp, "bin"), filepath.Join(tmp, "s2"), filepath.Join(tmp, "out")} {
		os.MkdirAll(d, 0o755)
	}
	exe := func(p string) string {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	star := exe(filepath.Join(sbx, "*"))
	glob := exe(filepath.Join(opt, "a*b"))
	others := []string{exe(filepath.Join(opt, "axb")), exe(filepath.Join(opt, "a[x]b"))}
	bracket := exe(filepath.Join(opt, "[ab]?\\"))
	others = append(others, exe(filepath.Join(opt, "a?\\")))
	// Programs in the recorded run's sandbox, a suggested writable root and
	// the default scratch directory: they exist, so that config would
	// allow them if they were suggested.
	inS2, inOut := exe(filepath.Join(tmp, "s2/p")), exe(filepath.Join(tmp, "out/p"))
	refused := map[string]string{
		"/usr/sbin":               "a directory on this host",
		filepath.Join(tmp, "bin"): "a directory on this host",
		star:                      "under " + sbx + ", which the tree can write",
		inS2:                      "under " + filepath.Join(tmp, "s2") + ", which the tree can write",
		inOut:                     "under " + filepath.Join(tmp, "out") + ", which the tree can write",
	}
	denied := []string{"/usr/sbin/nologin", filepath.Join(tmp, "bin/x"), filepath.Join(sbx, "x"), star, inS2, inOut}
	if shm, err := os.CreateTemp("/dev/shm", "tracecell-test-"); err == nil {
		shm.Close()
		t.Cleanup(func() { os.Remove(shm.Name()) })
		inShm := exe(shm.Name())
		refused[inShm] = "under /dev/shm, which the tree can write"
		denied = append(denied, inShm)
	}
	allowed := []string{glob, bracket, "/usr/bin/true"}
	var events []report.Event
	for _, prog := range append(slices.Collect(maps.Keys(refused)), allowed...) {
		events = append(events, report.Event{Time: time.Unix(1, 0), Decision: report.Audit, Pid: 10, Program: "sh", Syscall: "execve", Kind: syscalls.KindExec,
			Rule: policy.RuleExecNotAllowed, Paths: []policy.Path{{Role: "program", Given: prog, Resolved: prog}}})
	}
	// A write that makes tmp/out a suggested writable root.
	events = append(events, report.Event{Time: time.Unix(1, 0), Decision: report.Audit, Pid: 10, Program: "sh", Syscall: "openat", Kind: syscalls.KindCreate,
		Rule: policy.RuleOutsideRoots, Paths: []policy.Path{{Role: "path", Given: "f", Resolved: filepath.Join(tmp, "out/f")}}})
	_, y, f := suggestFromSource(t, Source{Name: "r.json", Kind: "report", Sandbox: filepath.Join(tmp, "s2"), Policy: &policy.Config{WriteRoots: []string{sbx}}}, events)
	for prog, why := range refused {
		if !strings.Contains(y, "  # NOT SUGGESTED: "+yamlQuote(prog)+": "+why) {
			t.Errorf("%s: no NOT SUGGESTED comment saying %q in\n%s", prog, why, y)
		}
	}
	p := decide(t, f)
	for _, prog := range allowed {
		if !execAllowed(p, prog) {
			t.Errorf("the suggested policy denies %s, which the run executed:\n%s", prog, y)
		}
	}
	for _, prog := range append(others, denied...) {
		if execAllowed(p, prog) {
			t.Errorf("the suggested policy allows %s:\n%s", prog, y)
		}
	}
}
