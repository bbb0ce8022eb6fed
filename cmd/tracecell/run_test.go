package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tracecell/tracecell/report"
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
	dir, other := t.TempDir(), t.TempDir()
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
		{"report-no-dir", []string{"run", "--write", dir, "--report", filepath.Join(other, "no", "r.json"), "--", "true"}, 125, "open directory " + filepath.Join(other, "no")},
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
	b := readJSON(t, rep, &r)
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

// TestRunOutputsInsideRoot: the report and the trace are never written
// inside a writable or scratch root, where the program could rename their
// directory and leave a forgery at the operator's path, or rewrite them
// (red team, round 50): not given directly, not through the operator's own
// symlink into the sandbox, not as a descriptor of tracecell's open on a
// file there; nor is a trace the file the command gets as its stdout or
// stderr. Each is refused with status 125 before the program runs: the
// ground truth is the marker file the program would create.
func TestRunOutputsInsideRoot(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("no %s: %v", py, err)
	}
	sbx, other := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(sbx, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(other, "to-sbx") // the operator's link
	if err := os.Symlink(sbx, link); err != nil {
		t.Fatal(err)
	}
	inSbx, err := os.Create(filepath.Join(sbx, "fd.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer inSbx.Close()
	marker := filepath.Join(sbx, "ran")
	for _, tc := range []struct {
		name   string
		flags  []string
		errHas string
	}{
		{"report", []string{"--report", filepath.Join(sbx, "out", "r.json")}, "--report " + filepath.Join(sbx, "out", "r.json") + ": is inside the writable root " + sbx},
		{"trace", []string{"--trace", filepath.Join(sbx, "t.jsonl")}, "--trace " + filepath.Join(sbx, "t.jsonl") + ": is inside the writable root " + sbx},
		{"report-via-link", []string{"--report", filepath.Join(link, "r.json")}, "is inside the writable root " + sbx},
		{"trace-fd", []string{"--trace", "/dev/fd/" + strconv.Itoa(int(inSbx.Fd()))}, "is inside the writable root " + sbx},
		{"trace-stdout", []string{"--trace", "/dev/stdout"}, "is the same file as the command's stdout"},
		{"trace-stderr", []string{"--trace", "/dev/stderr"}, "is the same file as the command's stderr"},
		// `--trace t.jsonl >t.jsonl`: the file by its name (round 51).
		{"trace-stdout-by-name", []string{"--trace", "{stdout}"}, "is the same file as the command's stdout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run", "-q", "--write", sbx, "--cwd", sbx}, tc.flags...), "--", py, "-c", "open('ran', 'w')")
			var code int
			var stderr string
			if strings.HasPrefix(tc.name, "trace-std") {
				// The CLI's own stdout and stderr, which the command gets.
				code, stderr = runCLIOwnStdio(t, args...)
			} else {
				code, _, stderr = runCLI(t, args...)
			}
			if code != 125 || !strings.Contains(stderr, tc.errHas) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("status %d, stderr %q; want 125 and one line containing %q", code, stderr, tc.errHas)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the program ran")
			}
		})
	}
	// Outside the roots, through the operator's link to another directory:
	// written.
	rp := filepath.Join(other, "r.json")
	if code, _, stderr := runCLI(t, "run", "-q", "--write", sbx, "--cwd", sbx, "--report", rp, "--", py, "-c", "open('ran', 'w')"); code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(rp); err != nil {
		t.Fatal(err)
	}
}

// runCLIOwnStdio runs the CLI with this process's stdout and stderr
// replaced by files (as a shell's redirections would make them), which the
// command then shares; it returns the status and what went to stderr. An
// argument "{stdout}" stands for the stdout file's path.
func runCLIOwnStdio(t *testing.T, args ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	args = append([]string{}, args...)
	for i, a := range args {
		if a == "{stdout}" {
			args[i] = out.Name()
		}
	}
	errf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	saved := [2]int{}
	for i, f := range []*os.File{out, errf} {
		if saved[i], err = syscall.Dup(1 + i); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Dup3(int(f.Fd()), 1+i, 0); err != nil {
			t.Fatal(err)
		}
	}
	code := run(strings.NewReader(""), os.Stdout, os.Stderr, append([]string{"tracecell"}, args...))
	for i := range saved {
		syscall.Dup3(saved[i], 1+i, 0)
		syscall.Close(saved[i])
	}
	b, _ := os.ReadFile(errf.Name())
	return code, string(b)
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

// TestTraceWriteFails: a trace that cannot be written in full (here a
// pipe whose reader is gone, as a disk the tree filled) stops the run: the
// status is 125, the report says why in trace_error and error, and the
// denial the trace failed on is listed in untraced_denials. Before round 51
// of the red team the run went on with status 0, and a denial past the
// report's 10,000 was then in neither file.
func TestTraceWriteFails(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("no %s: %v", py, err)
	}
	sbx, other := t.TempDir(), t.TempDir()
	flag, marker := filepath.Join(other, "closed"), filepath.Join(other, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	traced := make(chan string, 1)
	go func() {
		// Read the trace up to the program's marker, then go away.
		var got strings.Builder
		buf := make([]byte, 1<<16)
		for !strings.Contains(got.String(), `"given":`+strconv.Quote(marker)) {
			n, err := pr.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		pr.Close()
		os.WriteFile(flag, nil, 0o644)
		traced <- got.String()
	}()
	// A read of the marker, then a wait (bounded) until the reader is
	// gone, then the denied write.
	script := "import os, time\n" +
		"open(" + strconv.Quote(marker) + ").close()\n" +
		"deadline = time.time() + 20\n" +
		"while not os.path.exists(" + strconv.Quote(flag) + ") and time.time() < deadline:\n    time.sleep(0.01)\n" +
		"try:\n    open('/etc/tracecell-untraced', 'w')\nexcept OSError:\n    pass\n"
	rp := filepath.Join(other, "r.json")
	code, _, stderr := runCLI(t, "run", "-q", "--write", sbx, "--report", rp, "--trace", "/dev/fd/"+strconv.Itoa(int(pw.Fd())), "--", py, "-c", script)
	if code != 125 || !strings.Contains(stderr, "the tree was killed") {
		t.Errorf("status %d, stderr %q; want 125 and the trace's error", code, stderr)
	}
	if tr := <-traced; strings.Contains(tr, `"given":"/etc/tracecell-untraced"`) {
		t.Fatalf("the denial reached the trace: the pipe closed too late\n%s", tr)
	}
	var r report.Report
	readJSON(t, rp, &r)
	if !strings.Contains(r.TraceError, "broken pipe") || !strings.Contains(r.Error, "--trace") || r.Exit.Status != 125 {
		t.Errorf("report: trace_error %q, error %q, status %d", r.TraceError, r.Error, r.Exit.Status)
	}
	found := false
	for _, d := range r.UntracedDenials {
		for _, p := range d.Paths {
			found = found || p.Given == "/etc/tracecell-untraced"
		}
	}
	if !found {
		t.Errorf("untraced_denials %+v lack the denial the trace failed on", r.UntracedDenials)
	}
}

// readJSON decodes the JSON file at path into v and returns its bytes.
func readJSON(t *testing.T, path string, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
