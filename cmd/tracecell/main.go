// Command tracecell runs a program so that it may read anywhere but change
// the file system only inside sandbox directories. See README.md.
package main

import (
	"fmt"
	"os"

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
	stop := startProfile(os.Stderr)
	exitsAfterRun = true
	status := run(os.Stdin, os.Stdout, os.Stderr, os.Args)
	stop()
	os.Exit(status)
}
