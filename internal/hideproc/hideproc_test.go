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

// The kernel's copy of the environment is zeros; Go's is intact. As an
// ordinary user the process may no longer read its own environ file at
// all (not dumpable), which is fine: nothing reads it.
func TestEnvironScrubbed(t *testing.T) {
	if os.Getenv("PATH") == "" {
		t.Fatal("os.Getenv(PATH) is empty: Go's copy of the environment was lost")
	}
	start, end, ok := envArea()
	if !ok || end <= start {
		t.Fatalf("envArea = %#x, %#x, %v", start, end, ok)
	}
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		if os.Geteuid() != 0 && os.IsPermission(err) {
			t.Skipf("not readable to uid %d once not dumpable: %v", os.Geteuid(), err)
		}
		t.Fatal(err)
	}
	if uint64(len(b)) != end-start {
		t.Errorf("environ is %d bytes, env area %d", len(b), end-start)
	}
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d of /proc/self/environ is %q: not scrubbed (%q)", i, c, b[i:min(len(b), i+40)])
		}
	}
}

// The initializer took the quick way, and the place it inferred from
// AT_EXECFN is the kernel's own env_start..env_end (/proc/self/stat).
func TestScrubbedNearExecfn(t *testing.T) {
	if len(os.Environ()) == 0 {
		t.Skip("no environment to scrub")
	}
	if Scrubbed != "execfn" {
		t.Fatalf("Scrubbed = %q, want %q (the /proc fallback, or nothing, ran instead)", Scrubbed, "execfn")
	}
	start, end, ok := envArea()
	if !ok {
		t.Fatal("envArea: /proc/self/stat unreadable")
	}
	if uint64(execfn()) != end {
		t.Errorf("AT_EXECFN = %#x, env_end = %#x", execfn(), end)
	}
	n := 0
	for _, e := range os.Environ() {
		n += len(e) + 1
	}
	if uint64(n) != end-start {
		t.Errorf("the environment takes %d bytes, env_start..env_end %d", n, end-start)
	}
}

// Where the bytes below AT_EXECFN are not the environment given (here: they
// are zeros by now), nothing is written and the caller falls back; memory
// that is not mapped fails instead of faulting.
func TestScrubNearExecfnRefuses(t *testing.T) {
	if scrubNearExecfn([]string{"TRACECELL_NOT_THERE=1"}) {
		t.Fatal("scrubNearExecfn accepted bytes that are not the environment")
	}
	if scrubNearExecfn(nil) {
		t.Fatal("scrubNearExecfn of no environment reported a scrub")
	}
	if selfVM(0, make([]byte, 8), false) || selfVM(0, make([]byte, 8), true) {
		t.Fatal("selfVM at address 0 succeeded")
	}
}
