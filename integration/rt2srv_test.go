package integration

// Red team 2, server side: what the untraced server and worker-hosts write,
// and what one session learns of another through /proc. Each test checks
// its ground truth outside every tree: a file's content or mode as the test
// stats it, files another session's code would have made.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sessionCode is testdata/py/name with the given Python assignments put
// first (NAME = repr(value)).
func sessionCode(t *testing.T, name string, vars ...string) string {
	t.Helper()
	b, err := os.ReadFile(pyScript(name))
	if err != nil {
		t.Fatal(err)
	}
	var head strings.Builder
	for i := 0; i+1 < len(vars); i += 2 {
		fmt.Fprintf(&head, "%s = %q\n", vars[i], vars[i+1])
	}
	return head.String() + string(b)
}

// sessionState is the JSON of the session's global state (a dict).
func sessionState(t *testing.T, s *served, id string, v any) {
	t.Helper()
	r := s.exec(id, "import json\nprint(json.dumps(state))", 0)
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), v); err != nil {
		t.Fatalf("state of %s: %v: %s", id, err, r)
	}
}

// TestServeWorkerScriptOutsideWritableRoots (red team 2, F3 and F5): the
// server's TMPDIR lies in a --write root that every session shares. A
// session's code watches it for the worker-hosts' script directories, plants
// a symlink worker.py -> a host file (the untraced host wrote through it:
// truncate and overwrite as the server's user) and replaces worker.py (its
// code then ran in every later worker, other sessions'). The worker-hosts
// must make that directory where no tree can write: the session never sees
// one, the host file is unchanged, and the later sessions run the real
// worker.py.
func TestServeWorkerScriptOutsideWritableRoots(t *testing.T) {
	shared, err := os.MkdirTemp("", "tcshared")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if shared, err = filepath.EvalSymlinks(shared); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o755)
	victim := filepath.Join(t.TempDir(), "victim.txt")
	writeFile(t, victim, "VICTIM-ORIGINAL\n", 0o644)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TMPDIR=") {
			env = append(env, e)
		}
	}
	env = append(env, "TMPDIR="+shared)
	s := startServer(t, "serve", env, "--write", shared, "--pool-size", "1")
	s.create("attacker")
	const mark = "planted-by-attacker-"
	if r := s.exec("attacker", sessionCode(t, "rt2_plant_worker.py", "WATCH", shared, "VICTIM", victim, "MARK", mark), 0); r.result() != "'armed'" {
		t.Fatalf("the attacker's watcher: %s", r)
	}
	// Each new session takes the pooled worker and the pool starts
	// another: three worker-hosts start while the watcher runs.
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("later%d", i)
		s.create(id)
		r := s.exec(id, "import os\nopen('mine.txt', 'w').write('secret of "+id+"')\nsorted(os.listdir('.'))", 0)
		if r.Error != nil || !strings.Contains(r.result(), "mine.txt") {
			t.Fatalf("session %s: %s", id, r)
		}
	}
	time.Sleep(500 * time.Millisecond) // the last refill's host writes its script
	var st struct{ Seen, Linked, Replaced int }
	sessionState(t, s, "attacker", &st)
	if b, _ := os.ReadFile(victim); string(b) != "VICTIM-ORIGINAL\n" {
		t.Errorf("the host file %s outside every root was overwritten: %q", victim, b)
	}
	ents, _ := os.ReadDir(shared)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), mark) {
			t.Errorf("the attacker's code ran in another worker: %s in %s", e.Name(), shared)
		}
		if strings.HasPrefix(e.Name(), "tracecell-worker-") {
			t.Errorf("a worker-host's script directory %s is in the writable root %s", e.Name(), shared)
		}
	}
	if st.Seen != 0 {
		t.Errorf("the session saw %d worker-host script directories in the writable root %s (planted %d symlinks, replaced %d scripts)",
			st.Seen, shared, st.Linked, st.Replaced)
	}
	// The later workers run the real worker.py: a fresh session works.
	s.create("last")
	if r := s.exec("last", "1 + 1", 0); r.result() != "2" || r.Error != nil {
		t.Errorf("a session started after the attack: %s", r)
	}
}

// TestServeCopyTempSwap (red team 2, F10): the copy endpoint writes a
// temporary file in the sandbox; the session's code, left running in a
// thread, swaps it for a symlink to a host file while the server copies. The
// server must set the mode through its own descriptor (the host file's mode
// is unchanged) and refuse the copy (409 destination_changed), never
// renaming the symlink into place. The race is run up to 12 times, until
// the session reports a swap; a run with no swap at all fails (the test
// would not have tested anything).
func TestServeCopyTempSwap(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	writeFile(t, victim, "SHADOWLIKE\n", 0o600)
	os.Chmod(victim, 0o600)
	src := filepath.Join(dir, "tool.bin")
	f, err := os.OpenFile(src, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(48 << 20); err != nil { // large enough to be swapped mid-copy
		t.Fatal(err)
	}
	f.Close()
	os.Chmod(src, 0o755)
	s := startServer(t, "serve", nil, "--pool-size", "0")
	s.create("a")
	if r := s.exec("a", sessionCode(t, "rt2_copy_swap.py", "VICTIM", victim), 0); r.result() != "'armed'" {
		t.Fatalf("the session's watcher: %s", r)
	}
	var st struct{ Swapped int }
	refused := 0
	for i := 0; i < 12 && st.Swapped == 0; i++ {
		code, body := s.do("POST", "/v1/sessions/a/copy", fmt.Sprintf(`{"source":%q,"destination":"dst%d"}`, src, i))
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("copy %d (%d %s): the host file %s outside every root now has mode %v (%v), want 0600", i, code, body, victim, fi.Mode().Perm(), err)
		}
		if code == 409 && strings.Contains(string(body), "destination_changed") {
			refused++
		} else if code != 200 {
			t.Fatalf("copy %d: %d %s", i, code, body)
		}
		sessionState(t, s, "a", &st)
	}
	t.Logf("%d swaps, %d copies refused", st.Swapped, refused)
	if st.Swapped == 0 {
		t.Fatalf("the session's code never swapped the temporary file in 12 copies: the race was not run")
	}
	if refused == 0 {
		t.Errorf("the session swapped the temporary file, yet every copy answered 200")
	}
	r := s.exec("a", "import os\n[n for n in os.listdir('.') if n.startswith('dst') and os.path.islink(n)]", 0)
	if r.result() != "[]" {
		t.Errorf("a symlink the session swapped in was renamed into place: %s", r)
	}
}

// TestServeProcOtherWorkerState (red team 2, F7): from session B, the
// map_files listing (A's address-space layout) and fdinfo/N (A's eventfd
// counter, A's memfd position) of A's worker are proc-read denials, reported;
// B's own are readable.
func TestServeProcOtherWorkerState(t *testing.T) {
	s := startServer(t, "serve", nil, "--pool-size", "0")
	s.create("a")
	s.create("b")
	r := s.exec("a", "import os\nmfd = os.memfd_create('seca')\nos.write(mfd, b'x' * 424243)\nefd = os.eventfd(424242)\n(os.getpid(), mfd, efd)", 0)
	var pid, mfd, efd int
	if _, err := fmt.Sscanf(r.result(), "(%d, %d, %d)", &pid, &mfd, &efd); err != nil {
		t.Fatalf("session a: %s", r)
	}
	// Ground truth, read by the test outside every tree: what is there to leak.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, efd)); err != nil || !strings.Contains(string(b), "eventfd-count") {
		t.Skipf("no eventfd-count in fdinfo here (%v): %q", err, b)
	}
	for _, c := range []struct{ name, code, leak string }{
		{"fdinfo of an eventfd", fmt.Sprintf("open('/proc/%d/fdinfo/%d').read()", pid, efd), "67932"}, // 424242 in hex
		{"fdinfo of a memfd", fmt.Sprintf("open('/proc/%d/fdinfo/%d').read()", pid, mfd), "424243"},
		{"thread fdinfo", fmt.Sprintf("open('/proc/%d/task/%d/fdinfo/%d').read()", pid, pid, efd), "67932"},
		{"map_files listing", fmt.Sprintf("import os\nos.listdir('/proc/%d/map_files')", pid), "-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.exec("b", c.code, 0)
			if r.Error == nil || strings.Contains(r.result(), c.leak) {
				t.Fatalf("session b read it: %s", r)
			}
			if r.errName() != "PermissionError" || len(r.Denials) == 0 || r.Denials[0].Rule != "proc-read" ||
				!strings.HasPrefix(r.Denials[0].Paths[0].Resolved, fmt.Sprintf("/proc/%d/", pid)) {
				t.Fatalf("want a reported proc-read denial: %s", r)
			}
		})
	}
	r = s.exec("b", "import os\nefd = os.eventfd(7)\n(open('/proc/self/fdinfo/%d' % efd).read().count('eventfd-count'), len(os.listdir('/proc/self/map_files')) > 0)", 0)
	if r.result() != "(1, True)" || len(r.Denials) != 0 {
		t.Errorf("session b's own fdinfo and map_files: %s", r)
	}
}

// TestTildeUserPaths (red team 2, F4): a policy path in "~user" form is that
// user's home (deny_read ["~user/file"] denies the file, checked by reading
// it through the tree), and an unknown user is a one-line error naming the
// key, status 125, before anything runs.
func TestTildeUserPaths(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "unknown.yaml")
	writeFile(t, pol, "deny_read: [\"~tc-no-such-user-42/.bashrc\"]\n", 0o644)
	mkdir(t, filepath.Join(dir, "w"))
	marker := filepath.Join(dir, "w", "ran") // in the writable root: touch would make it
	cmd := exec.Command(tcBin, "run", "--write", filepath.Join(dir, "w"), "--policy", pol, "--", "/usr/bin/touch", marker)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 125 {
		t.Fatalf("unknown user: %v, want status 125: %s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "deny_read") || !strings.Contains(lines[0], `no user named "tc-no-such-user-42"`) {
		t.Errorf("want one line naming the key and the user: %q", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran despite the error")
	}
	// A real user: the current one, with a file in its home that the test
	// can make (root's /root; skipped where the home is not writable).
	t.Run("home", func(t *testing.T) {
		me, err := user.Current()
		if err != nil {
			t.Skipf("no current user: %v", err)
		}
		secret := filepath.Join(me.HomeDir, fmt.Sprintf(".tc-f4-%d", os.Getpid()))
		if err := os.WriteFile(secret, []byte("sk-home-secret\n"), 0o644); err != nil {
			t.Skipf("cannot make a file in %s's home %s: %v", me.Username, me.HomeDir, err)
		}
		t.Cleanup(func() { os.Remove(secret) })
		pol := filepath.Join(dir, "home.yaml")
		writeFile(t, pol, fmt.Sprintf("deny_read: [\"~%s/%s\"]\n", me.Username, filepath.Base(secret)), 0o644)
		cwd := filepath.Join(dir, "cwd")
		mkdir(t, cwd)
		cmd := exec.Command(tcBin, "run", "--write", filepath.Join(dir, "w"), "--policy", pol, "--", "/bin/cat", secret)
		cmd.Dir = cwd
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "sk-home-secret") || err == nil {
			t.Errorf("deny_read ~%s/%s: the file was read: %v %s", me.Username, filepath.Base(secret), err, out)
		}
		if !strings.Contains(string(out), "matches deny-read "+secret) {
			t.Errorf("want a reported deny-read denial of %s: %s", secret, out)
		}
	})
}

func errorsAs(err error, ee **exec.ExitError) bool {
	x, ok := err.(*exec.ExitError)
	if ok {
		*ee = x
	}
	return ok && x.Sys().(syscall.WaitStatus).Exited()
}
