package pathres

import "strings"

// DirCache remembers directories that a walk met at a path without any
// symlink in it, by device and inode, so that a later walk through them can
// check the deepest one with a single stat(2) instead of an lstat(2) per
// component: resolving /srv/sbx/out/run/f.csv after /srv/sbx/out/run/e.csv
// costs a stat of /srv/sbx/out/run and an lstat of f.csv, not five lstats.
//
// A cached path is used only when stat(path), which follows symlinks, still
// finds the same directory. Moving it away, replacing it or mounting over it
// changes what the stat finds, and the walk is done in full again. What the
// stat cannot tell is a directory moved elsewhere with a symlink to it left at
// its old path: the call then touches the same directory, which now has a
// different name. The tracer therefore drops the whole cache whenever it
// lets the traced tree rename anything or remove a directory (the only ways
// the tree can do that: mount, pivot_root, chroot and io_uring are denied to
// it), and uses the cache only while the tree is frozen around every
// checked call, so no such call can run between a check and the drop, nor
// in the middle of a walk. A process outside the tree doing the same is the
// race any check-then-use has.
//
// A walk records directories under the names it walked, so it must start
// from a name without symlinks: "/", or a relative walk's base that the
// caller has checked (tracer.readBase): the text of /proc/<pid>/fd/N or
// /proc/<pid>/cwd can name a symlink (an O_PATH fd of one) or a removed
// directory, and a walk from there would record directories reached
// through a symlink under a name inside the sandbox.
//
// /proc is never cached: its directories come and go with processes.
// A DirCache is not safe for concurrent use.
type DirCache struct {
	m   map[string]fileID
	max int
}

type fileID struct{ dev, ino uint64 }

// NewDirCache returns an empty cache that holds at most max directories; it
// starts over when full.
func NewDirCache(max int) *DirCache {
	return &DirCache{m: map[string]fileID{}, max: max}
}

// Reset forgets every directory.
func (c *DirCache) Reset() {
	if len(c.m) > 0 {
		clear(c.m)
	}
}

// Len is the number of directories held.
func (c *DirCache) Len() int { return len(c.m) }

func cacheable(p string) bool {
	return p != "/proc" && !strings.HasPrefix(p, "/proc/")
}

// add records dir, an absolute path without symlinks that lstat found to be
// a directory with info fi.
func (c *DirCache) add(dir string, fi info) {
	if !cacheable(dir) {
		return
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[dir] = fileID{fi.dev, fi.ino}
}

// skip moves a walk at cur (a directory path without symlinks) with rest to
// go as far down rest as cached directories allow. Only plain names are
// skipped (the first "." or ".." ends the skip) and never the last
// component: the walk always looks at that itself.
func (c *DirCache) skip(cur, rest string) (string, string) {
	if len(c.m) == 0 || !strings.Contains(strings.TrimLeft(rest, "/"), "/") {
		return cur, rest // nothing cached, or only the last component left
	}
	// The candidates are cur joined with the leading components of rest:
	// prefixes of one string, built once (not at all for an absolute path
	// from "/"), so looking them up allocates nothing. full[j] is the
	// slash after the path taken so far.
	full, j := rest, 0
	switch {
	case cur != "/":
		full, j = cur+"/"+rest, len(cur)
	case !strings.HasPrefix(rest, "/"):
		full = "/" + rest
	}
	best, bestEnd := "", 0
	for {
		k := j + 1
		if k < len(full) && full[k] == '/' {
			break // "//": the prefix would not be a clean path
		}
		e := strings.IndexByte(full[k:], '/')
		if e < 0 {
			break // the last component
		}
		e += k
		name := full[k:e]
		if name == "." || name == ".." || strings.Trim(full[e:], "/") == "" {
			break // a dot, or the last component with slashes after it
		}
		p := full[:e]
		if !cacheable(p) {
			break
		}
		if _, ok := c.m[p]; ok {
			best, bestEnd = p, e
		}
		j = e
	}
	if best == "" {
		return cur, rest
	}
	fi, err := lstat(best, true)
	if err == nil && (fileID{fi.dev, fi.ino}) == c.m[best] && fi.IsDir() {
		return best, full[bestEnd:]
	}
	delete(c.m, best)
	return cur, rest
}
