package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// TestNotice also checks the summary (Summarize): the notice's head,
// what, the call and by whom, without the reason or the resolved paths;
// the notice is "tracecell: " and Detailed, which starts with the summary
// and the reason.
// TestNoticeDeepPath: a relative path from a cwd deeper than PATH_MAX
// resolves to a path of up to 1 MiB; a notice shows its two ends and how
// much it left out, the report keeps it whole (red team, round 45: 150 MB
// of notices for 300 denials).
func TestNoticeDeepPath(t *testing.T) {
	resolved := "/s/" + strings.Repeat("d/", 200000) + "f"
	reason := "cannot name " + resolved
	e := Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "chmod", Kind: syscalls.KindChmod, Reason: reason,
		Paths: []policy.Path{{Given: "f", Resolved: resolved}}}
	n := e.Notice()
	if len(n) > 3*maxShown {
		t.Fatalf("notice of %d bytes", len(n))
	}
	for _, want := range []string{`chmod("f") by p[1]: cannot name /s/d/d/`, "bytes not shown)…", "d/d/f]", "[f -> /s/d/"} {
		if !strings.Contains(n, want) {
			t.Errorf("notice lacks %q: %.300s", want, n)
		}
	}
	if got := elide(resolved); !strings.Contains(got, "…("+strconv.Itoa(len(resolved)-maxShown/2-maxShown/4)+" bytes not shown)…") {
		t.Errorf("elide does not count the bytes left out: %.100s", got[maxShown/2-10:])
	}
	b, err := json.Marshal(e)
	if err != nil || !strings.Contains(string(b), resolved) {
		t.Errorf("the report's event lost the path (%v)", err)
	}
}

func TestNotice(t *testing.T) {
	pid := 77
	for _, tc := range []struct {
		name    string
		ev      Event
		want    string
		summary string
	}{
		{"write", Event{Decision: Deny, Pid: 4242, Program: "python3", Syscall: "openat", Kind: syscalls.KindWrite,
			Flags: "O_WRONLY|O_CREAT|O_TRUNC", Reason: "outside writable roots (/srv/sbx)",
			Paths: []policy.Path{{Given: "/etc/hosts", Resolved: "/etc/hosts"}}},
			`tracecell: blocked write: openat("/etc/hosts", O_WRONLY|O_CREAT|O_TRUNC) by python3[4242]: outside writable roots (/srv/sbx)`,
			`blocked write: openat("/etc/hosts", O_WRONLY|O_CREAT|O_TRUNC) by python3[4242]`},
		{"relative", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "unlinkat", Kind: syscalls.KindDelete, Reason: "r",
			Paths: []policy.Path{{Given: "../x", Resolved: "/a/x"}}},
			`tracecell: blocked delete: unlinkat("../x") by p[1]: r [../x -> /a/x]`,
			`blocked delete: unlinkat("../x") by p[1]`},
		{"audit", Event{Decision: Audit, Pid: 1, Program: "p", Syscall: "mkdir", Kind: syscalls.KindCreate, Reason: "r",
			Paths: []policy.Path{{Given: "/x", Resolved: "/x"}}},
			`tracecell: would block create: mkdir("/x") by p[1]: r`,
			`would block create: mkdir("/x") by p[1]`},
		{"connect", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "connect", Kind: syscalls.KindConnect, Family: "inet", Address: "10.0.0.1", Port: 80, Reason: "r"},
			`tracecell: blocked connect: connect(inet 10.0.0.1 port 80) by p[1]: r`,
			`blocked connect: connect(inet 10.0.0.1 port 80) by p[1]`},
		{"signal", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "kill", Kind: syscalls.KindSignal, TargetPid: &pid, Signal: "SIGTERM", Reason: "r"},
			`tracecell: blocked signal: kill(pid 77, SIGTERM) by p[1]: r`,
			`blocked signal: kill(pid 77, SIGTERM) by p[1]`},
		{"null path", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "utimensat", Kind: syscalls.KindWrite, Reason: "r",
			Paths: []policy.Path{{Null: true, Resolved: "/etc/hosts"}}},
			`tracecell: blocked write: utimensat(NULL) by p[1]: r [NULL -> /etc/hosts]`,
			`blocked write: utimensat(NULL) by p[1]`},
		{"newline", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "mkdir", Kind: syscalls.KindCreate, Reason: "r",
			Paths: []policy.Path{{Given: "/a\nb", Resolved: "/a\nb"}}},
			`tracecell: blocked create: mkdir("/a\nb") by p[1]: r`,
			`blocked create: mkdir("/a\nb") by p[1]`},
		// The tree names its files, programs and sockets: a resolved path
		// in the brackets, a program's name and a socket's path must not
		// reach the operator's terminal as escapes, a carriage return or a
		// line break of YAML and other readers (U+2028). A red team had
		// "would block" lines print them raw.
		{"escapes", Event{Decision: Audit, Pid: 1, Program: "p\x1b]0;T\x07", Syscall: "openat", Kind: syscalls.KindWrite, Reason: "r",
			Paths: []policy.Path{{Given: "x\x1b[31m\u2028y\rZ", Resolved: "/u/x\x1b[31m\u2028y\rZ"}}},
			`tracecell: would block write: openat("x\x1b[31m\u2028y\rZ") by p\x1b]0;T\x07[1]: r [x\x1b[31m\u2028y\rZ -> /u/x\x1b[31m\u2028y\rZ]`,
			`would block write: openat("x\x1b[31m\u2028y\rZ") by p\x1b]0;T\x07[1]`},
		{"socket", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "connect", Kind: syscalls.KindConnect, Family: "unix", Address: "/s\u009b2J\u202e", Reason: "r"},
			`tracecell: blocked connect: connect(unix /s\u009b2J\u202e) by p[1]: r`,
			`blocked connect: connect(unix /s\u009b2J\u202e) by p[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ev.Notice(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if got := tc.ev.Summarize(); got != tc.summary {
				t.Errorf("summary %s, want %s", got, tc.summary)
			}
			if d := tc.ev.Detailed(); tc.want != "tracecell: "+d || !strings.HasPrefix(d, tc.summary+": "+tc.ev.Reason) {
				t.Errorf("Detailed %q: not the notice without its prefix, or not the summary and the reason first", d)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	r := &Report{Version: 1, Command: []string{"x"}, Denials: nil}
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if d, ok := m["denials"].([]any); !ok || len(d) != 0 {
		t.Errorf("denials = %v, want []", m["denials"])
	}
	if err := r.WriteFile(filepath.Join(t.TempDir(), "no", "dir", "r.json")); err == nil || !strings.Contains(err.Error(), "r.json") {
		t.Errorf("unwritable path: %v", err)
	}
}

// TestWriteTargetDirSwapped: the report goes into the directory OpenTarget
// opened, even after that directory was renamed and a symlink put in its place.
func TestWriteTargetDirSwapped(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tg, err := OpenTarget(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if err := (&Report{Version: 1}).WriteTarget(tg); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through the symlink: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(dir+".moved", "r.json")); !strings.Contains(string(b), `"version": 1`) {
		t.Errorf("report in the original directory: %q", b)
	}
}

// spelled is the paths spellings gives tries from to to-1.
func spelled(from, to int) []string {
	var ps []string
	for i := from; i < to; i++ {
		ps = append(ps, "/usr/"+strings.Repeat("./", i)+"bin/ls")
	}
	return ps
}

// spellings is n refused execs of /usr/bin/ls by process 10, each path
// spelled differently.
func spellings(exec func(int, string, string) Event, n int) []Event {
	var evs []Event
	for _, p := range spelled(0, n) {
		evs = append(evs, exec(10, p, "/usr/bin/ls"))
	}
	return evs
}

func TestGroupExecWalks(t *testing.T) {
	exec := func(pid int, given, resolved string) Event {
		return Event{Decision: Deny, Pid: pid, Tid: pid, Program: "python3", Syscall: "execve", Kind: syscalls.KindExec,
			Reason: "exec of " + resolved + " not allowed", Paths: []policy.Path{{Role: "program", Given: given, Resolved: resolved}}}
	}
	write := func(pid int) Event {
		return Event{Decision: Deny, Pid: pid, Tid: pid, Syscall: "openat", Kind: syscalls.KindWrite, Paths: []policy.Path{{Given: "/etc/x", Resolved: "/etc/x"}}}
	}
	audit := func(e Event) Event { e.Decision = Audit; return e }
	thread := func(e Event, tid int) Event { e.Tid = tid; return e }
	uname1, uname2 := exec(10, "/usr/bin/uname", "/usr/bin/uname"), exec(10, "/bin/uname", "/usr/bin/uname")
	for _, tc := range []struct {
		name string
		in   []Event
		want [][]string // per event out: the paths tried (one entry: no Tried)
	}{
		{"one walk", []Event{uname1, uname2}, [][]string{{"/usr/bin/uname", "/bin/uname"}}},
		{"three directories", []Event{exec(10, "/usr/local/bin/uname", "/usr/local/bin/uname"), uname1, uname2},
			[][]string{{"/usr/local/bin/uname", "/usr/bin/uname", "/bin/uname"}}},
		{"another process between", []Event{uname1, write(11), exec(12, "/usr/bin/ls", "/usr/bin/ls"), uname2},
			[][]string{{"/usr/bin/uname", "/bin/uname"}, {"/etc/x"}, {"/usr/bin/ls"}}},
		{"another call of the process between", []Event{uname1, write(10), uname2},
			[][]string{{"/usr/bin/uname"}, {"/etc/x"}, {"/bin/uname"}}},
		{"two processes", []Event{uname1, exec(11, "/bin/uname", "/usr/bin/uname")}, [][]string{{"/usr/bin/uname"}, {"/bin/uname"}}},
		{"two programs", []Event{uname1, exec(10, "/bin/ls", "/usr/bin/ls")}, [][]string{{"/usr/bin/uname"}, {"/bin/ls"}}},
		{"two walks of one name", []Event{uname1, uname2, uname1, uname2},
			[][]string{{"/usr/bin/uname", "/bin/uname"}, {"/usr/bin/uname", "/bin/uname"}}},
		{"deny then audit", []Event{uname1, audit(uname2)}, [][]string{{"/usr/bin/uname"}, {"/bin/uname"}}},
		{"audits", []Event{audit(uname1), audit(uname2)}, [][]string{{"/usr/bin/uname", "/bin/uname"}}},
		{"two threads", []Event{uname1, thread(uname2, 13)}, [][]string{{"/usr/bin/uname"}, {"/bin/uname"}}},
		{"fexecve (no path given)", []Event{exec(10, "", "/usr/bin/uname"), exec(10, "", "/usr/bin/uname")},
			[][]string{{""}, {""}}},
		// An endless "search" (one name by ever new spellings) is cut
		// into walks of maxWalkTries (red team, round 44).
		{"walks of at most 64 tries", spellings(exec, 150), [][]string{spelled(0, 64), spelled(64, 128), spelled(128, 150)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(tc.in)
			got := GroupExecWalks(tc.in)
			if after, _ := json.Marshal(tc.in); string(after) != string(in) {
				t.Fatalf("the input was changed:\n%s\n%s", in, after)
			}
			check := func(got []Event) {
				t.Helper()
				var paths [][]string
				for _, e := range got {
					var ps []string
					for _, p := range e.Tried {
						ps = append(ps, p.Given)
					}
					if len(e.Tried) == 0 {
						ps = []string{e.Paths[0].Given}
					} else if e.Tried[0].Given != e.Paths[0].Given {
						t.Errorf("Tried starts with %q, the event's path is %q", e.Tried[0].Given, e.Paths[0].Given)
					}
					paths = append(paths, ps)
				}
				if g, w := fmt.Sprint(paths), fmt.Sprint(tc.want); g != w {
					t.Fatalf("got %s, want %s", g, w)
				}
			}
			check(got)
			check(GroupExecWalks(got)) // grouping a grouped list changes nothing
			// Continues (the notices) agrees with Add (the lists).
			var w ExecWalks
			n := 0
			for i := range tc.in {
				if !w.Continues(&tc.in[i]) {
					n++
				}
			}
			if n != len(tc.want) {
				t.Errorf("Continues: %d notices, want %d", n, len(tc.want))
			}
		})
	}
	t.Run("notice", func(t *testing.T) {
		g := GroupExecWalks([]Event{uname1, uname2})
		want := `tracecell: blocked exec: execve("/usr/bin/uname") by python3[10]: exec of /usr/bin/uname not allowed (PATH search tried "/usr/bin/uname", "/bin/uname")`
		if got := g[0].Notice(); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// TestEventJSONSummary: a denial's or audit's JSON carries its summary,
// rendered when encoded (a stale one is replaced); an allowed or lifecycle
// event's carries none; decoding keeps it; the rest is the plain fields.
func TestEventJSONSummary(t *testing.T) {
	deny := Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "mkdir", Kind: syscalls.KindCreate, Rule: policy.RuleOutsideRoots, Reason: "r",
		Paths: []policy.Path{{Given: "/x", Resolved: "/x"}}, Summary: "stale"}
	for _, tc := range []struct {
		name string
		ev   Event
		want string // "" for no summary key
	}{
		{"deny", deny, `blocked create: mkdir("/x") by p[1]`},
		{"audit", func() Event { e := deny; e.Decision = Audit; return e }(), `would block create: mkdir("/x") by p[1]`},
		{"allow", Event{Decision: Allow, Pid: 1, Syscall: "mkdir", Kind: syscalls.KindCreate, Rule: policy.RuleInsideRoot}, ""},
		{"lifecycle", Event{Decision: Allow, Pid: 1, Syscall: "fork", Kind: syscalls.KindProcess, Rule: RuleLifecycle, ChildPid: 2}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			s, ok := m["summary"]
			if tc.want == "" {
				if ok {
					t.Fatalf("summary %v in %s, want none", s, b)
				}
			} else if s != tc.want {
				t.Fatalf("summary %v in %s, want %q", s, b, tc.want)
			}
			if m["rule"] != string(tc.ev.Rule) || m["decision"] != tc.ev.Decision || m["syscall"] != tc.ev.Syscall {
				t.Errorf("fields lost: %s", b)
			}
			var back Event
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Summary != tc.want || back.Rule != tc.ev.Rule {
				t.Errorf("decoded summary %q rule %q, want %q %q", back.Summary, back.Rule, tc.want, tc.ev.Rule)
			}
		})
	}
}
