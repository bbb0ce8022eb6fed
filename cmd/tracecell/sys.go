package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func unixSignalName(s syscall.Signal) string { return unix.SignalName(s) }

// selfMaxRSS is tracecell's own peak resident set in KiB.
func selfMaxRSS() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss
}
