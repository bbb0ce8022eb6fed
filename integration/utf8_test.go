package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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
	r := runTraced(t, sbx, nil, []string{"-q"}, python, "-c",
		`import os, sys
try:
    os.mkdir(os.fsencode(sys.argv[1]))
except PermissionError:
    print("denied")`, name)
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
}
