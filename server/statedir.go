package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxStateDirLinks bounds the symlinks followed on the way to the state
// directory (the kernel's own limit is 40).
const maxStateDirLinks = 40

// openStateDir creates what is missing of the state directory dir (an
// absolute, clean path; each new directory 0700), walking it one component
// at a time without following symlinks, and returns its resolved path and
// a descriptor of it opened through that walk.
//
// A symlink is never followed at the last component, and on the way only
// when it is a system's own: owned by root or this server's user, in a
// directory owned by root or this user that no other user may write (a
// /var/run -> /run). Otherwise the server would chmod and fill whatever the
// link points to: a default /var/tmp/tracecell-<uid> planted by another
// local user (the kernel follows it unless fs.protected_symlinks is set),
// or $XDG_STATE_HOME/tracecell made a link by a sandboxed tree that could
// write there on an earlier run (red team, round 63).
func openStateDir(dir string) (string, int, error) {
	euid := uint32(os.Geteuid())
	refuse := func(at, why string) (string, int, error) {
		return "", -1, fmt.Errorf("the state directory %s: %s %s; a link there may have been planted by another user or a sandboxed program: pass --state-dir with the real directory", dir, at, why)
	}
	path, links := dir, 0
restart:
	if !filepath.IsAbs(path) {
		return "", -1, fmt.Errorf("the state directory %s: not an absolute path", dir)
	}
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, os.NewSyscallError("open /", err)
	}
	walked := "/"
	for i, name := range parts {
		if name == "" {
			continue
		}
		last := i == len(parts)-1
		var st unix.Stat_t
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.ENOENT {
			if err = unix.Mkdirat(fd, name, 0o700); err != nil && err != unix.EEXIST {
				unix.Close(fd)
				return "", -1, fmt.Errorf("create the state directory %s: mkdir %s: %w (pass --state-dir)", dir, filepath.Join(walked, name), err)
			}
			err = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil {
			unix.Close(fd)
			return "", -1, fmt.Errorf("the state directory %s: %s: %w (pass --state-dir)", dir, filepath.Join(walked, name), err)
		}
		here := filepath.Join(walked, name)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			var pst unix.Stat_t
			perr := unix.Fstat(fd, &pst)
			buf := make([]byte, unix.PathMax)
			n, rerr := unix.Readlinkat(fd, name, buf)
			unix.Close(fd)
			switch {
			case last:
				return refuse(here, "is a symbolic link")
			case st.Uid != 0 && st.Uid != euid:
				return refuse(here, fmt.Sprintf("is a symbolic link owned by uid %d", st.Uid))
			case perr != nil || (pst.Uid != 0 && pst.Uid != euid) || pst.Mode&0o022 != 0:
				return refuse(here, "is a symbolic link in a directory other users may write")
			case rerr != nil:
				return "", -1, fmt.Errorf("the state directory %s: readlink %s: %w", dir, here, rerr)
			}
			if links++; links > maxStateDirLinks {
				return refuse(here, "goes through too many symbolic links")
			}
			target := string(buf[:n])
			if !filepath.IsAbs(target) {
				target = filepath.Join(walked, target)
			}
			path = filepath.Join(append([]string{target}, parts[i+1:]...)...)
			goto restart
		default:
			unix.Close(fd)
			return "", -1, fmt.Errorf("the state directory %s: %s is not a directory (pass --state-dir)", dir, here)
		}
		flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			// Read access for the owner check and the chmod
			// (privateStateDir); a directory on the way may be
			// searchable only (a 0711 home).
			flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		}
		next, err := unix.Openat(fd, name, flags, 0)
		unix.Close(fd)
		if err != nil {
			return "", -1, fmt.Errorf("the state directory %s: open %s: %w (pass --state-dir)", dir, here, err)
		}
		fd, walked = next, here
	}
	if walked == "/" {
		unix.Close(fd)
		return "", -1, fmt.Errorf("the state directory %s: / cannot be one (pass --state-dir)", dir)
	}
	return walked, fd, nil
}
