package integration

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/syscalls"
)

// kcmpPy compares its own memory (KCMP_VM) with a host process's and with
// its own child's, printing the result and errno of each.
const kcmpPy = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
nr, host = int(sys.argv[1]), int(sys.argv[2])
def kcmp(a, b):
    r = libc.syscall(nr, a, b, 1, 0, 0)  # KCMP_VM
    return r, (ctypes.get_errno() if r < 0 else 0)
print("host %d %d" % kcmp(os.getpid(), host))
pid = os.fork()
if pid == 0:
    time.sleep(5)
    os._exit(0)
r, e = kcmp(os.getpid(), pid)
print("child %d" % e)
os.kill(pid, 9)
os.waitpid(pid, 0)
`

// TestKcmpOutsideTree: kcmp(2) tells whether a process holds the same
// memory, files or file table as another; the tree may ask it of its own
// processes only. It was not trapped: a tree as nobody compared itself
// with a host process of the same user and got an answer, unreported (red
// team, round 67). Ground truth: the same script bare gets an answer.
func TestKcmpOutsideTree(t *testing.T) {
	nr, ok := syscalls.Native().Nr("kcmp")
	if !ok {
		t.Skip("no kcmp on this ABI")
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	host := sleeper.Process.Pid
	sbx := realDir(t)
	args := []string{python, "-c", kcmpPy, strconv.Itoa(nr), strconv.Itoa(host)}

	bare := execute(t, sbx, runEnv(t, sbx), args)
	if strings.Contains(bare.stdout, fmt.Sprintf("host -1 %d", syscall.ENOSYS)) {
		t.Skip("kcmp is not built into this kernel (CONFIG_KCMP)")
	}
	if !strings.HasPrefix(bare.stdout, "host ") || strings.HasPrefix(bare.stdout, "host -1") {
		t.Fatalf("bare: kcmp of the host process %d gave no answer, the test proves nothing: %q %s", host, bare.stdout, bare.stderr)
	}

	r := runTraced(t, sbx, runEnv(t, sbx), nil, args...)
	want := fmt.Sprintf("host -1 %d\nchild 0\n", syscall.EPERM)
	if r.stdout != want {
		t.Errorf("stdout %q, want %q (bare: %q)\nstderr:\n%s", r.stdout, want, bare.stdout, r.stderr)
	}
	if denialsFor(r.report, "kcmp", host) != 1 || len(r.report.Denials) != 1 {
		t.Errorf("want one denial of kcmp naming pid %d; denials:\n%s", host, r.report.denialList())
	}
}
