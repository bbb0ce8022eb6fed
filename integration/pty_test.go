package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The user's terminals (see also escape case py-foreign-pty-write and
// TestSandboxWork/pty, the tree's own ptys).

// ptyWriteCode writes a marker to the slave named by its argument (or, for
// "-", to os.ttyname(1)) and says how that went on stderr.
const ptyWriteCode = `
import os, sys
name = sys.argv[1] if sys.argv[1] != "-" else os.ttyname(1)
try:
    fd = os.open(name, os.O_WRONLY | os.O_NOCTTY)
    os.write(fd, sys.argv[2].encode() + b"\n")
    os.close(fd)
    print("result: ok", file=sys.stderr)
except OSError as e:
    print("result: errno=%d" % e.errno, file=sys.stderr)
`

// TestPtyStdio: tracecell run from a terminal (stdin and stdout a pty
// slave, which the command gets as its fds 0-2): the command may open that
// terminal by name, as ttyname(3) gives it, and write to it. Another
// terminal stays closed to it.
func TestPtyStdio(t *testing.T) {
	t.Parallel()
	term, _, slave := openPty(t)
	other, otherName, _ := openPty(t)
	sbx := realDir(t)
	rp := filepath.Join(t.TempDir(), "report.json")
	run := func(target, marker string) (string, reportDoc) {
		args := []string{"run", "--write", sbx, "--report", rp}
		for _, kv := range runEnv(t, sbx) {
			args = append(args, "--env", kv)
		}
		args = append(args, "--", python, "-c", ptyWriteCode, target, marker)
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, tcBin, args...)
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("tracecell: %v\nstderr:\n%s", err, stderr.String())
		}
		var rep reportDoc
		b, err := os.ReadFile(rp)
		if err != nil {
			t.Fatalf("report: %v", err)
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return stderr.String(), rep
	}

	stderr, rep := run("-", "OWN-TERMINAL")
	if res := resultOf(stderr); res != "ok" {
		t.Errorf("writing its own terminal by name: %q\nstderr:\n%s\ndenials:\n%s", res, stderr, rep.denialList())
	}
	if got := ptyOutput(term); !strings.Contains(got, "OWN-TERMINAL") {
		t.Errorf("the terminal shows %q", got)
	}
	if len(rep.Denials) != 0 {
		t.Errorf("denials:\n%s", rep.denialList())
	}

	stderr, rep = run(otherName, "OTHER-TERMINAL")
	if res := resultOf(stderr); res != "errno=13" {
		t.Errorf("writing another terminal: %q, want errno=13\nstderr:\n%s", res, stderr)
	}
	if got := ptyOutput(other); got != "" {
		t.Errorf("ESCAPED: the other terminal shows %q", got)
	}
	if len(rep.Denials) != 1 || rep.Denials[0].Rule != "foreign-pty" || !rep.Denials[0].hasResolved(otherName) {
		t.Errorf("want one foreign-pty denial naming %s:\n%s", otherName, rep.denialList())
	}
}

// TestPtyAllowDevice: --allow-device '/dev/pts/*' gives the tree every
// terminal of the user back, as before foreign-pty existed.
func TestPtyAllowDevice(t *testing.T) {
	t.Parallel()
	m, name, _ := openPty(t)
	sbx := realDir(t)
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-device", "/dev/pts/*"},
		python, "-c", ptyWriteCode, name, "ALLOWED-BY-OPERATOR")
	if res := resultOf(r.stderr); res != "ok" {
		t.Errorf("with --allow-device '/dev/pts/*': %q\nstderr:\n%s\ndenials:\n%s", res, r.stderr, r.report.denialList())
	}
	if got := ptyOutput(m); !strings.Contains(got, "ALLOWED-BY-OPERATOR") {
		t.Errorf("the pty shows %q", got)
	}
}
