package integration

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// raceSeconds is how long each race case attacks under tracecell. Before
// the freeze (tracer/freeze.go) every case escaped within a few thousand
// tries, well under a second on a 2-core VM.
const raceSeconds = "5"

// raceCase is one time-of-check-to-time-of-use attack of testdata/escapes/race.c.
type raceCase struct {
	name string
	// args prepares the world and returns race's arguments.
	args func(w *world) []string
}

func raceCases() []raceCase {
	return []raceCase{
		// (a) another thread rewrites the path in memory between the
		// tracer's read and the kernel's.
		{"flip-path-in-memory", func(w *world) []string {
			writeFile(w.t, w.s("ok"), "ok\n", 0o644)
			w.victim = w.p("f")
			return []string{"flip", w.s("ok"), w.victim, raceSeconds}
		}},
		// (a') the same through memory shared with another process of
		// the tree (a MAP_SHARED mapping inherited across fork).
		{"flip-path-in-shared-mapping", func(w *world) []string {
			writeFile(w.t, w.s("ok"), "ok\n", 0o644)
			w.victim = w.p("f")
			return []string{"flipshm", w.s("ok"), w.victim, raceSeconds}
		}},
		// (b) another process of the tree swaps a symlink in the sandbox
		// between the tracer's resolution and the kernel's lookup.
		{"swap-symlink-in-sandbox", func(w *world) []string {
			writeFile(w.t, w.s("ok"), "ok\n", 0o644)
			w.victim = w.p("f")
			return []string{"swap", w.s("link"), w.s("ok"), w.victim, raceSeconds}
		}},
		// (c) another thread changes the shared cwd (chdir is not a checked
		// call) between the tracer's reading of /proc/<tid>/cwd and the lookup.
		{"flip-shared-cwd", func(w *world) []string {
			writeFile(w.t, w.s("f"), "ok\n", 0o644)
			w.victim = w.p("f")
			return []string{"cwd", w.sbx, w.host, "f", raceSeconds}
		}},
	}
}

var raceResultRE = regexp.MustCompile(`^escapes=(\d+) opens=(\d+) denied=(\d+) tries=(\d+)$`)

// TestRaces attacks the check/use window; the host directory after the run
// is the ground truth.
func TestRaces(t *testing.T) {
	for _, c := range raceCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := &world{t: t, sbx: realDir(t), host: realDir(t)}
			w.populate()
			args := c.args(w)
			before := snapshot(t, w.host)
			r := runTraced(t, w.sbx, runEnv(t, w.sbx), nil, append([]string{raceBin}, args...)...)
			res := resultOf(r.stdout)
			if d := diffSnap(before, snapshot(t, w.host)); len(d) > 0 {
				t.Errorf("ESCAPED after %v: the outside world changed: %s\nresult: %s", r.wall.Round(time.Millisecond), strings.Join(d, "; "), res)
			}
			m := raceResultRE.FindStringSubmatch(res)
			if m == nil || r.status != 0 || r.report.Error != "" {
				t.Fatalf("race program: status %d, result %q, report error %q\nstderr:\n%s", r.status, res, r.report.Error, tail(r.stderr, 2000))
			}
			// The attack must really have run both ways: allowed opens of
			// the sandbox file and denied opens of the victim.
			if m[2] == "0" || m[3] == "0" {
				t.Errorf("attack did not exercise both paths: %s", res)
			}
			t.Logf("%s in %v", res, r.wall.Round(time.Millisecond))
		})
	}
}

// TestRacesBare proves that each attack and its ground truth work: without
// tracecell every case reaches the victim.
func TestRacesBare(t *testing.T) {
	for _, c := range raceCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := &world{t: t, sbx: realDir(t), host: realDir(t)}
			w.populate()
			args := c.args(w)
			args[len(args)-1] = "2"
			before := snapshot(t, w.host)
			r := runBare(t, w.sbx, runEnv(t, w.sbx), append([]string{raceBin}, args...)...)
			if d := diffSnap(before, snapshot(t, w.host)); len(d) == 0 {
				t.Errorf("bare run did not reach the victim: %s", resultOf(r.stdout))
			}
		})
	}
}

// TestRaceBlockingOpen: a checked open that blocks (a FIFO whose reader is
// another thread of the tree, started 300 ms later, whose open is not a
// checked call) must not deadlock the tree while the other tasks are frozen.
func TestRaceBlockingOpen(t *testing.T) {
	sbx := realDir(t)
	r := runTraced(t, sbx, runEnv(t, sbx), []string{"--timeout", "20s"}, raceBin, "fifo", filepath.Join(sbx, "fifo"))
	res := resultOf(r.stdout)
	if !strings.HasPrefix(res, "ok ") || r.status != 0 || r.report.Exit.TimedOut {
		t.Fatalf("fifo rendezvous: status %d, result %q, timed out %v\nstderr:\n%s", r.status, res, r.report.Exit.TimedOut, tail(r.stderr, 2000))
	}
	if r.wall > 5*time.Second {
		t.Errorf("fifo rendezvous took %v (the reader starts after 300 ms)", r.wall)
	}
	t.Logf("%s, wall %v", res, r.wall.Round(time.Millisecond))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
