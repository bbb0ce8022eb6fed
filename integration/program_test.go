package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProgramNameNotArgv0: the program a denial names (its notice on
// stderr, its summary, the report's "program") is what the kernel says the
// process runs, not the argv[0] the program gave itself at exec. A tree
// that exec'd python3 as "sshd" was reported as sshd (red team, round 44).
// The ground truth is the python binary's own name, resolved by the test.
func TestProgramNameNotArgv0(t *testing.T) {
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Base(real)
	sbx := realDir(t)
	host := realDir(t)
	target := filepath.Join(host, "x")
	code := "import os, sys\n" +
		"if len(sys.argv) < 2:\n" +
		"    os.execv(" + strconv.Quote(python) + ", ['/usr/sbin/sshd', '-c', " + strconv.Quote("open("+strconv.Quote(target)+", 'w')") + "])\n"
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", python}, python, "-c", code)
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("ESCAPED: %s was created", target)
	}
	var found bool
	for _, e := range r.report.Denials {
		if e.Syscall != "openat" || !e.hasResolved(target) {
			continue
		}
		found = true
		if e.Program != want {
			t.Errorf("denial names program %q, want %q (the exe %s)", e.Program, want, real)
		}
	}
	if !found {
		t.Fatalf("no denial of %s; denials:\n%s\nstderr:\n%s", target, r.report.denialList(), r.stderr)
	}
	if strings.Contains(r.stderr, "sshd") || !strings.Contains(r.stderr, "by "+want+"[") {
		t.Errorf("the notice names the program the tree chose, not %s:\n%s", want, r.stderr)
	}
}

// TestForgedSeccompSigsys: a process that queues itself a SIGSYS whose
// siginfo says SYS_SECCOMP for a call of another ABI had tracecell report
// a blocked int 0x80 call it never made, and kill it (red team, round 44);
// so did a child whose exit signal was SIGSYS (CLD_EXITED is 1 too; round
// 45). The program makes native calls only (ground truth: its own code,
// and its bare run); the queue is refused and reported as what it is, and
// a plain kill(SIGSYS) and the child's exit signal reach its handler.
func TestForgedSeccompSigsys(t *testing.T) {
	sbx := realDir(t)
	if bare := resultOf(runBare(t, sbx, runEnv(t, sbx), python, pyScript("forge_sigsys.py")).stdout); bare != "queue=ok kill=delivered child=delivered alive" {
		t.Fatalf("bare run said %q: the case tests nothing here", bare)
	}
	r := runTraced(t, sbx, runEnv(t, sbx), nil, python, pyScript("forge_sigsys.py"))
	if res := resultOf(r.stdout); res != "queue=EPERM kill=delivered child=delivered alive" {
		t.Errorf("program said %q (status %d), want the queue refused and the kill delivered\nstderr:\n%s", res, r.status, tail(r.stderr, 2000))
	}
	var refused bool
	for _, e := range r.report.Denials {
		if e.Rule == "foreign-abi" {
			t.Errorf("a foreign-ABI call was reported that the program never made: %s %s", e.Syscall, e.Reason)
		}
		if e.Syscall == "rt_sigqueueinfo" && e.Rule == "forbidden-syscall" && e.Errno == "EPERM" {
			refused = true
		}
	}
	if !refused {
		t.Errorf("no forbidden-syscall denial of rt_sigqueueinfo; denials:\n%s", r.report.denialList())
	}
}

// TestDeepCwdNotices: a relative path from a cwd deeper than PATH_MAX
// resolves to a path as long as the cwd is deep. Each notice on stderr
// carried it whole (150 MB of stderr for 300 denials at half a megabyte,
// red team, round 45); a notice now shows its ends, and the report keeps
// it whole. The ground truth is tracecell's stderr, and the depth the
// program made.
func TestDeepCwdNotices(t *testing.T) {
	sbx := realDir(t)
	const levels, n = 100, 20
	r := runTraced(t, sbx, runEnv(t, sbx), nil, python, pyScript("deep_cwd.py"), fmt.Sprint(levels), fmt.Sprint(n))
	want := fmt.Sprintf("depth=%d refused=%d", levels*251, n)
	if res := resultOf(r.stdout); res != want {
		t.Fatalf("program said %q, want %q\nstderr:\n%s", res, want, tail(r.stderr, 2000))
	}
	lines := 0
	for _, l := range strings.Split(r.stderr, "\n") {
		if !strings.Contains(l, "blocked chmod") {
			continue
		}
		lines++
		if len(l) > 12<<10 {
			t.Errorf("a notice of %d bytes", len(l))
		}
	}
	if lines != n {
		t.Errorf("%d chmod notices, want %d", lines, n)
	}
	var full int
	for _, e := range r.report.Denials {
		for _, p := range e.Paths {
			if strings.HasSuffix(p.Resolved, "/f") && len(p.Resolved) > levels*251 {
				full++
			}
		}
	}
	if full != n {
		t.Errorf("%d denials name the file by its whole path, want %d", full, n)
	}
}

// TestScratchLedgerBounded: tracecell remembers each entry the tree makes
// in a scratch directory by its resolved name, to know later what is the
// tree's. A tree that made empty files with 3.5 KB names in /dev/shm grew
// tracecell by 8 KB a file, 1.6 GB after 200,000 (red team, round 46), and
// removing them took n² time. Past 100,000 entries or 16 MiB of names a
// create there now fails with ENOSPC, reported (scratch-full). Ground
// truth: tracecell's peak RSS from its rusage at 12,000 and at 36,000
// tries, the files the program made, and the scratch directory left empty.
func TestScratchLedgerBounded(t *testing.T) {
	rss := map[int]int64{}
	made := map[int]string{}
	for _, n := range []int{12000, 36000} {
		sbx := realDir(t)
		top := fmt.Sprintf("/dev/shm/tcflood-%d-%d", os.Getpid(), n)
		t.Cleanup(func() { os.RemoveAll(top) })
		r := runTraced(t, sbx, runEnv(t, sbx), nil, python, pyScript("shm_flood.py"), top, fmt.Sprint(n))
		res := resultOf(r.stdout)
		var m, full, other int
		if _, err := fmt.Sscanf(res, "made=%d full=%d other=%d", &m, &full, &other); err != nil || r.status != 0 {
			t.Fatalf("status %d, program said %q (%v)\nstderr:\n%s", r.status, res, err, tail(r.stderr, 2000))
		}
		if full == 0 || other != 0 || m+full != n {
			t.Errorf("%d tries: made %d, refused as full %d, other errors %d; want some refused as full and no other error", n, m, full, other)
		}
		if d, ok := denialBy(r, "openat", "scratch-full"); !ok || d.Errno != "ENOSPC" {
			t.Errorf("no scratch-full denial with ENOSPC; denials:\n%s", r.report.denialList())
		}
		if _, err := os.Stat(top); err == nil {
			t.Errorf("the program's scratch directory %s is left", top)
		}
		rss[n], made[n] = r.maxRSSKB, fmt.Sprint(m)
	}
	t.Logf("tracecell peak RSS: %d kB after 12,000 tries, %d kB after 36,000; files made %s and %s", rss[12000], rss[36000], made[12000], made[36000])
	if made[12000] != made[36000] {
		t.Errorf("the cap moved: %s files made of 12,000 tries, %s of 36,000", made[12000], made[36000])
	}
	// Before, 24,000 more entries of 3.5 KB names were +190 MB; the
	// collector and the report's encoding move the peak by ±15 MB.
	if d := rss[36000] - rss[12000]; d > 64<<10 || rss[36000] > 200<<10 {
		t.Errorf("ESCAPED (DoS): tracecell grew by %d kB over 24,000 more scratch creates, to %d kB", d, rss[36000])
	}
}
