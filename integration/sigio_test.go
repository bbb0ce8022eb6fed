package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracecell/tracecell/internal/ptytest"
)

// Another terminal of the user, with a program in its foreground (a shell
// in an ssh session). The tree opens the terminal read-only (open reads
// allow that), picks SIGUSR1 with F_SETSIG and turns on O_ASYNC: the kernel
// itself makes the terminal's foreground group the SIGIO owner, so every
// keystroke there would signal that program (SIGKILL works the same way).
// Ground truth: the program's own log while someone types. The bare run
// shows the log catches the signal.
func TestSigioForeignTerminal(t *testing.T) {
	prog := `
import fcntl, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOCTTY)
try:
    fcntl.fcntl(fd, 10, signal.SIGUSR1)  # F_SETSIG
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | fcntl.FASYNC)
    print("result: ok", flush=True)
except OSError as e:
    import errno
    print("result: errno=" + errno.errorcode[e.errno], flush=True)
time.sleep(1.5)  # armed, while someone types there
`
	for _, mode := range []string{"bare", "traced"} {
		t.Run(mode, func(t *testing.T) {
			master, name := ptytest.Open(t)
			log := filepath.Join(realDir(t), "victim.log")
			victim := startTerminalVictim(t, name, log)
			// Someone typing in that terminal while the program runs.
			stop := make(chan struct{})
			typed := make(chan struct{})
			go func() {
				defer close(typed)
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
						master.Write([]byte("x\n")) // a line: canonical mode wakes readers per line
					}
				}
			}()
			sbx := realDir(t)
			var r result
			if mode == "bare" {
				r = runBare(t, sbx, runEnv(t, sbx), python, "-c", prog, name)
			} else {
				r = runTraced(t, sbx, runEnv(t, sbx), nil, python, "-c", prog, name)
			}
			close(stop)
			<-typed
			time.Sleep(100 * time.Millisecond)
			got, _ := os.ReadFile(log)
			signalled := strings.Contains(string(got), "USR1")
			if mode == "bare" {
				if !signalled {
					t.Skipf("the bare run did not signal the terminal's program here (result %q, log %q)", resultOf(r.stdout), got)
				}
				return
			}
			if signalled {
				t.Fatalf("ESCAPED: the program in the foreground of %s (pid %d) got SIGUSR1 from the tree; result %q", name, victim, resultOf(r.stdout))
			}
			if res := resultOf(r.stdout); res != "errno=EPERM" {
				t.Errorf("the program saw %q, want errno=EPERM\nstderr:\n%s", res, r.stderr)
			}
			found := false
			for _, e := range r.report.Denials {
				found = found || (e.Kind == "signal" && e.Errno == "EPERM" && e.hasResolved(name))
			}
			if !found {
				t.Errorf("no signal denial naming %s; denials:\n%s", name, r.report.denialList())
			}
		})
	}
}

// startTerminalVictim starts a program in a session of its own whose
// controlling terminal is the pty slave name (so its process group is the
// terminal's foreground group); it appends each SIGUSR1 it gets to log.
func startTerminalVictim(t *testing.T, name, log string) int {
	t.Helper()
	script := `
import os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)  # a session leader without a terminal: it becomes its own
def got(n, f):
    with open(sys.argv[2], "a") as l:
        l.write("USR1\n")
signal.signal(signal.SIGUSR1, got)
open(sys.argv[2], "a").close()
time.sleep(30)
`
	cmd := exec.Command(python, "-c", script, name, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(log); err == nil {
			return cmd.Process.Pid
		}
	}
	t.Fatal("the terminal's program did not start")
	return 0
}
