package tracer

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
	"golang.org/x/sys/unix"
)

// Where a relative path starts (a cwd or a dirfd, checked to be
// nameable), and the walk cache that may remember it.

// base returns the directory a relative path of tk starts from: the dirfd's
// target, read now, or the thread's cwd. The cwd is read from
// /proc/<tid>/cwd and remembered while the walk cache may be used
// (dirCache): every way the tree has to move a cwd is a call the tracer
// sees first (chdir and fchdir, also a sibling's sharing the cwd through
// CLONE_FS; a rename or rmdir of a directory; an exec) and makes it forget
// every remembered cwd (forgetCwds) before that call runs, with the tree
// frozen. unshare, setns, chroot and pivot_root are denied to the tree.
func (t *tracer) base(c *call, dirfd int32, hasDirfd bool) (string, error) {
	if !hasDirfd || dirfd == unix.AT_FDCWD {
		cache := t.dirCache() != nil
		d := c.tk.cwd
		if !cache || d == "" {
			link := fmt.Sprintf("/proc/%d/cwd", c.tk.tid)
			var err error
			if d, err = readBase(link); err != nil {
				return "", err
			}
			if cache {
				c.tk.cwd = d
			}
		}
		return d, nil
	}
	if dirfd < 0 {
		return "", syscall.EBADF
	}
	d, err := readBase(fmt.Sprintf("/proc/%d/fd/%d", c.tk.tid, dirfd))
	if errors.Is(err, syscall.ENOENT) {
		err = syscall.EBADF // no such fd
	}
	return d, err
}

// readBase reads link, a /proc magic link to the directory a relative walk
// starts from (a cwd or a dirfd), and checks that its text names that very
// directory by a path without symlinks, as the walk assumes of its start
// (pathres.Resolve; the walk cache records what it finds under that name).
// The text need not: an O_PATH fd of a symlink reads as the symlink's own
// path, an unlinked directory as its old path plus " (deleted)", a name the
// tree may then give to a symlink of its own, and a directory in another
// mount namespace (reached through /proc/<pid>/root of a process there) as
// its path in that namespace, where other file systems are mounted. So the
// object the link leads to (stat follows it) must be a directory (else the
// kernel fails the lookup with ENOTDIR), and lstat of the text must find
// that same directory on the same mount (pathres.CheckLink). With the tree
// frozen nothing can change in between.
func readBase(link string) (string, error) {
	text, err := os.Readlink(link)
	if errors.Is(err, syscall.ENAMETOOLONG) {
		// A directory PATH_MAX bytes or more deep: /proc cannot show its
		// name (d_path into one page), the kernel walks from it all the
		// same. Name it by going up from it (pathres.DirPath); the checks
		// below hold the name to the object as for any text.
		if text, err = pathres.DirPath(link); err != nil {
			return "", &decode.BaseError{Link: link, Text: "", Why: "has a path too long for /proc to show, and tracecell could not name it otherwise: " + err.Error()}
		}
	}
	if err != nil {
		return "", err
	}
	obj, err := pathres.StatID(link, true)
	if err != nil {
		return "", os.NewSyscallError("stat "+link, err)
	}
	if !obj.IsDir() {
		return "", syscall.ENOTDIR
	}
	if _, err := pathres.CheckLink(link, text, obj); err != nil {
		var le *pathres.LinkError
		if errors.As(err, &le) {
			return "", &decode.BaseError{Link: link, Text: text, Why: le.Why}
		}
		return "", &decode.BaseError{Link: link, Text: text, Why: err.Error()}
	}
	return text, nil
}

// resolvePath is pathres.ResolveCached; tests replace it to reach the
// fail-closed path.
var resolvePath = pathres.ResolveCached

// dirCache is the cache of directories already walked, for this check, or
// nil when it must not be used: in audit and --no-freeze runs (t.dirs is
// nil, see newDirCache), and while a call left to finish unfrozen (a blocked
// call, see freeze.go) may still rename or remove a directory behind the
// tracer's back; after such a call the cache starts over. Otherwise every
// rename and rmdir empties it before it runs (movesDirs), and with the tree
// frozen no other check can come in between.
func (t *tracer) dirCache() *pathres.DirCache {
	if t.dirs == nil {
		return nil
	}
	if t.tree.inFlightN > 0 {
		t.forgetDirs()
		return nil
	}
	return t.dirs
}

// forgetDirs empties the walk cache and forgets every remembered cwd.
func (t *tracer) forgetDirs() {
	if t.dirs == nil {
		return
	}
	t.dirs.Reset()
	t.tree.forgetCwds()
}

// movesDirs reports whether op may rename or remove a directory: a rename
// of anything, or a delete whose target is a directory (rmdir,
// unlinkat(AT_REMOVEDIR); an unlink of a directory fails).
func movesDirs(op *policy.Op) bool {
	switch op.Kind {
	case syscalls.KindRename:
		return true
	case syscalls.KindDelete:
		for _, p := range op.Paths {
			if p.IsDir {
				return true
			}
		}
	}
	return false
}
