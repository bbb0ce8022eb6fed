// Package syscalls knows the system calls tracecell cares about: their
// numbers on each ABI (generated from golang.org/x/sys, never hand-typed),
// what their arguments mean (which are paths, dirfds, flags, pids) and how to
// print their flags in reports.
//
// Both tables (x86_64 and aarch64) are compiled on every GOARCH so that the
// seccomp filter of either ABI can be built and tested on any host.
package syscalls

//go:generate go run mksysnum.go
