package arch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestUnsupportedArch builds this package for each GOARCH: the two
// supported ones build, any other stops at unsupported.go with a message
// naming the supported platforms (not at "undefined: arch.Native" in a
// package that needs the native layout).
func TestUnsupportedArch(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to cross-build with")
	}
	const msg = "tracecell builds only for GOOS=linux with GOARCH=amd64 or GOARCH=arm64"
	for _, tc := range []struct {
		goarch string
		ok     bool
	}{
		{"amd64", true},
		{"arm64", true},
		{"riscv64", false},
		{"386", false},
	} {
		t.Run(tc.goarch, func(t *testing.T) {
			cmd := exec.Command(gocmd, "build", ".")
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+tc.goarch, "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			switch {
			case tc.ok && err != nil:
				t.Fatalf("go build for %s: %v\n%s", tc.goarch, err, out)
			case !tc.ok && err == nil:
				t.Fatalf("go build for %s succeeded, want it stopped", tc.goarch)
			case !tc.ok && !strings.Contains(string(out), msg):
				t.Fatalf("go build for %s said\n%s\nwant the message %q", tc.goarch, out, msg)
			}
		})
	}
}
