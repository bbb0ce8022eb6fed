package tracer

import (
	"os/exec"
	"syscall"
	"testing"
)

// After a run, SIGCHLD keeps the runtime's handler and gains SA_NOCLDSTOP,
// and children started the ordinary way are still waited for.
func TestQuietChildStops(t *testing.T) {
	var before kernelSigaction
	if err := rtSigaction(int(syscall.SIGCHLD), nil, &before); err != nil {
		t.Fatal(err)
	}
	o := runTraced(t, t.TempDir(), nil, "/bin/sh", "-c", "exit 3")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.ExitCode != 3 {
		t.Fatalf("exit %d, want 3", o.res.ExitCode)
	}
	var after kernelSigaction
	if err := rtSigaction(int(syscall.SIGCHLD), nil, &after); err != nil {
		t.Fatal(err)
	}
	if after.Flags&saNoCldStop == 0 {
		t.Errorf("SIGCHLD flags %#x: SA_NOCLDSTOP not set", after.Flags)
	}
	if after.Handler != before.Handler || after.Handler == 0 {
		t.Errorf("SIGCHLD handler %#x, was %#x: the runtime's handler must stay", after.Handler, before.Handler)
	}
	if after.Flags&^saNoCldStop != before.Flags&^saNoCldStop {
		t.Errorf("SIGCHLD flags %#x, were %#x: only SA_NOCLDSTOP may change", after.Flags, before.Flags)
	}
	err := exec.Command("/bin/sh", "-c", "exit 4").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Errorf("os/exec child after a run: %v, want exit status 4", err)
	}
}
