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
//
// The file must be a new one: tracecell runs outside the sandbox, and an
// environment it is started with may come from elsewhere than the operator
// (an agent framework's per-sandbox environment), so the variable must not
// be a way to overwrite a host file with a profile.
func startProfile(stderr io.Writer) func() {
	path := os.Getenv("TRACECELL_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := createNewOutput("TRACECELL_CPUPROFILE", path)
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
