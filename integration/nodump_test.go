package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecUnreadableProgram: an allowed program whose file the tree may
// not read (mode 0111) makes its process not dumpable at the exec
// (would_dump), and a tracer without CAP_SYS_PTRACE then can neither name
// what was loaded (/proc/<pid>/exe) nor read the process's fds and memory
// at its later calls. The build before this test let it run: the exec
// check compared the unreadable exe, "", with a non-script's interpreter,
// "" (red team, session 25, who raced an approved path to such a file).
// Now the process is killed at its exec event with the reason. A root
// tracecell (CAP_SYS_PTRACE, and root reads the file anyway) keeps
// following it, so there the program runs. The ground truth is the
// program's own output: it printed or it did not.
func TestExecUnreadableProgram(t *testing.T) {
	host, sbx := realDir(t), realDir(t)
	echo, err := os.ReadFile("/bin/echo")
	if err != nil {
		t.Skipf("no /bin/echo to copy: %v", err)
	}
	prog := filepath.Join(host, "xecho")
	if err := os.WriteFile(prog, echo, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(prog, 0o111); err != nil {
		t.Fatal(err)
	}
	env := runEnv(t, sbx)
	code := "import os; os.execv(" + pyQuote(prog) + ", ['xecho', 'RAN-UNREADABLE'])"
	bare := runBare(t, sbx, env, python, "-c", code)
	if !strings.Contains(bare.stdout, "RAN-UNREADABLE") {
		t.Skipf("the bare run does not run an execute-only program here: %d %q %q", bare.status, bare.stdout, bare.stderr)
	}
	r := runTraced(t, sbx, env, []string{"--allow-exec", prog}, python, "-c", code)
	if os.Geteuid() == 0 {
		if !strings.Contains(r.stdout, "RAN-UNREADABLE") || r.status != 0 {
			t.Fatalf("as root the allowed program must run: status %d stdout %q stderr %q\n%s", r.status, r.stdout, r.stderr, r.report.denialList())
		}
		return
	}
	if strings.Contains(r.stdout, "RAN-UNREADABLE") {
		t.Fatalf("ESCAPED: a program tracecell cannot follow ran: stdout %q\n%s", r.stdout, r.report.denialList())
	}
	if r.status != 128+9 {
		t.Errorf("status %d, want 137 (killed at its exec)", r.status)
	}
	found := false
	for _, e := range r.report.Denials {
		if e.Syscall == "execve" && e.Rule == "exec-mismatch" && strings.Contains(e.Reason, "not readable") &&
			len(e.Paths) == 1 && e.Paths[0].Given == prog {
			found = true
		}
	}
	if !found {
		t.Errorf("no exec-mismatch denial naming %s and why:\n%s", prog, r.report.denialList())
	}
}

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
