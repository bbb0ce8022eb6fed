// Command tracecell runs a program so that it may read anywhere but change
// the file system only inside sandbox directories. See README.md.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	// Not dumpable from the first package initializers on: tracecell's
	// environment is the operator's, and a tree of another tracecell of
	// the same user may be watching /proc for new processes.
	"github.com/tracecell/tracecell/internal/hideproc"
)

func main() {
	if hideproc.Errno != 0 {
		fmt.Fprintf(os.Stderr, "tracecell: prctl(PR_SET_DUMPABLE, 0): %v\n", hideproc.Errno)
		os.Exit(statusFailed)
	}
	// A write to a closed stdout or stderr (the operator's `| head`, a log
	// reader that died) must fail with EPIPE, not kill tracecell before
	// its report is written, which is Go's default for fds 1 and 2: from
	// the first notice on (a run's sandbox and warnings come before the
	// run). Caught, not ignored: an ignored SIGPIPE would stay ignored in
	// the tree across exec.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stop := startProfile(os.Stderr)
	exitsAfterRun = true
	status := run(os.Stdin, os.Stdout, os.Stderr, os.Args)
	stop()
	os.Exit(status)
}
