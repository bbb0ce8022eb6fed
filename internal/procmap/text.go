package procmap

import (
	"bytes"
	"fmt"
)

// parseLine parses one line of /proc/<pid>/maps (without its newline) into
// a Mapping without Path, and returns the name apart (a sub-slice of line;
// empty for unnamed memory).
//
// The line is show_map_vma's (fs/proc/task_mmu.c; the same on 4.18 and
// 6.x): "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " — start, end, the
// perms "rwx" and 's' or 'p', the offset, the device major:minor, all hex,
// the inode in decimal — then, for a named mapping, spaces up to a column
// and the name. The name runs to the end of the line: it may hold spaces
// (a path "/tmp/a b", " (deleted)" appended to an unlinked file's), but not
// a newline (seq_file_path writes it "\012"), and never starts with a
// space (a path starts with '/', other names with '[' or a letter).
func parseLine(line []byte) (Mapping, []byte, error) {
	var m Mapping
	rest := line
	var ok1, ok2, ok3, ok4, ok5, ok6 bool
	m.Start, rest, ok1 = field(rest, '-', 16)
	m.End, rest, ok2 = field(rest, ' ', 16)
	if len(rest) < 5 || rest[4] != ' ' {
		return Mapping{}, nil, fmt.Errorf("bad maps line %q", line)
	}
	p := rest[:4]
	m.Read, m.Write, m.Exec, m.Shared = p[0] == 'r', p[1] == 'w', p[2] == 'x', p[3] == 's'
	rest = rest[5:]
	m.Offset, rest, ok3 = field(rest, ' ', 16)
	var major, minor uint64
	major, rest, ok4 = field(rest, ':', 16)
	minor, rest, ok5 = field(rest, ' ', 16)
	m.DevMajor, m.DevMinor = uint32(major), uint32(minor)
	// The inode ends at a space (show_vma_header_prefix prints one even
	// for an unnamed mapping), or the line if a kernel did not print it.
	if bytes.IndexByte(rest, ' ') < 0 {
		m.Inode, ok6 = parseNum(rest, 10)
		rest = nil
	} else {
		m.Inode, rest, ok6 = field(rest, ' ', 10)
	}
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || major > 1<<32-1 || minor > 1<<32-1 {
		return Mapping{}, nil, fmt.Errorf("bad maps line %q", line)
	}
	return m, bytes.TrimLeft(rest, " "), nil
}

// field parses the number in base (16 or 10) that b starts with, up to the
// separator sep, and returns it with what follows sep; ok is false when
// sep is missing or the field is not a number.
func field(b []byte, sep byte, base uint64) (v uint64, rest []byte, ok bool) {
	i := bytes.IndexByte(b, sep)
	if i < 0 {
		return 0, b, false
	}
	v, ok = parseNum(b[:i], base)
	return v, b[i+1:], ok
}

// parseNum parses b, a non-empty number in base (lower-case hex digits, as
// the kernel prints them); ok is false for anything else or a value that
// does not fit in 64 bits.
func parseNum(b []byte, base uint64) (v uint64, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if v > (1<<64-1-d)/base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}
