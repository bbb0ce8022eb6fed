package pathres

// Paths of PATH_MAX bytes or more.
//
// The kernel limits the path a call is given to PATH_MAX (4096 bytes with
// the NUL), not the depth of the tree: a thread whose cwd (or dirfd) lies
// deeper than that creates "x" relatively as on any other directory. The
// walk here works on absolute paths, which at that depth are too long for
// lstat(2) and readlink(2) (ENAMETOOLONG from getname), and the cwd's own
// name is too long for readlink of /proc/<tid>/cwd (d_path into one page,
// fs/proc/base.c do_proc_readlink). So:
//   - at opens the directory of a long path in steps shorter than
//     PATH_MAX (openat with O_PATH, 2.6.39) and the call is made relative
//     to it: the same lookups the absolute path would make;
//   - DirPath names a directory reached through a /proc magic link by
//     going up from it with "..", as getcwd(3) did before the kernel had a
//     getcwd call: each step finds the name under which the parent lists
//     the child (same device and inode).

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// nameMax is NAME_MAX, the longest component the kernel looks up.
const nameMax = 255

// at returns a directory fd and a name for the absolute path p, for the
// *at calls: AT_FDCWD and p itself when p is shorter than PathMax, else an
// O_PATH fd of p's directory (opened in steps that each stay below
// PathMax) and p's last component. done closes the fd.
func at(p string) (dirfd int, name string, done func(), err error) {
	if len(p) < PathMax {
		return unix.AT_FDCWD, p, func() {}, nil
	}
	i := strings.LastIndexByte(p, '/')
	dir, name := p[:i], p[i+1:]
	fd, err := openDir(dir)
	if err != nil {
		return -1, "", nil, err
	}
	return fd, name, func() { unix.Close(fd) }, nil
}

// openDir opens the absolute directory path dir (of any length) with
// O_PATH, following symlinks in it as a lookup of the whole path would.
func openDir(dir string) (int, error) {
	fd := unix.AT_FDCWD
	rest := dir
	if rest == "" {
		rest = "/"
	}
	for rest != "" {
		step := rest
		if len(step) >= PathMax {
			// Cut at the last '/' that keeps the step short enough.
			j := strings.LastIndexByte(step[:PathMax-1], '/')
			if j <= 0 {
				closeFd(fd)
				return -1, syscall.ENAMETOOLONG // a component longer than NAME_MAX
			}
			step = step[:j]
		}
		rest = rest[len(step):]
		nfd, err := openat(fd, step, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
		closeFd(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
		rest = strings.TrimLeft(rest, "/")
	}
	return fd, nil
}

func closeFd(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

func openat(dirfd int, p string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, p, flags, 0)
		if err != syscall.EINTR { // a FUSE file system can be interrupted
			return fd, err
		}
	}
}

// readlink is readlink(2) of the absolute path p, of any length.
func readlink(p string) (string, error) {
	dirfd, name, done, err := at(p)
	if err != nil {
		return "", err
	}
	defer done()
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		m, err := unix.Readlinkat(dirfd, name, b)
		if err == syscall.EINTR {
			n /= 2
			continue
		}
		if err != nil {
			return "", &pathError{"readlink", p, err}
		}
		if m < n {
			return string(b[:m]), nil
		}
	}
}

// pathError is os.PathError without importing os here twice over; it
// unwraps to the errno.
type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// DirPath is the absolute path of the directory that link (a /proc magic
// link: /proc/<tid>/cwd, /proc/<tid>/fd/N) leads to, when readlink cannot
// give it because it is PATH_MAX bytes or longer. It goes up from the
// directory until readlink of an fd of an ancestor succeeds, and finds each
// name on the way in the parent's entries: the entry with the child's
// device and inode (the stat of a mount point's entry shows the mount's
// root, so mounts are crossed as well). The caller checks, as for any
// readlink text, that the path leads to the same object (CheckLink).
func DirPath(link string) (string, error) {
	fd, err := openat(unix.AT_FDCWD, link, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return "", err
	}
	var names []string
	total := 0
	for depth := 0; ; depth++ {
		text, err := readlinkShort("/proc/self/fd/" + strconv.Itoa(fd))
		if err == nil && strings.HasPrefix(text, "/") && !strings.HasSuffix(text, deletedSuffix) {
			unix.Close(fd)
			for i := len(names) - 1; i >= 0; i-- {
				text = join(text, names[i])
			}
			return text, nil
		}
		if err != nil && err != syscall.ENAMETOOLONG {
			unix.Close(fd)
			return "", fmt.Errorf("name of %s: %w", link, err)
		}
		if err == nil || total > 1<<20 || depth > 1<<16 {
			unix.Close(fd)
			return "", fmt.Errorf("name of %s: no path from / (%q)", link, text)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return "", err
		}
		pfd, err := openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
		unix.Close(fd)
		if err != nil {
			return "", fmt.Errorf("name of %s: open ..: %w", link, err)
		}
		fd = pfd
		name, err := entryOf(fd, st.Dev, st.Ino)
		if err != nil {
			unix.Close(fd)
			return "", fmt.Errorf("name of %s: %w", link, err)
		}
		names = append(names, name)
		total += len(name) + 1
	}
}

// readlinkShort is readlink of a short path, the bare errno on failure.
func readlinkShort(p string) (string, error) {
	b := make([]byte, PathMax)
	for {
		n, err := unix.Readlink(p, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
}

// entryOf finds the name in the directory open at fd whose lstat (or, for
// a mount point, stat: its mounted root) has device dev and inode ino.
func entryOf(fd int, dev, ino uint64) (string, error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return "", err
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n <= 0 {
			return "", fmt.Errorf("no entry of the parent directory is the directory (device %d inode %d): moved meanwhile", dev, ino)
		}
		var names []string
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		for _, name := range names {
			if len(name) > nameMax {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				continue
			}
			if uint64(st.Dev) == dev && uint64(st.Ino) == ino {
				return name, nil
			}
		}
	}
}
