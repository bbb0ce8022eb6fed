package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openStateDir creates what is missing of the state directory dir (an
// absolute path; each new directory 0700), walking it one component at a
// time with O_NOFOLLOW from /, and returns its clean path and a descriptor
// of it opened through that walk.
//
// The server keeps using the path after start-up (sandboxes, temporary
// files, the workers' deny-read of the state directory), so the walk
// refuses what would let someone else change where that path leads:
//
//   - a symlink anywhere on it. The server runs as the user whose sandboxed
//     trees may have written there on an earlier run, so a link's owner
//     says nothing about who made it: a tree that could write ~ made
//     ~/.local a link and the next `tracecell serve` put (or took, made
//     0700 and filled) $XDG_STATE_HOME/tracecell in a host directory of
//     its choosing; /var/tmp/tracecell-<uid> planted by another user is
//     the same (red team, rounds 63 and 64). Give the real path.
//   - a directory on it that another user owns, or may write without the
//     sticky bit protecting the next component (which must then be
//     root's or this user's): that user could rename the state directory
//     away and put a link in its place while the server runs (round 64:
//     a root server's later sessions were made where the link led, and
//     its workers' deny-read then covered the link's target instead of
//     the older sessions' sandboxes). The usual /var/tmp (root's, 1777)
//     passes: the sticky bit keeps this user's entry in it.
func openStateDir(dir string) (string, int, error) {
	if !filepath.IsAbs(dir) {
		return "", -1, fmt.Errorf("the state directory %s: not an absolute path", dir)
	}
	clean := filepath.Clean(dir)
	if clean == "/" {
		return "", -1, fmt.Errorf("the state directory %s: / cannot be one (pass --state-dir)", dir)
	}
	euid := uint32(os.Geteuid())
	trusted := func(uid uint32) bool { return uid == 0 || uid == euid }
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, os.NewSyscallError("open /", err)
	}
	walked := "/"
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for i, name := range parts {
		last := i == len(parts)-1
		here := filepath.Join(walked, name)
		fail := func(err error) (string, int, error) {
			unix.Close(fd)
			return "", -1, err
		}
		var pst, st unix.Stat_t
		if err := unix.Fstat(fd, &pst); err != nil {
			return fail(fmt.Errorf("the state directory %s: fstat %s: %w", dir, walked, err))
		}
		if !trusted(pst.Uid) {
			return fail(fmt.Errorf("the state directory %s: %s belongs to uid %d, who could move the state directory away while the server runs: pass --state-dir with a path whose directories are root's or this user's", dir, walked, pst.Uid))
		}
		// Before anything is made in it: a directory others may write
		// without the sticky bit is refused whatever its entry is.
		sticky := pst.Mode&unix.S_ISVTX != 0
		if pst.Mode&0o022 != 0 && !sticky {
			return fail(fmt.Errorf("the state directory %s: %s may be written by other users, who could move %s away while the server runs: pass --state-dir with a path whose directories only root or this user may write", dir, walked, here))
		}
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.ENOENT {
			if err = unix.Mkdirat(fd, name, 0o700); err != nil && err != unix.EEXIST {
				return fail(fmt.Errorf("create the state directory %s: mkdir %s: %w (pass --state-dir)", dir, here, err))
			}
			err = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil {
			return fail(fmt.Errorf("the state directory %s: %s: %w (pass --state-dir)", dir, here, err))
		}
		if pst.Mode&0o022 != 0 && !trusted(st.Uid) {
			// A shared sticky directory (/var/tmp): the entry must be
			// this user's or root's, or its owner could swap it.
			return fail(fmt.Errorf("the state directory %s: %s belongs to uid %d, who made it first in the shared directory %s: remove it, or pass --state-dir with another path", dir, here, st.Uid, walked))
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			target := ""
			buf := make([]byte, unix.PathMax)
			if n, err := unix.Readlinkat(fd, name, buf); err == nil {
				target = fmt.Sprintf(" (to %q)", buf[:n]) // the link's maker chose it
			}
			return fail(fmt.Errorf("the state directory %s: %s is a symbolic link%s, which another user or a sandboxed program may have made; the server follows no link on the way to its state directory: pass --state-dir with a path without links", dir, here, target))
		default:
			return fail(fmt.Errorf("the state directory %s: %s is not a directory (pass --state-dir)", dir, here))
		}
		flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			// Read access for the owner check and the chmod
			// (privateStateDir); a directory on the way may be
			// searchable only (a 0711 home).
			flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		}
		next, err := unix.Openat(fd, name, flags, 0)
		if err != nil {
			return fail(fmt.Errorf("the state directory %s: open %s: %w (pass --state-dir)", dir, here, err))
		}
		unix.Close(fd)
		fd, walked = next, here
	}
	return walked, fd, nil
}
