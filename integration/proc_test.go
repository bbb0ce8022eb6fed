package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tracecell's own /proc entries are closed to the tree (tracer.HideProc):
// with the default open reads of `tracecell run`, where a read-only open
// never stops at the tracer, the tree tries its parent's environment (the
// operator's, which the clean environment of the command is there to keep
// out), memory, maps and fds, and copies whatever it gets into the sandbox.
// Ground truth: the secret is nowhere in the sandbox afterwards.
//
// It fails on a dumpable tracecell only when run as an ordinary user (make
// test-nobody runs it as nobody): a root tree already gets EACCES
// there, since it holds fewer capabilities than tracecell and lacks
// CAP_SYS_PTRACE (cap_ptrace_access_check). As nobody on a kernel without
// Yama, the earlier build gave the tree tracecell's environ, maps, 132 KiB
// of its stack through mem, and its fds.
func TestTracecellProcHidden(t *testing.T) {
	sbx := realDir(t)
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	secret := "tracecell-secret-" + hex.EncodeToString(b[:])
	prog := `
import os
pp = os.getppid()
leak = open("leak", "wb")
def take(name, get):
    try:
        data = get()
        leak.write(data)
        print(name, "ok", len(data))
    except OSError as e:
        import errno
        print(name, errno.errorcode.get(e.errno, e.errno))
def mem():
    # The environment lies at the top of the stack: read all of it.
    with open("/proc/%d/maps" % pp) as m:
        lo, hi = [int(x, 16) for x in [l for l in m if "[stack]" in l][0].split()[0].split("-")]
    with open("/proc/%d/mem" % pp, "rb") as f:
        f.seek(lo)
        return f.read(hi - lo)
def fds():
    d = "/proc/%d/fd" % pp
    return "\n".join(os.readlink(os.path.join(d, n)) for n in os.listdir(d)).encode()
take("environ", lambda: open("/proc/%d/environ" % pp, "rb").read())
take("maps", lambda: open("/proc/%d/maps" % pp, "rb").read())
take("mem", mem)
take("fds", fds)
take("own-environ", lambda: open("/proc/self/environ", "rb").read())
`
	args := []string{tcBin, "run", "--quiet", "--write", sbx, "--", python, "-c", prog}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = sbx
	cmd.Env = append(os.Environ(), "TRACECELL_TEST_SECRET="+secret)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tracecell run: %v\n%s", err, out)
	}
	leak, err := os.ReadFile(filepath.Join(sbx, "leak"))
	if err != nil {
		t.Fatalf("the program left no leak file: %v\n%s", err, out)
	}
	if strings.Contains(string(leak), secret) {
		t.Fatalf("tracecell's environment reached the sandbox:\n%s", out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			got[f[0]] = f[1]
		}
	}
	for _, name := range []string{"environ", "maps", "mem", "fds"} {
		if got[name] != "EACCES" {
			t.Errorf("%s of tracecell: %q, want EACCES\n%s", name, got[name], out)
		}
	}
	if got["own-environ"] != "ok" {
		t.Errorf("the tree's own /proc/self/environ: %q, want ok\n%s", got["own-environ"], out)
	}
}
