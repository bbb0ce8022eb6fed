package integration

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracecell/tracecell/report"
	"golang.org/x/sys/unix"
)

// TestOutputLinks: a traced program leaves symlinks in its sandbox that
// point at host files and directories; a later run names that sandbox path
// for --trace or --report. tracecell's own writes are not checked by the
// policy (and tracecell may run as root), so they must never follow such a
// link: the run fails with one line naming the option, and the host files
// are untouched (checked here with stat and read, outside the tree).
// tracecell up to 659018d truncated the --trace target and created the
// --report target. Since round 50 of the red team no output may lie inside
// a root at all; a symlinked directory on the way is still named as such.
func TestOutputLinks(t *testing.T) {
	host := realDir(t) // stands for the host outside the sandbox
	sbx := realDir(t)
	victim := filepath.Join(host, "victim")
	const content = "host data\n"
	if err := os.WriteFile(victim, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(host, "created")
	hostDir := filepath.Join(host, "dir")
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, flag string
		target     string // what the planted link (named tc.name) points at
		rest       string // appended to the link's path
		errHas     string
	}{
		{"trace-to-file", "--trace", victim, "", "is inside the writable root"},
		{"trace-to-missing", "--trace", missing, "", "is inside the writable root"},
		{"trace-through-dir", "--trace", hostDir, "/trace.jsonl", "is a symbolic link inside the writable root"},
		{"report-to-file", "--report", victim, "", "is inside the writable root"},
		{"report-to-missing", "--report", missing, "", "is inside the writable root"},
		{"report-through-dir", "--report", hostDir, "/report.json", "is a symbolic link inside the writable root"},
		// ".." after a symlink: the kernel would apply it to the link's
		// target (host/..); tracecell cleans the path first, which is the
		// sandbox.
		{"report-dotdot", "--report", hostDir, "/../r.json", "is inside the writable root"},
		// The command cannot start (127): the report saying why is not
		// written there either.
		{"report-failed-start", "--report", missing, "", "is inside the writable root"},
	}

	// Run 1: the tree plants one link per case, each a fresh one (an old
	// tracecell renames its report over the link).
	args := []string{tcBin, "run", "--write", sbx, "--", python, pyScript("plant_links.py")}
	for _, tc := range cases {
		args = append(args, tc.name+"="+tc.target)
	}
	r := execute(t, "", os.Environ(), args)
	if r.status != 0 {
		t.Fatalf("run 1: status %d\nstderr:\n%s", r.status, r.stderr)
	}
	for _, tc := range cases {
		if _, err := os.Readlink(filepath.Join(sbx, tc.name)); err != nil {
			t.Fatalf("run 1 planted no %s: %v\nstdout:\n%s\nstderr:\n%s", tc.name, err, r.stdout, r.stderr)
		}
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sbx + "/" + tc.name + tc.rest // unclean on purpose in report-dotdot
			// Run 2: tracecell is told to write its own file there.
			cmd, status := "/bin/true", 125
			if tc.name == "report-failed-start" {
				cmd, status = "tracecell-no-such-command", 127
			}
			r := execute(t, "", os.Environ(), []string{tcBin, "run", "--write", sbx, tc.flag, p, "--", cmd})

			// Ground truth, outside the tree.
			if b, err := os.ReadFile(victim); err != nil || string(b) != content {
				if len(b) > 80 {
					b = append(b[:80:80], "..."...)
				}
				t.Errorf("%s: host file %s is now %q (%v), want %q", tc.flag, victim, b, err, content)
				os.WriteFile(victim, []byte(content), 0o644)
			}
			if _, err := os.Lstat(missing); err == nil {
				t.Errorf("%s: tracecell created the link's target %s", tc.flag, missing)
				os.Remove(missing)
			}
			if ents, _ := os.ReadDir(hostDir); len(ents) != 0 {
				t.Errorf("%s: tracecell wrote into the host directory %s through the link: %v", tc.flag, hostDir, ents)
				for _, e := range ents {
					os.Remove(filepath.Join(hostDir, e.Name()))
				}
			}
			if ents, _ := os.ReadDir(host); len(ents) != 2 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("host directory %s holds %v, want only victim and dir", host, names)
				for _, n := range names {
					if n != "victim" && n != "dir" {
						os.RemoveAll(filepath.Join(host, n))
					}
				}
			}

			if tc.errHas == "" {
				if r.status != 0 {
					t.Fatalf("status %d, want 0\nstderr:\n%s", r.status, r.stderr)
				}
				if _, err := os.Stat(filepath.Join(sbx, "r.json")); err != nil {
					t.Errorf("report not at the cleaned path %s: %v", filepath.Join(sbx, "r.json"), err)
				}
				return
			}
			if r.status != status {
				t.Errorf("status %d, want %d\nstderr:\n%s", r.status, status, r.stderr)
			}
			// One line about the link (a failed start adds its own).
			found := false
			for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				found = found || strings.Contains(l, tc.flag) && strings.Contains(l, tc.errHas)
			}
			if !found || status == 125 && strings.Contains(strings.TrimSpace(r.stderr), "\n") {
				t.Errorf("stderr %q: want one line naming %s and containing %q", r.stderr, tc.flag, tc.errHas)
			}
			if l, err := os.Readlink(filepath.Join(sbx, tc.name)); err != nil || l != tc.target {
				t.Errorf("the link %s was replaced: %q %v", tc.name, l, err)
			}
		})
	}
}

// TestRunStopSignals: each signal that ends `tracecell run` from outside
// (the terminal's Ctrl-C and Ctrl-\, a hang-up, a kill) kills the tree,
// writes the report and exits 128+N. SIGQUIT was left to Go's default,
// which dumped tracecell's goroutines and registers on the command's
// stderr (to the model, through a PTY's Ctrl-\) and exited 2 with no
// report and the tree's denials lost (a red-team finding).
func TestRunStopSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			dir := realDir(t)
			rep := filepath.Join(dir, "r.json")
			pidFile := filepath.Join(dir, "sbx", "pid")
			os.Mkdir(filepath.Join(dir, "sbx"), 0o755)
			cmd := exec.Command(tcBin, "run", "--quiet", "--write", filepath.Join(dir, "sbx"), "--report", rep, "--allow-exec", "sleep", "--",
				"/bin/sh", "-c", `echo $$ > "$1"; exec sleep 60`, "sh", pidFile)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var tree int
			for deadline := time.Now().Add(10 * time.Second); tree == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				b, _ := os.ReadFile(pidFile)
				tree, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			if tree == 0 {
				cmd.Process.Kill()
				t.Fatalf("the tree did not start: %s", stderr.String())
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Errorf("tracecell exited %v, want status %d", err, 128+int(sig))
			}
			if strings.Contains(stderr.String(), "goroutine ") {
				t.Errorf("tracecell dumped its goroutines:\n%.600s", stderr.String())
			}
			if err := unix.Kill(tree, 0); err == nil {
				unix.Kill(tree, unix.SIGKILL)
				t.Errorf("the tree's process %d outlived tracecell", tree)
			}
			b, err := os.ReadFile(rep)
			var r report.Report
			if err != nil || json.Unmarshal(b, &r) != nil || r.Exit.Status != 128+int(sig) {
				t.Errorf("report: %v, exit %+v\n%.400s", err, r.Exit, b)
			}
		})
	}
}

// TestClosedStderrKeepsReport: the operator's reader of tracecell's stderr
// goes away (`2>&1 | head -n 3`) while denials are being noticed there: the
// run goes on, and the report is written with every denial. SIGPIPE killed
// tracecell with a 0-byte report (a red-team finding).
func TestClosedStderrKeepsReport(t *testing.T) {
	dir := realDir(t)
	sbx, rep := filepath.Join(dir, "sbx"), filepath.Join(dir, "r.json")
	os.Mkdir(sbx, 0o755)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody reads
	cmd := exec.Command(tcBin, "run", "--write", sbx, "--report", rep, "--",
		"/bin/sh", "-c", `exec 2>/dev/null; i=0; while [ $i -lt 50 ]; do echo x > /etc/tc-denied-$i; i=$((i+1)); done; echo done > "$1"/done`, "sh", sbx)
	cmd.Stderr = w
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Errorf("tracecell: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sbx, "done")); err != nil {
		t.Errorf("the command did not run to its end: %v", err)
	}
	// The same before the run starts: the notice of a sandbox made for the
	// run is written before the command runs.
	r2, w2, _ := os.Pipe()
	r2.Close()
	rep2 := filepath.Join(dir, "r2.json")
	cmd2 := exec.Command(tcBin, "run", "--report", rep2, "--", "/bin/true")
	cmd2.Stderr = w2
	if err := cmd2.Run(); err != nil {
		t.Errorf("tracecell with a fresh sandbox and a closed stderr: %v", err)
	}
	w2.Close()
	var r2r report.Report
	if b, err := os.ReadFile(rep2); err != nil || json.Unmarshal(b, &r2r) != nil {
		t.Errorf("no report when stderr closed before the run: %v", err)
	} else if r2r.Sandbox != "" {
		os.RemoveAll(r2r.Sandbox) // made for the run, kept after it
	}
	b, err := os.ReadFile(rep)
	var rr report.Report
	if err != nil || json.Unmarshal(b, &rr) != nil || rr.Counts.Denied != 50 {
		t.Errorf("report: %v, %d denied\n%.300s", err, rr.Counts.Denied, b)
	}
}

// TestOutputThroughBindMount: a bind mount shows a writable root (or a
// directory inside one) at another path; a report or trace named through
// it is refused like one named in the root itself (red team, round 51:
// --report alias/out/r.json was accepted, and the tree renamed out/ away and
// left a forged report there). Root only: the mounts are made in a mount
// namespace of their own (unshare -m), which ends with the test.
func TestOutputThroughBindMount(t *testing.T) {
	base := mountNSDirs(t, "sbx/out", "alias", "alias-out", "alias\u3000x")
	sbx, alias, aliasOut := filepath.Join(base, "sbx"), filepath.Join(base, "alias"), filepath.Join(base, "alias-out")
	for _, tc := range []struct{ name, flag, path string }{
		{"report-via-bind-of-root", "--report", filepath.Join(alias, "out", "r.json")},
		{"trace-via-bind-of-root", "--trace", filepath.Join(alias, "t.jsonl")},
		{"report-via-bind-of-subdir", "--report", filepath.Join(aliasOut, "r.json")},
		// Round 57: a mount point whose name holds an ideographic space
		// was cut by strings.Fields and not seen.
		{"trace-via-bind-named-with-u3000", "--trace", filepath.Join(base, "alias\u3000x", "t.jsonl")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `mount --bind "$1" "$2" && mount --bind "$1/out" "$3" && mount --bind "$1" "$2` + "\u3000" + `x" && exec "$4" run -q --write "$1" "$5" "$6" -- /bin/true`
			r := execute(t, "", os.Environ(), []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", sbx, alias, aliasOut, tcBin, tc.flag, tc.path})
			if r.status != 125 || !strings.Contains(r.stderr, "is inside the writable root "+sbx) {
				t.Errorf("status %d, stderr %q; want 125 and the root named", r.status, r.stderr)
			}
			if ents, _ := os.ReadDir(filepath.Join(sbx, "out")); len(ents) != 0 {
				t.Errorf("%s holds %v", filepath.Join(sbx, "out"), ents)
			}
		})
	}
}

// TestOutputThroughOverlay: the files of an overlay mount's merged view are
// also in its upper directory; with the merged view as the writable root,
// a trace or report in the upper directory is the tree's to rewrite
// through the merged view, and the other way round (red team, round 52).
// Root only, in a mount namespace of its own.
func TestOutputThroughOverlay(t *testing.T) {
	base := mountNSDirs(t, "lower", "upper", "work", "merged")
	lower, upper, work, merged := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, tc := range []struct{ name, root, flag, path string }{
		{"trace-in-upper", merged, "--trace", filepath.Join(upper, "t.jsonl")},
		{"report-in-upper", merged, "--report", filepath.Join(upper, "r.json")},
		{"trace-in-merged", upper, "--trace", filepath.Join(merged, "t.jsonl")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$4" || exit 99; exec "$5" run -q --write "$6" "$7" "$8" -- /bin/true`
			r := execute(t, "", os.Environ(), []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", lower, upper, work, merged, tcBin, tc.root, tc.flag, tc.path})
			if r.status == 99 {
				t.Skipf("no overlayfs here: %s", r.stderr)
			}
			if r.status != 125 || !strings.Contains(r.stderr, "is inside the writable root "+tc.root) {
				t.Errorf("status %d, stderr %q; want 125 and the root named", r.status, r.stderr)
			}
		})
	}
}

// mountNSDirs skips the test unless it can make mounts in a mount namespace
// of its own (root, unshare(1)), and makes the directories dirs (relative)
// in a new directory, which it returns.
func mountNSDirs(t *testing.T, dirs ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	base := realDir(t)
	for _, d := range dirs {
		mkdirs(t, filepath.Join(base, d))
	}
	return base
}

// TestOutputOnSubmountOfRoot: a file system mounted inside a writable root
// (a volume at sbx/data) and also shown elsewhere (outputs/): an output
// there is the tree's to rewrite through sbx/data, and is refused (red
// team, round 53). So is one in an overlay's upper directory named through
// a symlink in the mount options.
func TestOutputOnSubmountOfRoot(t *testing.T) {
	base := mountNSDirs(t, "sbx/data", "sbx/merged", "sbx/host", "sbx/up/upper", "sbx/up/work", "outputs", "out2", "ext",
		"ov/lower", "ov/real/upper", "ov/work", "ov/merged", "ov2/upper", "ov2/work", "ov2/merged",
		"b/real/sb/up", "b/real/sb/work", "b/alias", "b/merged")
	if err := os.Symlink(filepath.Join(base, "ov", "real"), filepath.Join(base, "ov", "link")); err != nil {
		t.Fatal(err)
	}
	sbx, merged := filepath.Join(base, "sbx"), filepath.Join(base, "ov", "merged")
	for _, tc := range []struct {
		name, setup, root, flag, path string
		want                          int // status
	}{
		{"trace-on-volume-also-in-root", `mount -t tmpfs tmpfs "$1/sbx/data" && mount --bind "$1/sbx/data" "$1/outputs"`, sbx, "--trace", filepath.Join(base, "outputs", "t.jsonl"), 125},
		{"report-on-volume-also-in-root", `mount -t tmpfs tmpfs "$1/sbx/data" && mkdir "$1/sbx/data/logs" && mount --bind "$1/sbx/data" "$1/outputs"`, sbx, "--report", filepath.Join(base, "outputs", "logs", "r.json"), 125},
		{"trace-in-upper-named-through-a-symlink", `mount -t overlay overlay -o "lowerdir=$1/ov/lower,upperdir=$1/ov/link/upper,workdir=$1/ov/work" "$1/ov/merged"`, merged, "--trace", filepath.Join(base, "ov", "real", "upper", "t.jsonl"), 125},
		// Round 54: an overlay mounted below the root, its upper layer
		// outside; an overlay whose upper layer is inside the root, its
		// merged view outside; a bind mount of one file of the root.
		{"trace-in-upper-of-overlay-below-root", `mount -t overlay overlay -o "lowerdir=$1/ov/lower,upperdir=$1/ov2/upper,workdir=$1/ov2/work" "$1/sbx/merged"`, sbx, "--trace", filepath.Join(base, "ov2", "upper", "t.jsonl"), 125},
		{"trace-in-merged-of-upper-in-root", `mount -t overlay overlay -o "lowerdir=$1/ov/lower,upperdir=$1/sbx/up/upper,workdir=$1/sbx/up/work" "$1/ov2/merged"`, sbx, "--trace", filepath.Join(base, "ov2", "merged", "t.jsonl"), 125},
		{"trace-is-a-bind-of-a-file-in-root", `: >"$1/sbx/t.jsonl" && : >"$1/out2/t.jsonl" && mount --bind "$1/sbx/t.jsonl" "$1/out2/t.jsonl"`, sbx, "--trace", filepath.Join(base, "out2", "t.jsonl"), 125},
		// Round 55: the overlay names its upper layer (inside the root)
		// through a bind mount of the root's parent.
		{"trace-in-merged-of-upper-named-through-a-bind", `mount --bind "$1/b/real" "$1/b/alias" && mount -t overlay overlay -o "lowerdir=$1/ov/lower,upperdir=$1/b/alias/sb/up,workdir=$1/b/alias/sb/work" "$1/b/merged"`, filepath.Join(base, "b", "real", "sb"), "--trace", filepath.Join(base, "b", "merged", "t.jsonl"), 125},
		// A read-only view below the root lets the tree change nothing:
		// an output elsewhere on that file system is fine.
		{"read-only-bind-below-root", `mount --bind "$1/ext" "$1/sbx/host" && mount -o remount,bind,ro "$1/sbx/host"`, sbx, "--trace", filepath.Join(base, "ext", "t.jsonl"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := tc.setup + ` || exit 99; exec "$2" run -q --write "$3" "$4" "$5" -- /bin/true`
			r := execute(t, "", os.Environ(), []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", base, tcBin, tc.root, tc.flag, tc.path})
			if r.status == 99 {
				t.Skipf("mount failed: %s", r.stderr)
			}
			if tc.want == 0 && r.status != 0 {
				t.Errorf("status %d, stderr %q; want 0", r.status, r.stderr)
			}
			if tc.want != 0 && (r.status != tc.want || !strings.Contains(r.stderr, "is inside the writable root "+tc.root)) {
				t.Errorf("status %d, stderr %q; want %d and the root named", r.status, r.stderr, tc.want)
			}
		})
	}
}

// TestServeStateDirViewInRoot: tracecell serve refuses a shared --write root
// that shows the state directory through a mount (one volume mounted as
// both): every session could write the others' sandboxes and reach the
// server's socket (red team, round 53).
func TestServeStateDirViewInRoot(t *testing.T) {
	base := mountNSDirs(t, "state", "shared/view")
	state, shared := filepath.Join(base, "state"), filepath.Join(base, "shared")
	os.Chmod(state, 0o700)
	script := `mount --bind "$1" "$2/view" || exit 99; exec timeout 20 "$3" serve --state-dir "$1" --write "$2"`
	r := execute(t, "", os.Environ(), []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", state, shared, tcBin})
	if r.status == 99 {
		t.Skipf("mount failed: %s", r.stderr)
	}
	// Refused for the state directory, or first for its socket, which
	// lies in it.
	if r.status == 0 || r.status == 124 || !strings.Contains(r.stderr, "overlaps the state directory") && !strings.Contains(r.stderr, "tracecell.sock: inside the writable root "+shared) {
		t.Errorf("status %d, stderr %q; want a refusal naming the state directory or its socket", r.status, r.stderr)
	}
}

// TestServeStateDirOverlayInRoot: an overlay mounted inside a shared --write
// root whose upper layer holds the state directory shows every session's
// sandbox to every session (red team, round 54); refused at start.
func TestServeStateDirOverlayInRoot(t *testing.T) {
	base := mountNSDirs(t, "up/state", "lower", "work", "shared/m")
	state, shared := filepath.Join(base, "up", "state"), filepath.Join(base, "shared")
	os.Chmod(state, 0o700)
	script := `mount -t overlay overlay -o "lowerdir=$1/lower,upperdir=$1/up,workdir=$1/work" "$1/shared/m" || exit 99; exec timeout 20 "$2" serve --state-dir "$3" --write "$4"`
	r := execute(t, "", os.Environ(), []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", base, tcBin, state, shared})
	if r.status == 99 {
		t.Skipf("mount failed: %s", r.stderr)
	}
	// Refused for the state directory, or first for its socket, which
	// lies in it.
	if r.status == 0 || r.status == 124 || !strings.Contains(r.stderr, "overlaps the state directory") && !strings.Contains(r.stderr, "tracecell.sock: inside the writable root "+shared) {
		t.Errorf("status %d, stderr %q; want a refusal naming the state directory or its socket", r.status, r.stderr)
	}
}

// TestServeSocketInRoot: the server's Unix socket inside a shared --write
// root is refused at start: a session could hard link it to a name of its
// own and drive every other session through the API (red team, round 54).
func TestServeSocketInRoot(t *testing.T) {
	base := realDir(t)
	state, shared := filepath.Join(base, "state"), filepath.Join(base, "shared")
	mkdirs(t, state, shared)
	r := execute(t, "", os.Environ(), []string{"timeout", "20", tcBin, "serve", "--state-dir", state, "--write", shared, "--listen", "unix:" + filepath.Join(shared, "tc.sock")})
	if r.status == 0 || r.status == 124 || !strings.Contains(r.stderr, "inside the writable root") {
		t.Errorf("status %d, stderr %q; want a refusal naming the writable root", r.status, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(shared, "tc.sock")); err == nil {
		t.Errorf("the socket was created in the writable root")
	}
}

// TestReportReplacesUnwritableFile: the report replaces its file by a
// rename, so a user who may write the directory gets the report although
// the file there is not theirs to open (left by a root run): nobody's
// --report onto a root-owned 0644 file in a world-writable directory was
// refused ("create report: permission denied") before the run (a red-team
// note, round 61). Where the rename would fail (a sticky directory, a
// directory nobody may write) the run is still refused before it starts,
// and the file is left alone.
func TestReportReplacesUnwritableFile(t *testing.T) {
	nobody := nobodyCmd(t)
	if nobody == nil {
		t.Skip("needs root to make a file nobody cannot write")
	}
	cases := []struct {
		name    string
		dirMode os.FileMode
		ok      bool
	}{
		{"writable-dir", 0o777, true},
		{"sticky-dir", 0o777 | os.ModeSticky, false},
		{"read-only-dir", 0o755, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := openWorldDir(t)
			rep := filepath.Join(d, "r.json")
			const old = "left by a root run\n"
			if err := os.WriteFile(rep, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(d, c.dirMode); err != nil {
				t.Fatal(err)
			}
			argv := append(append([]string{}, nobody...), tcBin, "run", "--quiet", "--report", rep, "--", "/bin/true")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = "/"
			out, err := cmd.CombinedOutput()
			b, rerr := os.ReadFile(rep)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !c.ok {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), "create report "+rep) {
					t.Fatalf("run = %v, want status 125 naming the report\n%s", err, out)
				}
				if string(b) != old {
					t.Fatalf("refused run changed the file: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatalf("run as nobody: %v\n%s", err, out)
			}
			var r report.Report
			if err := json.Unmarshal(b, &r); err != nil || r.Exit.Status != 0 || r.Command == nil {
				t.Fatalf("report not written over the root-owned file: %v\n%.300s", err, b)
			}
			var st unix.Stat_t
			if err := unix.Lstat(rep, &st); err != nil || st.Uid != 65534 {
				t.Fatalf("report owner %d (%v), want nobody's new file", st.Uid, err)
			}
			ents, _ := os.ReadDir(d)
			if len(ents) != 1 {
				t.Fatalf("probe or temporary files left: %v", ents)
			}
		})
	}
}
