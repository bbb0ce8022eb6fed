package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These tests call run() in-process; the traced command starts through the
// stub, which is this test binary re-executed (tracer's init hook).

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(strings.NewReader(""), &out, &errb, append([]string{"tracecell"}, args...))
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("nett: allow\n"), 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		errHas string
	}{
		{"no-command", []string{"run", "--write", dir}, 125, "no command"},
		{"bad-flag", []string{"run", "--wrte", dir, "--", "true"}, 125, "wrte"},
		{"bad-net", []string{"run", "--write", dir, "--net", "maybe", "--", "true"}, 125, "--net"},
		{"bad-timeout", []string{"run", "--write", dir, "--timeout", "soon", "--", "true"}, 125, "--timeout"},
		{"bad-policy", []string{"run", "--policy", filepath.Join(dir, "bad.yaml"), "--", "true"}, 125, `unknown key "nett"`},
		{"not-found", []string{"run", "--write", dir, "--", "tracecell-no-such"}, 127, "not found"},
		{"bad-log-level", []string{"run", "--write", dir, "--log-level", "loud", "--", "true"}, 125, "--log-level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.status || !strings.Contains(stderr, tc.errHas) {
				t.Fatalf("status %d stderr %q; want %d containing %q", code, stderr, tc.status, tc.errHas)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
				t.Errorf("error is %d lines, want one: %q", n+1, stderr)
			}
		})
	}
}

func TestRunReport(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runCLI(t, "run", "--write", dir, "--report", rep, "--", "/bin/sh", "-c", "echo hi > out.txt; echo x > /proc/1/comm; exit 4")
	if code != 4 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "hi\n" {
		t.Errorf("out.txt = %q", b)
	}
	var r struct {
		Exit    struct{ Code, Status int }
		Denials []struct {
			Kind, Rule, Errno string
			Paths             []struct{ Resolved string }
		}
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Exit.Code != 4 || r.Exit.Status != 4 || len(r.Denials) != 1 || r.Denials[0].Paths[0].Resolved != "/proc/1/comm" {
		t.Fatalf("report %s", b)
	}
	if !strings.Contains(stderr, "tracecell: blocked write:") || !strings.Contains(stderr, "/proc/1/comm") {
		t.Errorf("no notice: %q (report %s)", stderr, b)
	}
}

// TestRunCommaInValues: a repeatable flag's value is taken whole. A comma
// in a --write path once split it into two other writable roots.
func TestRunCommaInValues(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a,b")
	code, _, stderr := runCLI(t, "run", "--write", dir, "--env", "LIST=x,y", "--",
		"/bin/sh", "-c", `echo "$LIST" > "$PWD/out"`)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "x,y\n" {
		t.Errorf("out in %s: %q %v", dir, b, err)
	}
	for _, p := range []string{filepath.Join(base, "a"), filepath.Join(base, "b")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists: the path was split at its comma", p)
		}
	}
}
