package audit

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// suggestFrom is the suggestion (and its YAML, written to a file) learned
// from a report of a run under base that recorded events.
func suggestFrom(t *testing.T, base *policy.Config, events []report.Event) (*Suggestion, string, string) {
	t.Helper()
	return suggestFromSource(t, Source{Name: "r.json", Kind: "report", Policy: base}, events)
}

// suggestFromSource is suggestFrom for a source described in full (its
// sandbox, its kind).
func suggestFromSource(t *testing.T, src Source, events []report.Event) (*Suggestion, string, string) {
	t.Helper()
	a := NewAggregator()
	a.begin(src)
	for i := range events {
		a.Event(&events[i])
	}
	sg := Suggest(a.Summary())
	var b bytes.Buffer
	if err := sg.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return sg, b.String(), f
}

func auditEv(kind syscalls.Kind, rule policy.Rule, p policy.Path) report.Event {
	return report.Event{Time: time.Unix(1, 0), Decision: report.Audit, Pid: 10, Program: "python3", Syscall: "openat", Kind: kind, Rule: rule, Paths: []policy.Path{p}}
}

func readAllowed(p *policy.Policy, res string) bool {
	return p.Decide(&policy.Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []policy.Path{{Role: "path", Given: res, Resolved: res, Exists: true}}}, nil).Allow
}

// TestSuggestReadDirs: a read-restricted run that opened a directory (to
// list it: os.listdir("/"), a pyenv shim opening /home) gets no read root
// for it, which would make everything below it readable; the files it read
// are granted one by one. Checked on the policy config builds from the
// suggestion, as run --policy would.
func TestSuggestReadDirs(t *testing.T) {
	tmp := t.TempDir()
	rd, d := filepath.Join(tmp, "rd"), filepath.Join(tmp, "d")
	for _, x := range []string{rd, d} {
		os.MkdirAll(x, 0o755)
	}
	file, secret := filepath.Join(tmp, "f.txt"), filepath.Join(d, "secret")
	os.WriteFile(file, []byte("x"), 0o644)
	os.WriteFile(secret, []byte("x"), 0o644)
	dir := func(p string, isDir bool) policy.Path {
		return policy.Path{Role: "path", Given: p, Resolved: p, Exists: true, IsDir: isDir}
	}
	events := []report.Event{
		auditEv(syscalls.KindRead, policy.RuleReadNotAllowed, dir("/", true)),
		auditEv(syscalls.KindRead, policy.RuleReadNotAllowed, dir(d, true)),
		// Recorded as a file, a directory on this host: not a root either.
		auditEv(syscalls.KindRead, policy.RuleReadNotAllowed, dir(tmp, false)),
		auditEv(syscalls.KindRead, policy.RuleReadNotAllowed, dir(file, false)),
	}
	// Opened as directories (a pyenv shim opens /etc/pyenv.d/exec/ with
	// O_DIRECTORY), not there: not roots, which would grant what appears
	// below them.
	odir := auditEv(syscalls.KindRead, policy.RuleReadNotAllowed, policy.Path{Role: "path", Given: filepath.Join(tmp, "no1"), Resolved: filepath.Join(tmp, "no1")})
	odir.Flags = "O_RDONLY|O_NONBLOCK|O_DIRECTORY|O_CLOEXEC"
	slash := auditEv(syscalls.KindRead, policy.RuleReadNotAllowed, policy.Path{Role: "path", Given: "no2/", Base: tmp, Resolved: filepath.Join(tmp, "no2")})
	events = append(events, odir, slash)
	sg, y, f := suggestFrom(t, &policy.Config{ReadRoots: []string{rd}}, events)
	for _, x := range []string{"/", d, tmp, filepath.Join(tmp, "no1"), filepath.Join(tmp, "no2")} {
		if !strings.Contains(y, "  # NOT SUGGESTED: "+yamlQuote(x)+": the run opened this directory (to list it); a read root grants everything below it") {
			t.Errorf("%s: no NOT SUGGESTED comment in\n%s", x, y)
		}
	}
	if len(sg.Read) != 7 {
		t.Errorf("read grants %+v, want the recorded root, the file and five left out", sg.Read)
	}
	p := decide(t, f)
	for _, x := range []string{file, filepath.Join(rd, "x")} {
		if !readAllowed(p, x) {
			t.Errorf("the suggested policy denies reading %s, which the run needed:\n%s", x, y)
		}
	}
	for _, x := range []string{secret, "/etc/shadow", filepath.Join(tmp, "other"), filepath.Join(tmp, "no1/x"), filepath.Join(tmp, "no2/x")} {
		if readAllowed(p, x) {
			t.Errorf("the suggested policy allows reading %s:\n%s", x, y)
		}
	}
}

// TestSuggestDeviceExact: an allow_device grant allows the device the run
// wrote and nothing else: a path that is not a character or block device
// on this host (a message queue, a file in /dev/shm) is left out with the
// reason, and a device whose name holds *?[\ is escaped, since
// allow_device values are path.Match patterns. Checked on the devices of
// the policy config builds from the suggestion.
func TestSuggestDeviceExact(t *testing.T) {
	file := func(p string) policy.Path { return policy.Path{Role: "path", Given: p, Resolved: p, Exists: true} }
	notDev := []string{"/dev/mqueue/q*"}
	shm, err := os.MkdirTemp("/dev/shm", "tracecell-test-")
	if err == nil {
		t.Cleanup(func() { os.RemoveAll(shm) })
		q := filepath.Join(shm, "q[a-z]")
		os.WriteFile(q, nil, 0o644)
		notDev = append(notDev, q)
	}
	var devs []string
	victims := []string{"/dev/mqueue/qvictim", filepath.Join(shm, "qx")}
	if err == nil && syscall.Mknod(filepath.Join(shm, "d*?"), syscall.S_IFCHR|0o600, 1<<8|3) == nil { // 1,3: /dev/null
		devs = append(devs, filepath.Join(shm, "d*?"))
		victims = append(victims, filepath.Join(shm, "dxy"))
	}
	var events []report.Event
	for _, x := range append(append([]string{}, notDev...), devs...) {
		events = append(events, auditEv(syscalls.KindWrite, policy.RuleOutsideRoots, file(x)))
	}
	_, y, f := suggestFrom(t, nil, events)
	for _, x := range notDev {
		if !strings.Contains(y, "  # NOT SUGGESTED: "+yamlQuote(x)+": not a character or block device on this host") {
			t.Errorf("%s: no NOT SUGGESTED comment in\n%s", x, y)
		}
	}
	st, err := config.LoadFile(f)
	if err != nil {
		t.Fatalf("the suggested policy does not load: %v\n%s", err, y)
	}
	plan, err := config.Build(st, []string{"/bin/true"}, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatalf("the suggested policy does not build: %v\n%s", err, y)
	}
	allows := func(res string) bool { // as policy.Policy.device decides
		for _, pat := range plan.Policy.Devices {
			if ok, _ := path.Match(pat, res); ok {
				return true
			}
		}
		return false
	}
	for _, x := range devs {
		if !allows(x) {
			t.Errorf("the suggested policy does not allow the device %s the run wrote:\n%s", x, y)
		}
	}
	for _, x := range append(victims, notDev...) {
		if allows(x) {
			t.Errorf("the suggested policy allows writing %s:\n%s", x, y)
		}
	}
}

// writeAllowed reports whether p lets the tree create res.
func writeAllowed(p *policy.Policy, res string) bool {
	return p.Decide(&policy.Op{Kind: syscalls.KindCreate, Syscall: "openat", Paths: []policy.Path{{Role: "path", Given: res, Resolved: res}}}, nil).Allow
}

// TestSuggestReadUnderWritable: a file the run read inside a directory the
// suggestion makes writable is no read root: the tree could replace it with
// a symlink to /, and config resolves read roots when the policy is loaded,
// so the next run could read every file (the re-test red team did).
func TestSuggestReadUnderWritable(t *testing.T) {
	tmp := t.TempDir()
	sbx, proj := filepath.Join(tmp, "sbx"), filepath.Join(tmp, "proj")
	for _, d := range []string{sbx, proj} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(proj, "cfg.txt")
	if err := os.WriteFile(cfg, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(tmp, "secret.txt")
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := &policy.Config{WriteRoots: []string{sbx}, ReadRoots: []string{sbx}}
	_, y, f := suggestFrom(t, base, []report.Event{
		auditEv(syscalls.KindRead, policy.RuleReadNotAllowed, policy.Path{Role: "path", Given: cfg, Resolved: cfg, Exists: true}),
		auditEv(syscalls.KindCreate, policy.RuleOutsideRoots, policy.Path{Role: "path", Given: "out.txt", Resolved: filepath.Join(proj, "out.txt")}),
	})
	if !strings.Contains(y, "# NOT SUGGESTED: "+yamlQuote(cfg)+": under "+proj+", which the tree can write") {
		t.Errorf("no NOT SUGGESTED read of %s in\n%s", cfg, y)
	}
	// What the enforced run could do: the file becomes a link to /.
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", cfg); err != nil {
		t.Fatal(err)
	}
	p := decide(t, f)
	if readAllowed(p, secret) || readAllowed(p, "/etc/hostname") {
		t.Errorf("with %s a link to /, the suggested policy reads %s or /etc/hostname:\n%s", cfg, secret, y)
	}
}

// TestSuggestTraceKeepsDeniedReads: a trace names no policy; the reads its
// run was denied by deny_read stay denied in the suggestion, and it says
// that the rest of the recorded policy is unknown.
func TestSuggestTraceKeepsDeniedReads(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	sg, y, f := suggestFromSource(t, Source{Name: "t.jsonl", Kind: "trace"}, []report.Event{
		auditEv(syscalls.KindRead, policy.RuleDenyRead, policy.Path{Role: "path", Given: secret, Resolved: secret, Exists: true}),
	})
	if len(sg.Incomplete) == 0 {
		t.Errorf("a trace-only suggestion does not say the recorded policy is unknown:\n%s", y)
	}
	if p := decide(t, f); readAllowed(p, secret) {
		t.Errorf("the suggested policy reads %s, which the run was denied by deny_read:\n%s", secret, y)
	}
}

// TestSuggestScratchKept: a recorded run without scratch directories
// (scratch: []) gets a suggestion without them, not the default /dev/shm.
func TestSuggestScratchKept(t *testing.T) {
	sbx := t.TempDir()
	_, y, f := suggestFrom(t, &policy.Config{WriteRoots: []string{sbx}, Scratch: []string{}}, nil)
	if p := decide(t, f); writeAllowed(p, "/dev/shm/tracecell-suggest-test") {
		t.Errorf("the suggested policy creates files in /dev/shm, which the recorded run had no scratch for:\n%s", y)
	}
}
