package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// TestIoctlDecisions: the filter traps every ioctl command off its
// allow-list (issue 16), and decodeIoctl decides it. An unknown command is
// decided on what its fd points to: it reaches the kernel on a file of the
// sandbox (ENOTTY, the kernel's own answer) and on the tree's pipe, and is
// denied with ioctl-not-allowed on a read-only fd of a host file and on a
// socket; a whole-file-system btrfs command is forbidden even in the
// sandbox; an allowed query (TCGETS on a file: ENOTTY) never stops. With
// another thread running, an unknown command that is allowed runs frozen
// (the fd table is what was decided on).
func TestIoctlDecisions(t *testing.T) {
	needPython(t)
	sbx, host := t.TempDir(), t.TempDir()
	hostFile := filepath.Join(host, "data.csv")
	if err := os.WriteFile(hostFile, []byte("a,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostFile, _ = filepath.EvalSymlinks(hostFile)
	realSbx, _ := filepath.EvalSymlinks(sbx)
	script := `
import fcntl, os, socket, sys, threading
stop = threading.Event()
threading.Thread(target=stop.wait).start()
def try_(name, fd, cmd):
    try:
        fcntl.ioctl(fd, cmd, b"\0" * 64)
        print(name, "ok")
    except OSError as e:
        print(name, "errno", e.errno)
with open("mine.csv", "w") as f:
    f.write("x\n")
mine = os.open("mine.csv", os.O_RDONLY)
theirs = os.open(sys.argv[1], os.O_RDONLY)
r, w = os.pipe()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try_("sbx", mine, 0x7a7b)
try_("host", theirs, 0x7a7b)
try_("host-hi", theirs, 0x7a7b | 1 << 32)
try_("pipe", r, 0x7a7b)
try_("socket", s.fileno(), 0x8914)
try_("btrfs", mine, 0x40089413)
try_("tcgets", theirs, 0x5401)
stop.set()
`
	o := runTraced(t, sbx, nil, python, "-c", script, hostFile)
	if o.err != nil {
		t.Fatal(o.err)
	}
	const enotty, eperm = 25, 1
	want := fmt.Sprintf("sbx errno %d\nhost errno %d\nhost-hi errno %d\npipe errno %d\nsocket errno %d\nbtrfs errno %d\ntcgets errno %d\n",
		enotty, eperm, eperm, enotty, eperm, eperm, enotty)
	if o.stdout != want {
		t.Fatalf("stdout %q, want %q; stderr %q", o.stdout, want, o.stderr)
	}
	type den struct {
		flags string
		rule  policy.Rule
		path  string
		kind  syscalls.Kind
	}
	wantDen := []den{
		{"0x7a7b", policy.RuleIoctlNotAllowed, hostFile, syscalls.KindIoctl},
		{"0x7a7b", policy.RuleIoctlNotAllowed, hostFile, syscalls.KindIoctl},
		{"SIOCSIFFLAGS", policy.RuleIoctlNotAllowed, "", syscalls.KindIoctl},
		{"BTRFS_IOC_DEFAULT_SUBVOL", policy.RuleForbiddenSyscall, filepath.Join(realSbx, "mine.csv"), syscalls.KindForbidden},
	}
	if len(o.res.Denials) != len(wantDen) {
		t.Fatalf("denials %+v, want %d", o.res.Denials, len(wantDen))
	}
	for i, w := range wantDen {
		d := o.res.Denials[i]
		if d.Syscall != "ioctl" || d.Flags != w.flags || d.Rule != w.rule || d.Kind != w.kind || d.Errno != "EPERM" || len(d.Paths) != 1 ||
			(w.path != "" && d.Paths[0].Resolved != w.path) || !strings.Contains(d.Reason, w.flags) {
			t.Errorf("denial %d: %+v, want %+v", i, d, w)
		}
	}
	if !strings.HasPrefix(o.res.Denials[2].Paths[0].Special, "socket:") {
		t.Errorf("socket denial names %+v", o.res.Denials[2].Paths[0])
	}
	if o.res.Counts.Freezes < 2 {
		t.Errorf("%d freezes: the allowed unknown commands (sbx, pipe) ran with the other thread running", o.res.Counts.Freezes)
	}
}
