package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// capNetAdmin and keepMask mirror linux/capability.h and caps.DefaultKeep
// (chown, dac_override, dac_read_search, fowner, fsetid, kill,
// net_bind_service).
const (
	capNetAdmin = 12
	keepMask    = 0x43f
)

// ownCaps reads one capability set of this test process ("CapBnd").
func ownCaps(t *testing.T, set string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, set+":"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", set)
	return 0
}

// TestRootCapabilities runs a root tree that tries to change the network
// configuration — what a root tracecell used to let through, since netlink
// and interface ioctls are not file-system, exec or address calls — in a
// fresh network namespace, and looks at the namespace afterwards from
// outside the tree. By default the tree is started without CAP_NET_ADMIN
// (and every other capability outside the file-access set): nothing
// changes. With --keep-cap net_admin the same program changes the
// namespace, which shows that the check can see a change.
func TestRootCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the capabilities of a tree started by a root tracecell")
	}
	bnd := ownCaps(t, "CapBnd")
	if ownCaps(t, "CapEff")&(1<<capNetAdmin) == 0 {
		t.Skip("this root has no CAP_NET_ADMIN: nothing to drop")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to make a network namespace")
	}
	if out, err := exec.Command(unshare, "--net", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here: %v %s", err, out)
	}
	// A root process outside the tree, holding a secret in its environment.
	host := exec.Command("/bin/sleep", "300")
	host.Env = []string{"SECRET=tracecell-test"}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	hostPid := strconv.Itoa(host.Process.Pid)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		flags   []string
		change  string // result lines of the change
		show    string // the namespace afterwards, seen from outside the tree
		bounded uint64 // the tree's bounding set
	}{
		{"default", nil, "lo_up errno=EPERM\nadd_addr errno=EPERM\nenviron errno=EACCES", "lo down\naddr none", bnd & keepMask},
		{"keep net_admin", []string{"--keep-cap", "CAP_NET_ADMIN"}, "lo_up ok\nadd_addr ok\nenviron errno=EACCES", "lo up\naddr 10.9.9.9 127.0.0.1", bnd & (keepMask | 1<<capNetAdmin)},
		// What a root tree could do before: a host root process's
		// environment (API keys) is readable too.
		{"keep all", []string{"--keep-cap", "all"}, "lo_up ok\nadd_addr ok\nenviron ok", "lo up\naddr 10.9.9.9 127.0.0.1", bnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sbx := realDir(t)
			rp := filepath.Join(t.TempDir(), "report.json")
			// The tree and the check run in one new network namespace: the
			// check, a bare python after tracecell has exited, is the
			// ground truth.
			script := `"$1" run -q --write "$2" --report "$3" ` + strings.Join(tc.flags, " ") +
				` -- "$4" "$5" change "$6"; echo ---; "$4" "$5" show`
			r := execute(t, "", os.Environ(), []string{unshare, "--net", "--", "/bin/sh", "-c", script, "sh",
				tcBin, sbx, rp, python, pyScript("netadmin.py"), hostPid})
			change, show, ok := strings.Cut(r.stdout, "---\n")
			if !ok {
				t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
			}
			if got := strings.TrimSpace(show); got != tc.show {
				t.Errorf("namespace after the run:\n%s\nwant:\n%s\ntree said:\n%s", got, tc.show, change)
			}
			if !strings.Contains(change, tc.change+"\n") {
				t.Errorf("tree's calls:\n%s\nwant:\n%s", change, tc.change)
			}
			want := fmt.Sprintf("CapBnd %016x\n", tc.bounded)
			if !strings.Contains(change, want) {
				t.Errorf("tree's capability sets:\n%s\nwant %s", change, want)
			}
			if !strings.Contains(change, "CapAmb 0000000000000000") {
				t.Errorf("tree has ambient capabilities:\n%s", change)
			}
			b, err := os.ReadFile(rp)
			if err != nil {
				t.Fatalf("no report: %v\nstderr:\n%s", err, r.stderr)
			}
			var rep reportDoc
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if tc.name == "keep all" {
				if rep.Capabilities != nil {
					t.Errorf("report lists capabilities when none were dropped: %+v", rep.Capabilities)
				}
				return
			}
			if rep.Capabilities == nil {
				t.Fatalf("report has no capabilities: %s", b)
			}
			dropped := strings.Join(rep.Capabilities.Dropped, ",")
			kept := strings.Join(rep.Capabilities.Kept, ",")
			if strings.Contains(dropped, "net_admin") != (tc.name == "default") || !strings.Contains(dropped, "sys_admin") {
				t.Errorf("report: dropped %s, kept %s", dropped, kept)
			}
			if !strings.HasPrefix(kept, "chown,dac_override,") {
				t.Errorf("report: kept %s", kept)
			}
		})
	}
}

// TestRootWithoutSetpcap: a root tracecell whose bounding set lacks
// CAP_SETPCAP cannot shrink the tree's bounding set, and an exec as root
// would give the tree everything left in it. tracecell must refuse to start
// (status 125, saying what to do) rather than run the tree with them; with
// --keep-cap all nothing needs dropping and it runs.
func TestRootWithoutSetpcap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv(1) to start tracecell without CAP_SETPCAP")
	}
	if help, _ := exec.Command(setpriv, "--help").CombinedOutput(); !strings.Contains(string(help), "--bounding-set") {
		t.Skip("this setpriv(1) has no --bounding-set (busybox's, as in the arm64 VM)")
	}
	t.Parallel()
	sbx := realDir(t)
	marker := filepath.Join(sbx, "ran")
	for _, tc := range []struct {
		bounding string // setpriv --bounding-set
		flags    []string
		status   int
		hint     string // the flag the message suggests
	}{
		{"-setpcap", nil, 125, "--keep-cap all"},
		{"-setpcap", []string{"--keep-cap", "all"}, 0, ""},
		// A container running as root with only what it added (drop ALL,
		// add SYS_PTRACE): the message names exactly what to keep.
		{"-all,+sys_ptrace,+dac_override", nil, 125, "--keep-cap sys_ptrace"},
		{"-all,+sys_ptrace,+dac_override", []string{"--keep-cap", "sys_ptrace"}, 0, ""},
	} {
		os.Remove(marker)
		argv := append([]string{setpriv, "--bounding-set", tc.bounding, tcBin, "run", "-q", "--write", sbx}, tc.flags...)
		r := execute(t, "", os.Environ(), append(argv, "--", "/usr/bin/touch", marker))
		_, statErr := os.Stat(marker)
		if r.status != tc.status || (statErr == nil) != (tc.status == 0) {
			t.Fatalf("%s %q: status %d (want %d), command ran: %v\nstderr:\n%s", tc.bounding, tc.flags, r.status, tc.status, statErr == nil, r.stderr)
		}
		if tc.status == 125 && (!strings.Contains(r.stderr, "CAP_SETPCAP") || !strings.HasSuffix(strings.TrimSpace(r.stderr), tc.hint) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0) {
			t.Errorf("%s: stderr should be one line naming CAP_SETPCAP and ending in %s:\n%s", tc.bounding, tc.hint, r.stderr)
		}
	}
}

// TestRootTreeKeepsItsUid: a root tree cannot switch to another user. With
// setuid it could (a red team, session 23), and as that user it read the
// environment of that user's processes through /proc, which its dropped
// sys_ptrace keeps from it as root. --keep-cap setuid,setgid gives the
// switch back: the ground truth that the check can fail.
func TestRootTreeKeepsItsUid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the capabilities of a tree started by a root tracecell")
	}
	host := exec.Command("/bin/sleep", "300")
	host.Env = []string{"SECRET=tracecell-uid-test"}
	host.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	const script = `
import errno, os, sys
def res(f):
    try:
        return f()
    except OSError as e:
        return "errno=" + errno.errorcode[e.errno]
def switch():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    return "ok"
print("setuid", res(switch))
print("environ", res(lambda: "secret" if b"tracecell-uid-test" in open("/proc/%s/environ" % sys.argv[1], "rb").read() else "no secret"))
`
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"default", nil, "setuid errno=EPERM\nenviron errno=EACCES\n"},
		{"keep setuid", []string{"--keep-cap", "setuid", "--keep-cap", "setgid"}, "setuid ok\nenviron secret\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbx := realDir(t)
			argv := append([]string{tcBin, "run", "-q", "--write", sbx}, tc.flags...)
			argv = append(argv, "--", python, "-c", script, strconv.Itoa(host.Process.Pid))
			r := execute(t, "", os.Environ(), argv)
			if r.status != 0 || r.stdout != tc.want {
				t.Errorf("status %d, tree said:\n%s\nwant:\n%s\nstderr:\n%s", r.status, r.stdout, tc.want, r.stderr)
			}
		})
	}
}
