package procfs

import (
	"bytes"
	"strconv"
	"strings"
)

// Stat holds the fields of /proc/<pid>/stat tracecell uses (proc(5)
// numbering: 1 pid, 3 state, 4 ppid, 5 pgrp).
type Stat struct {
	// Pid is field 1.
	Pid int
	// State is the state letter, field 3 ('R', 'S', 'Z', 't', ...).
	State byte
	// Ppid is the parent's pid, field 4.
	Ppid int
	// Pgrp is the process group, field 5.
	Pgrp int
}

// fieldsAfterComm splits the fields of a /proc/<pid>/stat text from field
// 3 on. The command name (field 2) is in parentheses and may hold spaces
// and parentheses itself: the fields after it start after the last ')'
// (fs/proc/array.c do_task_stat prints "%d (%s) %c ...").
func fieldsAfterComm(b []byte) []string {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return nil
	}
	return strings.Fields(string(b[end+1:]))
}

// ParseStat parses the text of a /proc/<pid>/stat: false when a field
// of Stat is missing or malformed.
func ParseStat(b []byte) (Stat, bool) {
	var st Stat
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return st, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return st, false
	}
	f := fieldsAfterComm(b)
	if len(f) < 3 || len(f[0]) != 1 {
		return st, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return st, false
	}
	return Stat{Pid: pid, State: f[0][0], Ppid: ppid, Pgrp: pgrp}, true
}

// ReadStat reads and parses /proc/<pid>/stat: false when the process is
// gone.
func ReadStat(pid int) (Stat, bool) {
	b, err := readStat(pid)
	if err != nil {
		return Stat{}, false
	}
	return ParseStat(b)
}

func readStat(pid int) ([]byte, error) {
	return Read("/proc/"+strconv.Itoa(pid)+"/stat", make([]byte, ReadMax))
}

// StateOf is the state letter of a /proc/<pid>/stat text, the field after
// the command (which is in parentheses and may itself hold ") "); 0 when
// there is none. It allocates nothing: the freeze asks it in a loop.
func StateOf(b []byte) byte {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			if i+2 < len(b) && b[i+1] == ' ' {
				return b[i+2]
			}
			return 0
		}
	}
	return 0
}

// StateLetter is the state letter of /proc/<pid>/stat, 0 when the process
// is gone.
func StateLetter(pid int) byte {
	var buf [ReadMax]byte
	b, err := Read("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return 0
	}
	return StateOf(b)
}

// FieldOf is field n of a /proc/<pid>/stat text, numbered as in proc(5)
// from 3 (the state letter) on, "" when missing.
func FieldOf(b []byte, n int) string {
	f := fieldsAfterComm(b)
	if n < 3 || n-3 >= len(f) {
		return ""
	}
	return f[n-3]
}

// Field returns field n (3 on) of /proc/<pid>/stat, or "" when the process
// is gone or the field missing.
func Field(pid, n int) string {
	b, err := readStat(pid)
	if err != nil {
		return ""
	}
	return FieldOf(b, n)
}

// State is the state letter of pid ("R", "S", "Z", ...), "" when it is gone.
func State(pid int) string { return Field(pid, 3) }

// Runs reports whether pid exists and has not exited: neither a zombie
// (Z) nor dead (X).
func Runs(pid int) bool {
	st := State(pid)
	return st != "" && st != "Z" && st != "X"
}
