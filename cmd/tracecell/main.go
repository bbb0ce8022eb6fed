// Command tracecell runs a program so that it may read anywhere but change
// the file system only inside sandbox directories. See README.md.
package main

import "os"

func main() {
	stop := startProfile(os.Stderr)
	status := run(os.Stdin, os.Stdout, os.Stderr, os.Args)
	stop()
	os.Exit(status)
}
