package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
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
		{"unknown-command", []string{"frobnicate"}, 125, `unknown command "frobnicate": the commands are run, serve, mcp`},
		{"unknown-command-args", []string{"rnu", "--", "true"}, 125, `unknown command "rnu"`},
		{"report-no-dir", []string{"run", "--write", dir, "--report", filepath.Join(dir, "no", "r.json"), "--", "true"}, 125, "open directory " + filepath.Join(dir, "no")},
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

// TestRunReportDirSwapped: the report's directory is inside the sandbox, and
// the program renames it away and puts a symlink to another directory in its
// place. The report must land in the directory opened before the run (now
// under its new name), never through the program's symlink: tracecell may
// run as root, and the symlink may point anywhere on the host.
func TestRunReportDirSwapped(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("no %s: %v", py, err)
	}
	sbx := t.TempDir()
	elsewhere := t.TempDir() // stands for a host directory outside the sandbox
	if err := os.Mkdir(filepath.Join(sbx, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "import os, sys\n" +
		"os.rename('out', 'out.moved')\n" +
		"os.symlink(sys.argv[1], 'out')\n"
	code, _, stderr := runCLI(t, "run", "--write", sbx, "--cwd", sbx, "--report", filepath.Join(sbx, "out", "r.json"),
		"--", py, "-c", script, elsewhere)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	if l, err := os.Readlink(filepath.Join(sbx, "out")); err != nil || l != elsewhere {
		t.Fatalf("the program did not swap the directory: readlink out = %q, %v (stderr %q)", l, err, stderr)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("tracecell wrote through the program's symlink: %s holds %v", elsewhere, ents)
	}
	b, err := os.ReadFile(filepath.Join(sbx, "out.moved", "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Exit struct{ Code, Status int } }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report in the original directory is not the report (%v): %q", err, b)
	}
	ents, _ := os.ReadDir(filepath.Join(sbx, "out.moved"))
	if len(ents) != 1 {
		t.Errorf("original directory holds %v, want only r.json", ents)
	}
}

// TestEmptyPathFlags: every path option of every command, given an empty
// value (`--write "$SBX"` with SBX unset), fails with status 125 and one
// line naming the option (issue 17 item 2). For run, the ground truth is
// the current directory: nothing may have been written there.
func TestEmptyPathFlags(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	commands := map[string][]cli.Flag{"run": runFlags(), "serve": serveFlags(), "mcp": mcpFlags()}
	tested := 0
	for _, cmd := range []string{"run", "serve", "mcp"} {
		has := map[string]bool{}
		for _, f := range commands[cmd] {
			has[f.Names()[0]] = true
		}
		for _, name := range pathFlags {
			if !has[name] {
				continue
			}
			tested++
			t.Run(cmd+"/"+name, func(t *testing.T) {
				args := []string{cmd, "--" + name, ""}
				if cmd == "run" {
					args = append(args, "--", "/bin/sh", "-c", "echo x > marker")
				}
				code, _, stderr := runCLI(t, args...)
				want := "--" + name + ": empty value"
				if code != 125 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
					t.Errorf("status %d stderr %q; want 125 and one line containing %q", code, stderr, want)
				}
				if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
					t.Errorf("the current directory %s holds %v", cwd, ents)
				}
			})
		}
	}
	for _, name := range pathFlags {
		found := false
		for _, fl := range commands {
			for _, f := range fl {
				found = found || f.Names()[0] == name
			}
		}
		if !found {
			t.Errorf("pathFlags names --%s, a flag of no command", name)
		}
	}
	if tested < 30 {
		t.Errorf("%d cases, want every path flag of run, serve and mcp", tested)
	}
}

// TestRunNullStdin: with --null-stdin the command's stdin is /dev/null, not
// tracecell's (the SandboxAgent backend runs commands this way, so that no
// command reaches the application's terminal); without it, tracecell's.
func TestRunNullStdin(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--null-stdin"}, "/dev/null:"},
		{nil, "pipe:typed by the operator\n"},
	} {
		t.Run(strings.Join(append([]string{"flags"}, tc.flags...), " "), func(t *testing.T) {
			dir := t.TempDir()
			var out, errb bytes.Buffer
			args := append(append([]string{"tracecell", "run", "--write", dir}, tc.flags...), "--",
				"/usr/bin/python3", "-c", `import os, sys; t = os.readlink("/proc/self/fd/0"); print(("/dev/null" if t == "/dev/null" else t.split(":")[0]) + ":" + sys.stdin.read(), end="")`)
			code := run(strings.NewReader("typed by the operator\n"), &out, &errb, args)
			if code != 0 || out.String() != tc.want {
				t.Errorf("status %d, stdout %q (want %q), stderr %q", code, out.String(), tc.want, errb.String())
			}
		})
	}
}
