// Package integration runs the tracecell binary against real programs and
// checks the outside world, not only what tracecell says about it.
//
//	go test ./integration/ -v
//
// Environment:
//
//	TRACECELL_BIN        tracecell binary to test (default: built from ../cmd/tracecell)
//	TRACECELL_PYTHON     Python interpreter (default /usr/bin/python3, Debian's, with numpy/pandas/matplotlib)
//	TRACECELL_SURFACE418 set to 1 when the suite runs under testdata/surface418
//	                     (every syscall newer than Linux 4.18 fails with ENOSYS)
//	TRACECELL_ALLOW_NO_PYTHON=1
//	                     run without Python: the tests that need it skip
//	TRACECELL_ESCAPE_BIN, TRACECELL_RACE_BIN
//	                     testdata/escapes/escape.c and race.c, already compiled
//	                     (scripts/arm64-vm.sh cross-compiles them: the arm64 guest has no gcc)
//
// The C escape and race programs are compiled with gcc at start-up unless
// both are given. Without the Python interpreter the suite fails, unless
// TRACECELL_ALLOW_NO_PYTHON=1: then every test that runs it skips (saying
// so) and the others run.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/procfs"
)

var (
	tcBin     string // tracecell under test
	escapeBin string // testdata/escapes/escape.c, compiled
	raceBin   string // testdata/escapes/race.c, compiled
	python    string // interpreter for testdata/py and testdata/compat
	noPython  string // why python cannot run here ("" when it can)
	repoRoot  string // the module root (parent of integration/)
)

// runTimeout bounds every single run: a hung tracer fails its test instead
// of the whole suite.
const runTimeout = 90 * time.Second

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: getwd: %v\n", err)
		return 1
	}
	repoRoot = filepath.Dir(wd)
	tmp, err := os.MkdirTemp("", "tracecell-integration-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: temp dir: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	tcBin = os.Getenv("TRACECELL_BIN")
	if tcBin == "" {
		tcBin = filepath.Join(tmp, "tracecell")
		cmd := exec.Command("go", "build", "-o", tcBin, "./cmd/tracecell")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: go build ./cmd/tracecell: %v\n%s", err, out)
			return 1
		}
	} else if tcBin, err = filepath.Abs(tcBin); err != nil {
		fmt.Fprintf(os.Stderr, "integration: TRACECELL_BIN: %v\n", err)
		return 1
	}

	escapeBin, raceBin = os.Getenv("TRACECELL_ESCAPE_BIN"), os.Getenv("TRACECELL_RACE_BIN")
	if escapeBin == "" || raceBin == "" {
		if err := buildCPrograms(tmp); err != nil {
			fmt.Fprintf(os.Stderr, "integration: %v\n", err)
			return 1
		}
	}

	python = os.Getenv("TRACECELL_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	if _, err := os.Stat(python); err != nil {
		noPython = fmt.Sprintf("no Python interpreter (%v): set TRACECELL_PYTHON", err)
		if os.Getenv("TRACECELL_ALLOW_NO_PYTHON") != "1" {
			// Most of the suite's ways out are Python programs: a missing
			// interpreter must not turn them into skips unnoticed.
			fmt.Fprintf(os.Stderr, "integration: %s (or set TRACECELL_ALLOW_NO_PYTHON=1 to run the rest)\n", noPython)
			return 1
		}
		fmt.Fprintf(os.Stderr, "integration: %s; the tests that run Python skip (TRACECELL_ALLOW_NO_PYTHON=1)\n", noPython)
	}
	return m.Run()
}

// buildCPrograms compiles testdata/escapes with gcc into dir.
func buildCPrograms(dir string) error {
	escapeBin, raceBin = filepath.Join(dir, "escape"), filepath.Join(dir, "race")
	if err := gccBuild(escapeBin, "escapes/escape.c"); err != nil {
		return err
	}
	return gccBuild(raceBin, "escapes/race.c", "-pthread")
}

// gccBuild compiles testdata/src (with -O2 -Wall and flags) into out.
func gccBuild(out, src string, flags ...string) error {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return fmt.Errorf("gcc is required to build testdata/%s (make test installs it): %v", src, err)
	}
	path := filepath.Join(repoRoot, "testdata", src)
	args := append(append([]string{"-O2", "-Wall"}, flags...), "-o", out, path)
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("gcc %s: %v\n%s", path, err, b)
	}
	return nil
}

// cBuild is one C test program, compiled at most once per test binary.
type cBuild struct {
	once sync.Once
	bin  string
	err  error
}

var (
	cBuildsMu sync.Mutex
	cBuilds   = map[string]*cBuild{}
)

// cProgram is testdata/src compiled once per test binary (with flags) into
// a world-readable temp dir, since the as-nobody runs execute it too; or
// the program the environment variable env names, already compiled (the
// arm64 guest has no gcc: scripts/arm64-vm.sh cross-compiles them).
func cProgram(t *testing.T, env, src string, flags ...string) string {
	t.Helper()
	if b := os.Getenv(env); b != "" {
		return b
	}
	cBuildsMu.Lock()
	b := cBuilds[src]
	if b == nil {
		b = &cBuild{}
		cBuilds[src] = b
	}
	cBuildsMu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "tracecell-cprog-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
		b.err = gccBuild(b.bin, src, flags...)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// pyScript is the path of a script under testdata/py.
func pyScript(name string) string { return filepath.Join(repoRoot, "testdata", "py", name) }

// realDir makes a fresh temp dir and returns it with symlinks expanded, the
// form the report's resolved paths use.
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatalf("resolve temp dir: %v", err)
	}
	return d
}

// runEnv is the environment of both the bare and the traced run: everything
// a program may write to by default points inside the sandbox, and Python
// writes no bytecode next to the system's modules.
func runEnv(t *testing.T, sbx string) []string {
	t.Helper()
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONHASHSEED=0",
		"HOME=" + sbx,
	}
	for _, kv := range [][2]string{{"TMPDIR", ".tmp"}, {"XDG_CACHE_HOME", ".cache"}, {"XDG_CONFIG_HOME", ".config"}, {"MPLCONFIGDIR", ".mpl"}} {
		d := filepath.Join(sbx, kv[1])
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("create %s: %v", d, err)
		}
		env = append(env, kv[0]+"="+d)
	}
	return env
}

// result of one run, bare or traced.
type result struct {
	status int // exit status: code, or 128+signal
	stdout string
	stderr string
	report *reportDoc // nil for bare runs
	// reportPath is the report file of a traced run.
	reportPath string
	wall       time.Duration
	// maxRSSKB is the peak resident set of the process the test started
	// (tracecell, for a traced run), from its rusage at wait (ru_maxrss:
	// the largest of it and its reaped children).
	maxRSSKB int64
}

// runBare runs argv in dir with env, without tracecell.
func runBare(t *testing.T, dir string, env []string, argv ...string) result {
	t.Helper()
	return execute(t, dir, env, argv)
}

// runTraced runs argv under tracecell with sbx as the only writable root and
// the given extra flags; the report is read back.
func runTraced(t *testing.T, sbx string, env []string, flags []string, argv ...string) result {
	t.Helper()
	rp := filepath.Join(t.TempDir(), "report.json")
	args := []string{"run", "--write", sbx, "--report", rp}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	args = append(args, flags...)
	args = append(args, "--")
	args = append(args, argv...)
	r := execute(t, "", os.Environ(), append([]string{tcBin}, args...))
	r.report, r.reportPath = readReport(t, rp, r), rp
	return r
}

func execute(t *testing.T, dir string, env []string, argv []string) result {
	t.Helper()
	return executeIn(t, dir, env, argv, nil)
}

// executeIn is execute with stdin as the program's standard input (nil: none).
func executeIn(t *testing.T, dir string, env []string, argv []string, stdin *os.File) result {
	t.Helper()
	if noPython != "" {
		for _, a := range argv {
			if a == python {
				t.Skip(noPython)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: so.String(), stderr: se.String(), wall: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSSKB = ru.Maxrss
		}
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			r.status = 128 + int(ws.Signal())
		} else {
			r.status = ws.ExitStatus()
		}
	default:
		t.Fatalf("run %q: %v\nstderr:\n%s", argv, err, r.stderr)
	}
	if ctx.Err() != nil {
		t.Fatalf("run %q: still running after %v\nstdout:\n%s\nstderr:\n%s", argv, runTimeout, r.stdout, r.stderr)
	}
	return r
}

// reportDoc and event mirror the report JSON contract. They are defined here
// rather than imported so the suite tests the format, not the Go types.
type reportDoc struct {
	Version        int      `json:"version"`
	DenialsDropped int      `json:"denials_dropped"`
	Command        []string `json:"command"`
	Cwd            string   `json:"cwd"`
	Sandbox        string   `json:"sandbox"`
	Exit           struct {
		Code     int    `json:"code"`
		Signal   string `json:"signal"`
		TimedOut bool   `json:"timed_out"`
		Status   int    `json:"status"`
	} `json:"exit"`
	Counts struct {
		Processes    int `json:"processes"`
		Threads      int `json:"threads"`
		Execs        int `json:"execs"`
		Checked      int `json:"checked"`
		Allowed      int `json:"allowed"`
		Denied       int `json:"denied"`
		Freezes      int `json:"freezes"`
		Copied       int `json:"copied"`
		KilledAtExit int `json:"killed_at_exit"`
	} `json:"counts"`
	Denials      []event  `json:"denials"`
	ScratchLeft  []string `json:"scratch_left"`
	Error        string   `json:"error"`
	Capabilities *struct {
		Kept    []string `json:"kept"`
		Dropped []string `json:"dropped"`
	} `json:"capabilities"`
}

type event struct {
	Decision      string   `json:"decision"`
	Pid           int      `json:"pid"`
	Tid           int      `json:"tid"`
	Exe           string   `json:"exe"`
	Argv          []string `json:"argv"`
	ArgvTruncated bool     `json:"argv_truncated"`
	Program       string   `json:"program"`
	Syscall       string   `json:"syscall"`
	ABI           string   `json:"abi"`
	Nr            int      `json:"nr"`
	Flags         string   `json:"flags"`
	Kind          string   `json:"kind"`
	Paths         []path   `json:"paths"`
	Family        string   `json:"family"`
	Address       string   `json:"address"`
	Port          int      `json:"port"`
	Abstract      bool     `json:"abstract"`
	TargetPid     *int     `json:"target_pid"`
	TargetInTree  bool     `json:"target_in_tree"`
	Rule          string   `json:"rule"`
	Reason        string   `json:"reason"`
	Errno         string   `json:"errno"`
}

type path struct {
	Role     string `json:"role"`
	Given    string `json:"given"`
	Dirfd    *int   `json:"dirfd"`
	Base     string `json:"relative_to"`
	Resolved string `json:"resolved"`
	Exists   bool   `json:"exists"`
	Special  string `json:"special"`
}

func (e event) String() string {
	var ps []string
	for _, p := range e.Paths {
		ps = append(ps, fmt.Sprintf("%s:%q->%q", p.Role, p.Given, p.Resolved))
	}
	tp := ""
	if e.TargetPid != nil {
		tp = fmt.Sprintf(" target_pid=%d", *e.TargetPid)
	}
	return fmt.Sprintf("{%s %s %s(%s) paths=[%s] net=%s/%s:%d abstract=%v%s errno=%s prog=%s reason=%q}",
		e.Decision, e.Kind, e.Syscall, e.Flags, strings.Join(ps, " "), e.Family, e.Address, e.Port, e.Abstract, tp, e.Errno, e.Program, e.Reason)
}

func (r *reportDoc) denialList() string {
	if len(r.Denials) == 0 {
		return "  (no denials)"
	}
	var b strings.Builder
	for _, e := range r.Denials {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}

// hasResolved reports whether one of the event's paths resolved to p.
func (e event) hasResolved(p string) bool {
	for _, x := range e.Paths {
		if x.Resolved == p {
			return true
		}
	}
	return false
}

// noticeLines are tracecell's one-line notices on stderr.
func noticeLines(stderr string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "tracecell: blocked ") || strings.HasPrefix(l, "tracecell: would block ") {
			out = append(out, l)
		}
	}
	return out
}

// resultLine finds the "result: ..." line the escape programs print.
var resultRE = regexp.MustCompile(`(?m)^result: (.*)$`)

// attemptLines reads a program's "<what> <result>" lines (result the last
// word: OK or an errno name) into a map by what.
func attemptLines(stdout string) map[string]string {
	got := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if i := strings.LastIndexByte(l, ' '); i > 0 {
			got[l[:i]] = l[i+1:]
		}
	}
	return got
}

func resultOf(stdout string) string {
	m := resultRE.FindStringSubmatch(stdout)
	if m == nil {
		return "(no result line)"
	}
	return m[1]
}

// entry is what the ground truth checks of one file system entry: anything
// a write, chmod, chown, utime, xattr, link or flags change would alter.
// atime is left out: reading is allowed.
type entry struct {
	Mode   fs.FileMode
	UID    uint32
	GID    uint32
	Size   int64
	Nlink  uint64
	Mtime  int64
	Ctime  int64
	SHA    string
	Link   string
	Xattrs string
	Flags  string
}

// snapshot walks root (root included, as ".") without following symlinks.
func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	snap := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("lstat %s: %w", p, err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{
			Mode: fi.Mode(), UID: st.Uid, GID: st.Gid, Size: st.Size, Nlink: uint64(st.Nlink),
			Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Xattrs: xattrsOf(p),
		}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			s := sha256.Sum256(b)
			e.SHA = hex.EncodeToString(s[:])
			e.Flags = flagsOf(p)
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Link, _ = os.Readlink(p)
		case fi.IsDir():
			e.Flags = flagsOf(p)
		}
		snap[rel] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return snap
}

func xattrsOf(p string) string {
	sz, err := unix.Llistxattr(p, nil)
	if err != nil || sz == 0 {
		return ""
	}
	buf := make([]byte, sz)
	sz, err = unix.Llistxattr(p, buf)
	if err != nil {
		return ""
	}
	var kv []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
		v := make([]byte, 256)
		n, _ := unix.Lgetxattr(p, name, v)
		if n < 0 {
			n = 0
		}
		kv = append(kv, name+"="+string(v[:n]))
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// flagsOf reads the inode flags (chattr); "" where the fs has none.
func flagsOf(p string) string {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	f, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%#x", f)
}

// diffSnap lists what changed between two snapshots.
func diffSnap(before, after map[string]entry) []string {
	var d []string
	for k, a := range before {
		b, ok := after[k]
		switch {
		case !ok:
			d = append(d, "removed "+k)
		case a != b:
			d = append(d, fmt.Sprintf("changed %s: %+v -> %+v", k, a, b))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "new entry "+k)
		}
	}
	sort.Strings(d)
	return d
}

// treeFiles maps every entry under root to a comparable description:
// sha256 for files, the target for symlinks, "dir" for directories.
func treeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "-> " + l
		case d.IsDir():
			m[rel] = "dir"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			m[rel] = hex.EncodeToString(s[:])
		default:
			m[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return m
}

func diffTrees(a, b map[string]string) []string {
	var d []string
	for k, va := range a {
		vb, ok := b[k]
		switch {
		case !ok:
			d = append(d, "only in bare run: "+k)
		case va != vb:
			d = append(d, fmt.Sprintf("differs: %s (%s vs %s)", k, va, vb))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "only in traced run: "+k)
		}
	}
	sort.Strings(d)
	return d
}

// procState is the state letter of /proc/PID/stat ("" when gone), and
// procStatField field n of it (1-based, as in proc(5)).
var (
	procState     = procfs.State
	procStatField = procfs.Field
)

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(b))
}

func writeFile(t *testing.T, p, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", p, err)
	}
}

// startPiped starts argv outside the traced tree (a host process of a
// test) with pipes to its stdin and from its stdout, its stderr the test's;
// it is killed and reaped when the test ends.
func startPiped(t *testing.T, argv []string) (*exec.Cmd, io.WriteCloser, io.Reader) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start host %q: %v", argv, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdin, stdout
}

// mkdirs makes each directory of dirs, with its parents (mode 0755).
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
