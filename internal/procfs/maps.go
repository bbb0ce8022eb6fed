package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Mapping is one line of /proc/<pid>/maps.
type Mapping struct {
	// Start and End are the range, [Start, End).
	Start, End uint64
	// Write and Shared are the 'w' and 's' of its permissions.
	Write, Shared bool
	// Inode is the mapped file's inode, 0 for anonymous memory.
	Inode uint64
	// Path is "" for anonymous memory; "[heap]", "[stack]", a file's path
	// (spaces kept, " (deleted)" for an unlinked one).
	Path string
}

// ReadMaps reads and parses /proc/<tid>/maps.
func ReadMaps(tid int) ([]Mapping, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/maps")
	if err != nil {
		return nil, err
	}
	return ParseMaps(b)
}

// ParseMaps parses the text of /proc/<pid>/maps: "start-end perms offset
// dev inode [path]" (fs/proc/task_mmu.c show_map_vma), the path padded
// with spaces to a column. A path with a newline in it is written
// escaped ("\012"), so each mapping is one line.
func ParseMaps(b []byte) ([]Mapping, error) {
	var ms []Mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var f [5][]byte
		rest := line
		for i := range f {
			rest = bytes.TrimLeft(rest, " ")
			j := bytes.IndexByte(rest, ' ')
			if j < 0 {
				j = len(rest)
			}
			f[i], rest = rest[:j], rest[j:]
		}
		se := bytes.IndexByte(f[0], '-')
		if se < 0 || len(f[1]) != 4 {
			return nil, fmt.Errorf("bad maps line %q", line)
		}
		start, err1 := strconv.ParseUint(string(f[0][:se]), 16, 64)
		end, err2 := strconv.ParseUint(string(f[0][se+1:]), 16, 64)
		inode, err3 := strconv.ParseUint(string(f[4]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("bad maps line %q", line)
		}
		ms = append(ms, Mapping{Start: start, End: end, Write: f[1][1] == 'w', Shared: f[1][3] == 's',
			Inode: inode, Path: string(bytes.TrimLeft(rest, " "))})
	}
	return ms, sc.Err()
}
