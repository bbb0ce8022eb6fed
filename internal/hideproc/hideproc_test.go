package hideproc

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The package's initializer has run in this test binary: the process is not
// dumpable, and the /proc/self entries tracecell uses still work (its fd
// directory and magic links, status, exe). Its own environ (mode 0400, now
// root's) does not for an ordinary user; tracecell never reads it.
func TestNotDumpable(t *testing.T) {
	if Errno != 0 {
		t.Fatalf("prctl(PR_SET_DUMPABLE, 0): %v", Errno)
	}
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d != 0 {
		t.Fatalf("PR_GET_DUMPABLE = %d, want 0", d)
	}
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Errorf("own /proc/self/fd: %v", err)
	}
	if _, err := os.Stat("/proc/self/fd/1"); err != nil {
		t.Errorf("own /proc/self/fd/1: %v", err)
	}
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		t.Errorf("own /proc/self/status: %v", err)
	}
	if _, err := os.Executable(); err != nil {
		t.Errorf("os.Executable (/proc/self/exe): %v", err)
	}
}
