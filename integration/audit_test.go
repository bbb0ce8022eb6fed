package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/report"
)

// TestAuditRoundTrip: an agent-like script run in audit mode, a policy
// learned from its report with `tracecell policy suggest`, and the script
// run again enforced under that policy: no denial, the same output, and
// the file it writes outside its sandbox really written (stat'ed here,
// outside the traced tree). Enforced without the learned policy, the same
// script is denied and the outside file is not there: the round trip is
// what makes the difference.
func TestAuditRoundTrip(t *testing.T) {
	base := realDir(t)
	// The reports stay out of base, which the learned policy makes a
	// writable root: no report may lie inside one.
	reports := realDir(t)
	sbx, outside := filepath.Join(base, "sbx"), filepath.Join(base, "outside")
	notes := filepath.Join(outside, "notes.txt")
	agent := filepath.Join(repoRoot, "testdata", "reports", "agent.py")
	reset := func() {
		for _, d := range []string{sbx, outside} {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(sbx, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tc := func(args ...string) result {
		t.Helper()
		return execute(t, base, os.Environ(), append([]string{tcBin}, args...))
	}
	readReport := func(path string) *report.Report {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r report.Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}

	reset()
	rep1 := filepath.Join(reports, "audit.json")
	// The audit run's limits must come back in the suggested policy: a
	// policy learned from a run with --memory that has no memory key lets
	// the next run take all of the host's memory.
	limits := []string{"--timeout", "5m", "--cpu-time", "120", "--memory", "4G", "--max-file-size", "1G", "--max-procs", "64", "--max-open-files", "512"}
	r1 := tc(append(append([]string{"run", "-q", "--mode", "audit", "--write", sbx, "--report", rep1}, limits...), "--", python, agent, sbx, outside)...)
	if r1.status != 0 {
		t.Fatalf("audit run: status %d\n%s", r1.status, r1.stderr)
	}
	if a := readReport(rep1).Counts.Audited; a == 0 {
		t.Fatalf("the audit run would have denied nothing: the script no longer needs a policy\n%s", r1.stdout)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Fatalf("audit mode did not let the script write %s: %v", notes, err)
	}

	pol := filepath.Join(base, "policy.yaml")
	if r := tc("policy", "suggest", "-o", pol, rep1); r.status != 0 {
		t.Fatalf("policy suggest: status %d: %s", r.status, r.stderr)
	}
	b, _ := os.ReadFile(pol)
	for _, want := range []string{"\n  - \"" + base + "\"\n", "\n  - \"/usr/bin/ls\"\n", "\nnet: allow\n", "\nmode: enforce\n", "#   needed by ",
		"\ntimeout: 300\n", "\ncpu_time: 120\n", "\nmemory: 4294967296\n", "\nmax_file_size: 1073741824\n", "\nmax_procs: 64\n", "\nmax_open_files: 512\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the suggested policy lacks %q:\n%s", want, b)
		}
	}
	if r := tc("policy", "check", pol); r.status != 0 {
		t.Fatalf("policy check of the suggested policy: status %d: %s", r.status, r.stderr)
	}

	// Enforced, without the learned policy: denied, nothing outside.
	reset()
	rep0 := filepath.Join(reports, "plain.json")
	r0 := tc("run", "-q", "--write", sbx, "--report", rep0, "--", python, agent, sbx, outside)
	if d := readReport(rep0).Counts.Denied; d == 0 || r0.stdout == r1.stdout {
		t.Fatalf("enforced without the policy: %d denials, output\n%s", d, r0.stdout)
	}
	if _, err := os.Stat(notes); err == nil {
		t.Fatalf("%s written by an enforced run without the policy", notes)
	}

	// Enforced under the learned policy: what the audit run did, no denial.
	reset()
	rep2 := filepath.Join(reports, "enforced.json")
	r2 := tc("run", "--policy", pol, "--report", rep2, "--", python, agent, sbx, outside)
	rep := readReport(rep2)
	if l1, l2 := fmt.Sprint(readReport(rep1).Limits), fmt.Sprint(rep.Limits); l1 == "<nil>" || l1 != l2 {
		t.Errorf("under the suggested policy the limits are %s, want the audit run's %s", l2, l1)
	}
	if rep.Counts.Denied != 0 || rep.Counts.Audited != 0 || len(rep.Denials) != 0 {
		t.Errorf("under the suggested policy: %d denied, %d audited: %+v\n%s", rep.Counts.Denied, rep.Counts.Audited, rep.Denials, r2.stderr)
	}
	if r2.status != 0 || r2.stdout != r1.stdout {
		t.Errorf("under the suggested policy: status %d, output\n%s\nwant (the audit run's)\n%s", r2.status, r2.stdout, r1.stdout)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "notes\n" {
		t.Errorf("under the suggested policy %s holds %q, %v", notes, b, err)
	}
}

// TestReportProcessTree: a trace of a shell tree three levels deep gives
// `tracecell report` the whole tree (each process under its parent, with
// its exit status) and the denials with their paths and pids.
func TestReportProcessTree(t *testing.T) {
	sbx := realDir(t)
	outside := filepath.Join(realDir(t), "x")
	trace := filepath.Join(realDir(t), "trace.jsonl")
	r := execute(t, sbx, os.Environ(), []string{tcBin, "run", "-q", "--write", sbx, "--allow-exec", "sh", "--trace", trace, "--",
		"/bin/sh", "-c", `sh -c "sh -c 'echo x > ` + outside + `; exit 5'; exit 4"; exit 3`})
	if r.status != 3 {
		t.Fatalf("status %d, want 3\n%s", r.status, r.stderr)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("%s was written", outside)
	}
	out := execute(t, sbx, append(os.Environ(), "NO_COLOR="), []string{tcBin, "report", "--format", "json", trace})
	if out.status != 0 {
		t.Fatalf("report: status %d: %s", out.status, out.stderr)
	}
	var s struct {
		Processes []struct {
			Pid, Parent int
			Exit        *struct{ Code *int }
		}
		Denials []struct {
			Rule       string
			Operations []struct {
				Paths []struct{ Given, Resolved string }
				Pids  []int
			}
		}
	}
	if err := json.Unmarshal([]byte(out.stdout), &s); err != nil {
		t.Fatalf("report json: %v\n%s", err, out.stdout)
	}
	if len(s.Processes) != 3 {
		t.Fatalf("%d processes, want 3: %+v", len(s.Processes), s.Processes)
	}
	for i, p := range s.Processes {
		want := 3 + i
		if p.Exit == nil || p.Exit.Code == nil || *p.Exit.Code != want {
			t.Errorf("process %d (level %d): exit %+v, want %d", p.Pid, i, p.Exit, want)
		}
		if i > 0 && p.Parent != s.Processes[i-1].Pid {
			t.Errorf("process %d has parent %d, want %d", p.Pid, p.Parent, s.Processes[i-1].Pid)
		}
	}
	if len(s.Denials) != 1 || s.Denials[0].Rule != "outside-writable-roots" ||
		s.Denials[0].Operations[0].Paths[0].Given != outside || s.Denials[0].Operations[0].Pids[0] != s.Processes[2].Pid {
		t.Errorf("denials %+v, want the write of %s by pid %d", s.Denials, outside, s.Processes[2].Pid)
	}
	// The text report on a pipe has no colour.
	txt := execute(t, sbx, os.Environ(), []string{tcBin, "report", trace})
	if strings.Contains(txt.stdout, "\x1b[") || !strings.Contains(txt.stdout, "Process tree") {
		t.Errorf("text report on a pipe:\n%q", txt.stdout)
	}
}
