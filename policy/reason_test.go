package policy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFailClosed: the reason is rendered per mode from the cause; the
// enforce text is the prose the tracer wrote before reasons were data
// (integration tests and operators' log filters match it), and the audit
// text is what audit mode wrote by rewriting that prose.
func TestFailClosed(t *testing.T) {
	for _, tc := range []struct {
		name, cause, enforce, audit string
	}{
		{"path", "tracecell could not resolve the path (file name too long)",
			"tracecell could not resolve the path (file name too long), so the call is denied to be safe",
			"tracecell could not resolve the path (file name too long), which enforce mode denies to be safe"},
		{"base directory", "tracecell could not verify the directory the path is relative to (fd 3 moved)",
			"tracecell could not verify the directory the path is relative to (fd 3 moved), so the call is denied to be safe",
			"tracecell could not verify the directory the path is relative to (fd 3 moved), which enforce mode denies to be safe"},
		{"pidfd", "the pidfd names a process outside tracecell's pid namespace",
			"the pidfd names a process outside tracecell's pid namespace, so the call is denied to be safe",
			"the pidfd names a process outside tracecell's pid namespace, which enforce mode denies to be safe"},
		{"memory map", "tracecell could not read the memory map of pid 7 (no such process)",
			"tracecell could not read the memory map of pid 7 (no such process), so the call is denied to be safe",
			"tracecell could not read the memory map of pid 7 (no such process), which enforce mode denies to be safe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FailClosed{Cause: tc.cause}
			if got := f.Text(Enforce); got != tc.enforce {
				t.Errorf("enforce: %q, want %q", got, tc.enforce)
			}
			if got := f.Text(Audit); got != tc.audit {
				t.Errorf("audit: %q, want %q", got, tc.audit)
			}
			d := f.Decision(syscall.EACCES)
			if d.Allow || d.Rule != RuleUnresolvablePath || d.Reason != tc.enforce || d.Errno != syscall.EACCES {
				t.Errorf("Decision = %+v", d)
			}
		})
	}
}

// TestFailClosedCausesInTracer: the fail-closed causes of the tracer and
// of decode (FailClosedWith, and the pidfd causes that become one) state no consequence:
// FailClosed.Text adds it in the mode's words. A cause that still ends in
// the enforce wording would read "denied to be safe" twice in enforce mode
// and claim a denial in audit mode (a tracer merged from before FailClosed).
func TestFailClosedCausesInTracer(t *testing.T) {
	var files []string
	for _, dir := range []string{"tracer", "decode"} {
		fs, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("no %s sources: %v", dir, err)
		}
		files = append(files, fs...)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, failClosedEnforce[2:]) {
				continue
			}
			if strings.Contains(line, "failWhy") || strings.Contains(line, "FailClosedWith") || strings.Contains(line, "pid namespace") || strings.Contains(line, "which process the fd") {
				t.Errorf("%s:%d: a fail-closed cause states its consequence; leave it to policy.FailClosed.Text: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
