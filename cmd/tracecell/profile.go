package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of tracecell itself to the file named by
// TRACECELL_CPUPROFILE (a developer aid for the tracer's per-call cost; see
// "Speed" in README.md). It returns the function that stops it.
func startProfile(stderr io.Writer) func() {
	path := os.Getenv("TRACECELL_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := createOutput("TRACECELL_CPUPROFILE", path, nil)
	if err != nil {
		fmt.Fprintf(stderr, "tracecell: cannot write the CPU profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "tracecell: cannot start the CPU profile: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
