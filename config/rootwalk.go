package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxRootLinks bounds the symbolic links followed while resolving one
// writable root (the kernel's own limit for a path walk is 40).
const maxRootLinks = 40

// walkRoot resolves the writable root a (absolute) and creates its missing
// directories, one component at a time through file descriptors
// (O_PATH|O_NOFOLLOW), so that no name is looked up twice: a tree that
// swaps a directory for a symbolic link while tracecell starts (a
// background command of the same SandboxAgent session, another tracecell's
// tree with the same outer root) cannot make a component lead elsewhere
// between a check and its use. A symbolic link is followed only where the
// directory that holds it is not in writable (a resolved writable or
// scratch root of the run other than this one): there the tree may have
// put it. The resolved path is read from /proc/self/fd at the end.
//
// Missing directories are made with mode (before the umask) when create is
// set; otherwise a missing component is an error.
func walkRoot(a string, writable func(dir string) bool, create bool, mode uint32) (string, error) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", os.NewSyscallError("open /", err)
	}
	// fds[i] is the directory at depth i; dirs[i] its resolved path.
	fds, dirs := []int{root}, []string{"/"}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	pending := splitPath(a)
	links := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(fds) > 1 {
				unix.Close(fds[len(fds)-1])
				fds, dirs = fds[:len(fds)-1], dirs[:len(dirs)-1]
			}
			continue
		}
		cur, curPath := fds[len(fds)-1], dirs[len(dirs)-1]
		fd, err := unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			// Missing: made here, in the directory already held.
			if err := unix.Mkdirat(cur, c, mode); err != nil && !errors.Is(err, unix.EEXIST) {
				return "", fmt.Errorf("cannot create the directory %s: %w", filepath.Join(curPath, c), err)
			}
			fd, err = unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Join(curPath, c), err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return "", fmt.Errorf("%s: %w", filepath.Join(curPath, c), err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			fds, dirs = append(fds, fd), append(dirs, filepath.Join(curPath, c))
		case unix.S_IFLNK:
			name := filepath.Join(curPath, c)
			if writable(curPath) {
				unix.Close(fd)
				return "", &linkInRootError{name}
			}
			target, err := readlinkFD(fd)
			unix.Close(fd)
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			if links++; links > maxRootLinks {
				return "", fmt.Errorf("%s: too many symbolic links", a)
			}
			rest := append(splitPath(target), pending...)
			if strings.HasPrefix(target, "/") {
				for _, fd := range fds[1:] {
					unix.Close(fd)
				}
				fds, dirs = fds[:1], dirs[:1]
			}
			pending = rest
		default:
			unix.Close(fd)
			return "", fmt.Errorf("%s: not a directory", filepath.Join(curPath, c))
		}
	}
	r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fds[len(fds)-1]))
	if err != nil {
		return "", err
	}
	return r, nil
}

// linkInRootError: a component of a writable root is a symbolic link in a
// directory the tree can write.
type linkInRootError struct{ link string }

func (e *linkInRootError) Error() string {
	return fmt.Sprintf("%s is a symbolic link in a directory the tree can write (another writable or scratch root), which a traced program may have put there; give the directory it should be (resolved), or remove the link", e.link)
}

func splitPath(p string) []string { return strings.Split(p, "/") }

// readlinkFD reads the target of the symbolic link fd was opened on
// (O_PATH|O_NOFOLLOW): readlinkat with an empty name, Linux 2.6.39.
func readlinkFD(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
