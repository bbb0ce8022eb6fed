package integration

// A new task that gets the tid of a thread whose execve is going through,
// before tracecell has seen the exec (tracer/stale.go; red team, issue 21's
// review of the kcmp cache): the record of the thread that exec'd must not
// become the new task's, nor must the exec event drop the new task's.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tidreuse is testdata/escapes/tidreuse.c, compiled once.
func tidreuse(t *testing.T) string {
	return cProgram(t, "TRACECELL_TIDREUSE_BIN", "escapes/tidreuse.c", "-pthread")
}

// TestTidReuseAfterExec: a clone(CLONE_VM|CLONE_FILES) child that got the
// tid of a thread exec'ing in another process flips a dirfd between the
// sandbox and a host directory with dup2 while its parent creates files
// through that dirfd. Before, the exec event dropped the record the child
// had taken over, and the child ran on through every freeze: 233 of 2000
// files were created in the host directory. The host directory, listed by
// the test, is the ground truth; the bare run shows the flip reaches it.
func TestTidReuseAfterExec(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n > 1<<17 {
		t.Skipf("pid_max is %d: cycling the pid space to a given tid takes too long for a test", n)
	}
	bin := tidreuse(t)
	run := func(t *testing.T, traced bool, rounds string) (res string, outside int) {
		dir := realDir(t)
		sbx, host := filepath.Join(dir, "sbx"), filepath.Join(dir, "host")
		mkdir(t, sbx)
		mkdir(t, host)
		os.Chmod(dir, 0o755)
		os.Chmod(host, 0o777) // the as-nobody run could write there, were it let
		argv := []string{bin, "/bin/true", sbx, host, rounds}
		var r result
		if traced {
			r = runTraced(t, sbx, runEnv(t, sbx), []string{"--allow-exec", "/bin/true"}, argv...)
		} else {
			r = runBare(t, sbx, runEnv(t, sbx), argv...)
		}
		if r.status != 0 {
			t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, tail(r.stderr, 2000))
		}
		ents, err := os.ReadDir(host)
		if err != nil {
			t.Fatal(err)
		}
		return resultOf(r.stdout), len(ents)
	}
	t.Run("bare", func(t *testing.T) {
		res, outside := run(t, false, "20000")
		if !strings.Contains(res, "reused=yes") || outside == 0 {
			t.Fatalf("bare run: %s, %d files in the host directory; want the tid reused and files there", res, outside)
		}
	})
	t.Run("traced", func(t *testing.T) {
		res, outside := run(t, true, "1500")
		if outside != 0 {
			t.Fatalf("ESCAPED: %d files created in the host directory (%s)", outside, res)
		}
		var created, denied, said int
		if _, err := fmt.Sscanf(res, "tidreuse reused=yes created=%d denied=%d outside=%d", &created, &denied, &said); err != nil {
			t.Fatalf("program said %q (%v): want the tid reused", res, err)
		}
		if created == 0 || denied == 0 {
			t.Errorf("the flip did not reach both directories at the check: %s", res)
		}
		t.Log(res)
	})
}
