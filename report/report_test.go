package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

func TestNotice(t *testing.T) {
	pid := 77
	for _, tc := range []struct {
		name string
		ev   Event
		want string
	}{
		{"write", Event{Decision: Deny, Pid: 4242, Program: "python3", Syscall: "openat", Kind: syscalls.KindWrite,
			Flags: "O_WRONLY|O_CREAT|O_TRUNC", Reason: "outside writable roots (/srv/sbx)",
			Paths: []policy.Path{{Given: "/etc/hosts", Resolved: "/etc/hosts"}}},
			`tracecell: blocked write: openat("/etc/hosts", O_WRONLY|O_CREAT|O_TRUNC) by python3[4242]: outside writable roots (/srv/sbx)`},
		{"relative", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "unlinkat", Kind: syscalls.KindDelete, Reason: "r",
			Paths: []policy.Path{{Given: "../x", Resolved: "/a/x"}}},
			`tracecell: blocked delete: unlinkat("../x") by p[1]: r [../x -> /a/x]`},
		{"audit", Event{Decision: Audit, Pid: 1, Program: "p", Syscall: "mkdir", Kind: syscalls.KindCreate, Reason: "r",
			Paths: []policy.Path{{Given: "/x", Resolved: "/x"}}},
			`tracecell: would block create: mkdir("/x") by p[1]: r`},
		{"connect", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "connect", Kind: syscalls.KindConnect, Family: "inet", Address: "10.0.0.1", Port: 80, Reason: "r"},
			`tracecell: blocked connect: connect(inet 10.0.0.1 port 80) by p[1]: r`},
		{"signal", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "kill", Kind: syscalls.KindSignal, TargetPid: &pid, Signal: "SIGTERM", Reason: "r"},
			`tracecell: blocked signal: kill(pid 77, SIGTERM) by p[1]: r`},
		{"newline", Event{Decision: Deny, Pid: 1, Program: "p", Syscall: "mkdir", Kind: syscalls.KindCreate, Reason: "r",
			Paths: []policy.Path{{Given: "/a\nb", Resolved: "/a\nb"}}},
			`tracecell: blocked create: mkdir("/a\nb") by p[1]: r`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ev.Notice(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
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
