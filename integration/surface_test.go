package integration

import (
	"os"
	"testing"
)

// TestSurface418 proves that the suite really runs on the 4.18 system call
// surface when it says so (make integration-418): a probe run bare, with
// the same inheritance as everything tracecell starts, gets ENOSYS for
// clone3 (Linux 5.3) and io_uring is unusable.
func TestSurface418(t *testing.T) {
	if os.Getenv("TRACECELL_SURFACE418") != "1" {
		t.Skip("TRACECELL_SURFACE418 is not set: not running under testdata/surface418")
	}
	if res := resultOf(runBare(t, t.TempDir(), nil, escapeBin, "clone3").stdout); res != "errno=ENOSYS" {
		t.Errorf("clone3 under surface418: %q, want errno=ENOSYS: the 4.18 surface is not active", res)
	}
	if res := ioUringProbe(); res != "errno=ENOSYS" {
		t.Errorf("io_uring under surface418: %q, want errno=ENOSYS", res)
	}
}
