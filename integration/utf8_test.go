package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestReportKeepsPathBytes: a path that is not valid UTF-8 is reported
// byte for byte. A JSON string cannot carry the bytes (encoding/json writes
// U+FFFD for each), so "\xff\xfe-a" and "\u00ff\u00fe-a"-like paths read
// alike; the report repeats such strings in given_base64 and
// resolved_base64 (red team, session 23).
func TestReportKeepsPathBytes(t *testing.T) {
	sbx := realDir(t)
	outside := realDir(t)
	name := filepath.Join(outside, "\xff\xfe-a")
	// A scratch entry the tree leaves, named with the same bytes.
	left := fmt.Sprintf("/dev/shm/tracecell-it-\xfe-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(left) })
	r := runTraced(t, sbx, nil, []string{"-q"}, python, "-c",
		`import os, sys
if os.path.isdir("/dev/shm"):
    open(os.fsencode(sys.argv[2]), "w").close()
try:
    os.mkdir(os.fsencode(sys.argv[1]))
except PermissionError:
    print("denied")`, name, left)
	if r.stdout != "denied\n" {
		t.Fatalf("status %d stdout %q stderr:\n%s", r.status, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(name); err == nil {
		t.Fatalf("%q was created", name)
	}
	b, err := os.ReadFile(r.reportPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Denials []struct {
			Syscall string
			Paths   []map[string]any
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range rep.Denials {
		for _, p := range d.Paths {
			g, _ := p["given_base64"].(string)
			res, _ := p["resolved_base64"].(string)
			gb, err1 := base64.StdEncoding.DecodeString(g)
			rb, err2 := base64.StdEncoding.DecodeString(res)
			if d.Syscall == "mkdir" && err1 == nil && err2 == nil && bytes.Equal(gb, []byte(name)) && bytes.Equal(rb, []byte(name)) {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no mkdir denial with the path's exact bytes in given_base64 and resolved_base64:\n%s", b)
	}
	// The argv of the denial and the report's command and scratch_left
	// carry the same bytes (a red team, session 23: two argvs that differ
	// in one such byte gave identical reports).
	var top struct {
		Command     [][]byte `json:"command_base64"`
		ScratchLeft [][]byte `json:"scratch_left_base64"`
		Denials     []struct {
			Argv [][]byte `json:"argv_base64"`
		}
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Command) != 5 || string(top.Command[3]) != name {
		t.Errorf("command_base64 %q, want the command with %q", top.Command, name)
	}
	if len(top.Denials) == 0 || len(top.Denials[0].Argv) != 5 || string(top.Denials[0].Argv[4]) != left {
		t.Errorf("the denial's argv_base64 is not the argv byte for byte:\n%s", b)
	}
	if _, err := os.Stat("/dev/shm"); err == nil && (len(top.ScratchLeft) != 1 || string(top.ScratchLeft[0]) != left) {
		t.Errorf("scratch_left_base64 %q, want [%q]", top.ScratchLeft, left)
	}
}
