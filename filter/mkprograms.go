//go:build ignore

// mkprograms writes programs_<abi>.bin, the precomputed seccomp programs of
// each ABI (programs.go): run it with go generate ./filter/.
package main

import (
	"fmt"
	"os"

	"github.com/tracecell/tracecell/filter"
	"github.com/tracecell/tracecell/syscalls"
)

func main() {
	for _, t := range []*syscalls.Table{syscalls.AMD64, syscalls.ARM64} {
		b, err := filter.EncodePrograms(t)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mkprograms: %s: %v\n", t.ABI, err)
			os.Exit(1)
		}
		name := "programs_" + t.ABI + ".bin"
		if err := os.WriteFile(name, b, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "mkprograms: %v\n", err)
			os.Exit(1)
		}
	}
}
