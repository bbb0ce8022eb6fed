// Package procstat reads a process's state from /proc/<pid>/stat: the one
// parser for the tracer's tests, the server's and worker's liveness checks
// and the integration suite.
package procstat

import (
	"os"
	"strconv"
	"strings"
)

// Field returns field n of /proc/<pid>/stat, numbered as in proc(5) (3 is
// the state letter), or "" when the process is gone or the field missing.
// The fields are counted after the command name's last ')': a name may hold
// spaces and parentheses.
func Field(pid, n int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	return fieldOf(string(b), n)
}

// fieldOf is field n of a /proc/<pid>/stat text s.
func fieldOf(s string, n int) string {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if n < 3 || n-3 >= len(f) {
		return ""
	}
	return f[n-3]
}

// State is the state letter of pid ("R", "S", "Z", ...), "" when it is gone.
func State(pid int) string { return Field(pid, 3) }

// Runs reports whether pid exists and has not exited: neither a zombie
// (Z) nor dead (X).
func Runs(pid int) bool {
	st := State(pid)
	return st != "" && st != "Z" && st != "X"
}
