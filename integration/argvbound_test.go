package integration

import (
	"os"
	"strings"
	"testing"
)

// argvAmpCode re-execs python3 (allowed) with 200 KB of arguments, and the
// new program makes 50 denied creates: each denial used to carry the whole
// argv, so the report grew by 10 MB (a red team made gigabytes this way,
// raising ARG_MAX with RLIMIT_STACK; session 25).
const argvAmpCode = `
import os, sys
if len(sys.argv) < 3:
    code = "import os\nfor i in range(50):\n    try: os.open('/etc/tc-argv-%d' % i, os.O_WRONLY|os.O_CREAT)\n    except OSError: pass\n"
    os.execv(sys.executable, [sys.executable, "-c", code] + ["x" * 50000] * 4 + ["tail"])
`

// TestDenialArgvBounded: the report keeps the start of such an argv
// (4 KiB) and says it is cut; its size stays far below the argv times the
// denials.
func TestDenialArgvBounded(t *testing.T) {
	sbx := realDir(t)
	env := runEnv(t, sbx)
	r := runTraced(t, sbx, env, []string{"--allow-exec", python}, python, "-c", argvAmpCode, "first")
	if len(r.report.Denials) != 50 {
		t.Fatalf("%d denials, want 50 (status %d)\nstderr:\n%s", len(r.report.Denials), r.status, r.stderr)
	}
	for _, e := range r.report.Denials {
		if !e.ArgvTruncated || len(strings.Join(e.Argv, "\x00")) > 4096 {
			t.Fatalf("denial argv of %d bytes, truncated %v", len(strings.Join(e.Argv, "\x00")), e.ArgvTruncated)
		}
	}
	st, err := os.Stat(r.reportPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 1<<20 {
		t.Errorf("report of %d bytes for 50 denials", st.Size())
	}
}
