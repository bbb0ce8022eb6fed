package main

import (
	"bytes"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func unixSignalName(s syscall.Signal) string { return unix.SignalName(s) }

// selfMaxRSS is tracecell's own peak resident set in KiB: VmHWM of
// /proc/self/status, the high-water mark of tracecell's own memory map.
// Not getrusage's ru_maxrss: it is the larger of that and signal->maxrss,
// into which exec (exec_mmap) folds the peak of the memory map it replaces,
// and a process started by vfork or posix_spawn (Python's subprocess, Go's
// os/exec) replaces its parent's: ru_maxrss would report the launcher's
// peak (a Python harness's 21 MB, or a 100 MB one's) as tracecell's. The
// rusage value stays the fallback when /proc cannot be read.
func selfMaxRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if kb := statusKB(b, "VmHWM:"); kb > 0 {
			return kb
		}
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss
}

// statusKB is the value of a "Key:   1234 kB" line of a /proc status file,
// 0 when there is none.
func statusKB(b []byte, key string) int64 {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return 0
}
