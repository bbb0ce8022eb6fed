package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestExecFloodNoticeMemory: a tree that execs one program by ever new
// spellings is refused each time; `run`'s notice printer groups the tries
// of a PATH search into one notice, and kept every path of this endless
// "search": 827 MB after 150,000 refusals of 4 KB paths (red team, round
// 44). The ground truth is tracecell's own peak RSS from its rusage, at
// 15,000 and at 75,000 refusals: the report lists the first 10,000 either
// way, so only the notice printer could grow between the two (by 240 MB
// before).
func TestExecFloodNoticeMemory(t *testing.T) {
	bin := cProgram(t, "TRACECELL_EXECFLOOD_BIN", "flood/execflood.c")
	rss := map[int]int64{}
	for _, n := range []int{15000, 75000} {
		sbx := realDir(t)
		r := runTraced(t, sbx, runEnv(t, sbx), nil, bin, "/usr/bin/ls", fmt.Sprint(n))
		if want := fmt.Sprintf("result: execflood tries=%d refused=%d", n, n); !strings.Contains(r.stdout, want) || r.status != 0 {
			t.Fatalf("status %d, stdout %q, want %q\nstderr:\n%s", r.status, r.stdout, want, tail(r.stderr, 2000))
		}
		if r.report.Counts.Denied != n {
			t.Errorf("counts.denied %d, want %d", r.report.Counts.Denied, n)
		}
		if r.report.DenialsDropped == 0 {
			t.Errorf("denials_dropped 0 with %d denials of 3.9 KB paths listed", len(r.report.Denials))
		}
		// One notice per walk of at most 64 tries: every refusal is
		// still named, by a notice or by the walk it joined.
		if lines := strings.Count(r.stderr, "blocked exec"); lines < n/64 || lines > n/64+2 {
			t.Errorf("%d exec notices for %d refusals, want about %d (one per 64 tries)", lines, n, n/64)
		}
		rss[n] = r.maxRSSKB
	}
	t.Logf("tracecell peak RSS: %d kB after 15,000 refused execs, %d kB after 75,000", rss[15000], rss[75000])
	if d := rss[75000] - rss[15000]; d > 48<<10 {
		t.Errorf("ESCAPED (DoS): tracecell grew by %d kB over 60,000 more refused execs", d)
	}
	// The report's list is capped by its text as well as by count: each
	// of these denials names a 3.9 KB path, and 10,000 of them (with
	// the report's encoding) took tracecell to 290 MB; 125 MB with the
	// 16 MiB cap.
	if rss[75000] > 200<<10 {
		t.Errorf("ESCAPED (DoS): tracecell's peak RSS was %d kB over 75,000 refused execs of 3.9 KB paths", rss[75000])
	}
}
