package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A process in a mount namespace of its own (unshare -Urm, as any user may
// where user namespaces are enabled; flatpak, bwrap and rootless podman do
// the same) has mounts tracecell's namespace does not see. The text of its
// /proc links (root, cwd, fd/N), and of the tree's own cwd or dirfd once
// they point there, is a path in that namespace: the red team overwrote such
// a process's private /dev/shm file through /proc/<pid>/root/dev/shm/...,
// which tracecell took for a fresh create in the host's /dev/shm scratch
// directory, and files on a tmpfs mounted at a path inside the sandbox, only
// in that namespace.
//
// The victim mounts a tmpfs over /dev/shm and one over <sandbox>/shared (an
// empty directory on tracecell's side), fills them, and sleeps there. The
// tree tries to write them every way: through /proc/V/root and /proc/V/cwd,
// through an O_PATH dirfd of a directory or of the root there (openat and
// fchdir), through a chdir there, and through a dirfd it inherited (stdin:
// the victim's root, opened by the test, standing for one passed over a
// socket). Ground truth: the victim's files, read through /proc/V/root
// afterwards, are unchanged and no new file appeared on either side; the
// report names a denial for each attempt. A bare run first shows every
// attempt writes without tracecell.
func TestOtherMountNamespace(t *testing.T) {
	if noPython != "" {
		t.Skip(noPython)
	}
	sbx := realDir(t)
	mkdir(t, filepath.Join(sbx, "shared"))
	shared := filepath.Join(sbx, "shared")
	tag := fmt.Sprintf("tc-mntns-%d-%d", os.Getpid(), time.Now().UnixNano())
	// Files in the victim's private /dev/shm, one per attempt that aims
	// there.
	shmNames := []string{tag + "-root", tag + "-opath", tag + "-fchdir", tag + "-stdin"}
	// Files in the victim's tmpfs at <sandbox>/shared.
	sharedNames := []string{"inside", "cwdfile"}
	v := mntnsVictim(t, shared, shmNames, sharedNames)
	vroot := fmt.Sprintf("/proc/%d/root", v)

	// What the victim's files hold; nothing else may be there after a run.
	victimFiles := func() map[string]string {
		m := map[string]string{}
		for _, d := range []string{"/dev/shm", shared} {
			ents, err := os.ReadDir(vroot + d)
			if err != nil {
				t.Fatalf("read the victim's %s: %v", d, err)
			}
			for _, e := range ents {
				if d == "/dev/shm" && !strings.HasPrefix(e.Name(), tag) {
					continue
				}
				b, _ := os.ReadFile(filepath.Join(vroot+d, e.Name()))
				m[filepath.Join(d, e.Name())] = string(b)
			}
		}
		return m
	}
	restore := func() {
		for _, d := range []string{"/dev/shm", shared} {
			ents, _ := os.ReadDir(vroot + d)
			for _, e := range ents {
				if d == shared || strings.HasPrefix(e.Name(), tag) {
					os.Remove(filepath.Join(vroot+d, e.Name()))
				}
			}
		}
		for _, n := range shmNames {
			writeFile(t, vroot+"/dev/shm/"+n, "victim\n", 0o600)
		}
		for _, n := range sharedNames {
			writeFile(t, vroot+shared+"/"+n, "victim\n", 0o600)
		}
	}
	original := victimFiles()
	if len(original) != len(shmNames)+len(sharedNames) {
		t.Fatalf("the victim's files: %v", original)
	}
	t.Cleanup(func() {
		for _, n := range shmNames {
			os.Remove("/dev/shm/" + n) // tracecell's side, in case
		}
	})

	script := filepath.Join(t.TempDir(), "mntns.py")
	writeFile(t, script, mntnsProgram, 0o644)
	// The inherited dirfd is stdin moved to fd 3 (Python refuses a
	// directory for stdin).
	argv := []string{"/bin/sh", "-c", `exec "$0" "$@" 3<&0 </dev/null`,
		python, script, fmt.Sprint(v), shared, strings.Join(shmNames, ",")}
	env := runEnv(t, sbx)
	// Without tracecell every attempt writes into the victim's namespace:
	// the case is real on this machine.
	bare := runWithStdin(t, vroot, env, argv)
	attempts := parseAttempts(t, bare.stdout)
	for name, res := range attempts {
		if res != "wrote" {
			t.Errorf("bare run: %s: %s (want wrote: the attempt is no way out on this machine)", name, res)
		}
	}
	if changed := victimFiles(); fmt.Sprint(changed) == fmt.Sprint(original) {
		t.Fatalf("bare run changed nothing in the victim's namespace:\n%s%s", bare.stdout, bare.stderr)
	}
	if t.Failed() {
		t.FailNow()
	}
	restore()
	if got := victimFiles(); fmt.Sprint(got) != fmt.Sprint(original) {
		t.Fatalf("restore: %v, want %v", got, original)
	}

	rp := filepath.Join(t.TempDir(), "report.json")
	args := []string{tcBin, "run", "--write", sbx, "--report", rp, "--allow-exec", python}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	traced := runWithStdin(t, vroot, os.Environ(), append(append(args, "--"), argv...))
	var rep reportDoc
	if b, err := os.ReadFile(rp); err != nil {
		t.Fatalf("no report (status %d): %v\n%s", traced.status, err, traced.stderr)
	} else if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	t.Logf("traced:\n%s", traced.stdout)

	// Ground truth.
	if got := victimFiles(); fmt.Sprint(got) != fmt.Sprint(original) {
		t.Errorf("the victim's files changed under tracecell:\n got %v\nwant %v", got, original)
	}
	if ents, _ := os.ReadDir(shared); len(ents) != 0 {
		t.Errorf("tracecell's side of %s is not empty: %v", shared, ents)
	}
	for _, n := range shmNames {
		if _, err := os.Lstat("/dev/shm/" + n); err == nil {
			t.Errorf("/dev/shm/%s appeared on tracecell's side", n)
		}
	}

	// Every attempt failed, and the report names a denial for it: one
	// whose path was given as the attempt's target, or as the way it took
	// to get there (an O_PATH open of a directory in the namespace).
	attempts = parseAttempts(t, traced.stdout)
	if len(attempts) != len(mntnsAttempts) {
		t.Fatalf("traced run: %d attempts, want %d\nstdout:\n%s\nstderr:\n%s", len(attempts), len(mntnsAttempts), traced.stdout, traced.stderr)
	}
	for _, a := range mntnsAttempts {
		res := attempts[a.name]
		if res == "wrote" || !strings.Contains(res, "EACCES") {
			t.Errorf("%s: %s, want EACCES", a.name, res)
		}
		found := false
		for _, e := range rep.Denials {
			for _, p := range e.Paths {
				for _, g := range a.givens(v, shared, shmNames) {
					if p.Given == g && e.Errno == "EACCES" && e.Decision == "deny" {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no denial in the report for %q\ndenials:\n%s", a.name, a.givens(v, shared, shmNames), rep.denialList())
		}
	}
	for _, e := range rep.Denials {
		if e.Rule != "unresolvable-path" {
			t.Errorf("denial by rule %q, want unresolvable-path: %v", e.Rule, e)
		}
	}
}

// mntnsAttempts are the program's attempts (mntnsProgram) and the paths a
// denial of each may be given: its target, or what it opened to get there.
var mntnsAttempts = []struct {
	name   string
	givens func(v int, shared string, shm []string) []string
}{
	{"root-shm", func(v int, _ string, shm []string) []string {
		return []string{fmt.Sprintf("/proc/%d/root/dev/shm/%s", v, shm[0])}
	}},
	{"root-sbx", func(v int, shared string, _ []string) []string {
		return []string{fmt.Sprintf("/proc/%d/root%s/inside", v, shared)}
	}},
	{"cwd", func(v int, _ string, _ []string) []string { return []string{fmt.Sprintf("/proc/%d/cwd/cwdfile", v)} }},
	{"opath-dirfd", func(v int, shared string, _ []string) []string {
		return []string{"viaopath", fmt.Sprintf("/proc/%d/root%s", v, shared)}
	}},
	{"opath-root", func(v int, _ string, shm []string) []string {
		return []string{"dev/shm/" + shm[1], fmt.Sprintf("/proc/%d/root", v)}
	}},
	{"fchdir-root", func(v int, _ string, shm []string) []string {
		return []string{"dev/shm/" + shm[2], fmt.Sprintf("/proc/%d/root", v)}
	}},
	{"chdir-cwd", func(v int, _ string, _ []string) []string { return []string{"viachdir"} }},
	{"stdin-dirfd", func(v int, _ string, shm []string) []string { return []string{"dev/shm/" + shm[3]} }},
	{"stdin-fchdir", func(v int, shared string, _ []string) []string { return []string{shared[1:] + "/viafchdir"} }},
}

// mntnsProgram tries each attempt and prints "<name>: wrote" or
// "<name>: <errno>". Its fd 3 is a directory fd of the victim's root.
const mntnsProgram = `
import errno, os, sys
V, shared, shm = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
root = "/proc/%s/root" % V
home = os.getcwd()

def write(p, dir_fd=None):
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=dir_fd)
    try:
        os.write(fd, b"PWNED\n")
    finally:
        os.close(fd)

def attempt(name, fn):
    try:
        fn()
        res = "wrote"
    except OSError as e:
        res = errno.errorcode.get(e.errno, str(e.errno))
    finally:
        os.chdir(home)
    print("%s: %s" % (name, res), flush=True)

def opath(p):
    return os.open(p, os.O_PATH | os.O_DIRECTORY)

def fchdir_root():
    os.fchdir(opath(root))
    write("dev/shm/" + shm[2])

def chdir_cwd():
    os.chdir("/proc/%s/cwd" % V)
    write("viachdir")

def stdin_fchdir():
    os.fchdir(3)
    write(shared[1:] + "/viafchdir")

attempt("root-shm", lambda: write(root + "/dev/shm/" + shm[0]))
attempt("root-sbx", lambda: write(root + shared + "/inside"))
attempt("cwd", lambda: write("/proc/%s/cwd/cwdfile" % V))
attempt("opath-dirfd", lambda: write("viaopath", dir_fd=opath(root + shared)))
attempt("opath-root", lambda: write("dev/shm/" + shm[1], dir_fd=opath(root)))
attempt("fchdir-root", fchdir_root)
attempt("chdir-cwd", chdir_cwd)
attempt("stdin-dirfd", lambda: write("dev/shm/" + shm[3], dir_fd=3))
attempt("stdin-fchdir", stdin_fchdir)
`

func parseAttempts(t *testing.T, stdout string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if name, res, ok := strings.Cut(l, ": "); ok {
			m[name] = res
		}
	}
	return m
}

// mntnsVictim starts the victim: in a user and mount namespace of its own it
// mounts a tmpfs over /dev/shm and one over shared, writes "victim\n" to
// /dev/shm/<shm...> and shared/<files...>, and sleeps with shared as its cwd.
// It skips the test when this system does not let an ordinary process do so.
func mntnsVictim(t *testing.T, shared string, shm, files []string) int {
	t.Helper()
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("user namespaces are disabled (user.max_user_namespaces=0)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to start a process in a mount namespace of its own")
	}
	var sh strings.Builder
	fmt.Fprintf(&sh, "set -e; mount -t tmpfs none /dev/shm; mount -t tmpfs none %q; cd %q\n", shared, shared)
	for _, n := range shm {
		fmt.Fprintf(&sh, "echo victim > /dev/shm/%q; chmod 600 /dev/shm/%q\n", n, n)
	}
	for _, n := range files {
		fmt.Fprintf(&sh, "echo victim > %q; chmod 600 %q\n", n, n)
	}
	sh.WriteString("echo > /dev/shm/ready-" + shm[0] + "\nexec sleep 100000\n")
	cmd := exec.Command(unshare, "-Urm", "sh", "-c", sh.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("unshare -Urm: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	v := cmd.Process.Pid
	ready := fmt.Sprintf("/proc/%d/root/dev/shm/ready-%s", v, shm[0])
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if st := procState(v); st == "" || st == "Z" || time.Now().After(deadline) {
			t.Skipf("no process in a mount namespace of its own here (unshare -Urm: state %q): %s", st, out.String())
		}
	}
	os.Remove(ready)
	return v
}

// runWithStdin runs argv with a directory fd of stdinDir as its stdin.
func runWithStdin(t *testing.T, stdinDir string, env, argv []string) result {
	t.Helper()
	in, err := os.Open(stdinDir)
	if err != nil {
		t.Fatalf("open %s: %v", stdinDir, err)
	}
	defer in.Close()
	return executeIn(t, "", env, argv, in)
}
