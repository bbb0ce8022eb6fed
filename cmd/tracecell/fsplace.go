package main

import (
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/tracecell/tracecell/pathres"
)

// A directory can be reached under more than one path: a bind mount of a
// writable root (or of a directory inside one) at another place shows the
// same files, so comparing path strings alone let --report alias/out/r.json
// land in the sandbox (red team, round 51). fsPlace names a directory by
// where it is in its file system instead: the device and the path from
// that file system's own root, as /proc/self/mountinfo gives them for the
// mount the directory is reached through (its "root" field: the subtree
// the mount shows).

// place is a directory's device ("major:minor") and its path inside that
// file system.
type place struct {
	dev, path string
}

// mountEntry is one line of /proc/self/mountinfo: its device, the path
// inside the file system that the mount shows (root), and where (point).
type mountEntry struct {
	dev, root, point string
}

// parseMountinfo reads the lines "ID PARENT MAJ:MIN ROOT POINT ..." of
// /proc/<pid>/mountinfo (Documentation/filesystems/proc.rst), by mount id;
// ROOT and POINT have their spaces, tabs, newlines and backslashes written
// as octal escapes.
func parseMountinfo(b []byte) map[uint64]mountEntry {
	out := map[uint64]mountEntry{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) < 5 {
			continue
		}
		id, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		out[id] = mountEntry{dev: f[2], root: unescapeOctal(f[3]), point: unescapeOctal(f[4])}
	}
	return out
}

// unescapeOctal undoes mountinfo's \ooo escapes.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fsPlace is where the directory dir (absolute, symlinks resolved) is in
// its file system, given the mount table; ok is false when it cannot be
// told (the directory is missing, its mount is not in the table).
func fsPlace(dir string, mounts map[uint64]mountEntry) (place, bool) {
	id, err := pathres.StatID(dir, true)
	if err != nil {
		return place{}, false
	}
	m, ok := mounts[id.Mnt]
	if !ok {
		return place{}, false
	}
	rel := dir
	if m.point != "/" {
		r, ok := strings.CutPrefix(dir, m.point)
		if !ok || (r != "" && r[0] != '/') {
			return place{}, false
		}
		rel = r
	}
	return place{dev: m.dev, path: path.Join(m.root, "/", rel)}, true
}

// rootByPlace is the root of roots whose file system place holds dir's, or
// "": what rootOf cannot see when dir is reached through another mount of
// the same files.
func rootByPlace(dir string, roots []string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	mounts := parseMountinfo(b)
	d, ok := fsPlace(dir, mounts)
	if !ok {
		return ""
	}
	for _, r := range roots {
		if rp, ok := fsPlace(r, mounts); ok && rp.dev == d.dev && (d.path == rp.path || strings.HasPrefix(d.path, strings.TrimSuffix(rp.path, "/")+"/")) {
			return r
		}
	}
	return ""
}
