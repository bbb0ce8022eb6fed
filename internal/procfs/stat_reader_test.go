package procfs

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestStates(t *testing.T) {
	if st := State(os.Getpid()); st != "R" && st != "S" {
		t.Errorf("State(self) = %q", st)
	}
	if !Runs(os.Getpid()) {
		t.Error("Runs(self) = false")
	}
	if got, want := Field(os.Getpid(), 4), strconv.Itoa(os.Getppid()); got != want {
		t.Errorf("Field(self, 4) = %q, want the ppid %s", got, want)
	}
	if Field(os.Getpid(), 2) != "" || Field(os.Getpid(), 1000) != "" {
		t.Error("fields out of range gave something")
	}
	// The command name may hold spaces and parentheses: fields count from
	// the last ')'. This test binary's name has neither, so parse one.
	if got := FieldOf([]byte("42 (a ) b) S 7 42"), 4); got != "7" {
		t.Errorf("FieldOf = %q, want 7", got)
	}
	// A zombie: a child that exited and is not reaped yet.
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); State(pid) != "Z"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no zombie: state %q", State(pid))
		}
	}
	if Runs(pid) {
		t.Error("Runs(zombie) = true")
	}
	cmd.Wait()
	if State(pid) != "" || Runs(pid) {
		t.Errorf("reaped: state %q", State(pid))
	}
}
