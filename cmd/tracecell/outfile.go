package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/fsview"
)

// The files tracecell itself writes on a run (--trace, --report, the
// TRACECELL_CPUPROFILE profile) may be named inside a writable root, where a
// traced program of this or an earlier run could have left a symlink (or a
// hard link) to a host file. tracecell may run as root, and its writes are
// not checked by the policy: it must never write through such a link.
//
//   - The last component is never followed: O_NOFOLLOW makes open(2) fail
//     with ELOOP on a symlink (Linux since 2.1.126; every supported kernel).
//   - An existing file is written only if it is a regular file with one
//     link: a hard link to a host file shares its inode, and truncating it
//     would truncate the host file. It is truncated only after that check,
//     through the fd (ftruncate), never by O_TRUNC at open.
//   - A directory component that is a symlink sitting inside a writable or
//     scratch root of this run is refused: the tree may have planted it.
//     Symlinks elsewhere (/var/run -> /run, a home on another disk) are the
//     operator's and are followed as usual.
//   - The path is cleaned before it is opened, so a ".." is never applied
//     after the kernel has followed a symlink.
//   - The file is never inside a writable or scratch root at all (roots
//     given): the tree may write there for the whole run, so it could
//     rename the report's directory and leave a forged report at the
//     path, or rewrite the trace. Nor is a trace ever a file the command
//     gets as its stdin, stdout or stderr (sharedWithCommand).

// outputPath checks path, given with option opt (e.g. "--trace"), against
// roots (resolved writable and scratch roots) and returns it absolute and
// cleaned, the form to open.
func outputPath(opt, path string, roots []string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%s: empty path: give a FILE", opt)
	}
	abs, err := config.Abs(path) // ~/x and ~user/x as a shell expands them
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", opt, path, err)
	}
	// Every directory component, from the top: "/a", "/a/b", ...
	dir := filepath.Dir(abs)
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		prefix := dir[:i]
		if prefix == "/" {
			continue
		}
		st, err := os.Lstat(prefix)
		if err != nil {
			break // missing: opening fails below and says so
		}
		if st.Mode()&os.ModeSymlink == 0 {
			continue
		}
		parent, err := filepath.EvalSymlinks(filepath.Dir(prefix))
		if err != nil {
			continue
		}
		if r := rootOf(parent, roots); r != "" {
			return "", fmt.Errorf("%s %s: %s is a symbolic link inside the writable root %s, which a traced program may have planted; tracecell does not write through it: remove the link or give a path without it", opt, path, prefix, r)
		}
	}
	if len(roots) > 0 {
		// Where the file really is: its directory with the operator's
		// symlinks followed (checked above for the tree's), or for one
		// of tracecell's own streams the file behind the descriptor.
		where := abs
		if fd := ownStreamFD(abs); fd >= 0 {
			// "pipe:[…]", "/dev/pts/1", or a file's path.
			where, _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		} else if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			where = filepath.Join(d, filepath.Base(abs))
		}
		r := ""
		if filepath.IsAbs(where) {
			if r = rootOf(where, roots); r == "" {
				r = fsview.InsideWritable(filepath.Dir(where), roots)
			}
			if _, err := os.Lstat(where); r == "" && err == nil {
				// The file itself may be a mount (a bind mount of a file
				// in a root: docker -v file:file, a Kubernetes subPath).
				r = fsview.InsideWritable(where, roots)
			}
		}
		if r != "" {
			return "", fmt.Errorf("%s %s: is inside the writable root %s, where the traced program could move, replace or forge it while it runs: give a path outside the writable and scratch roots", opt, path, r)
		}
	}
	return abs, nil
}

// rootOf is the root of roots that p is or is below, or "".
func rootOf(p string, roots []string) string {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return r
		}
	}
	return ""
}

// linkError turns open(2)'s ELOOP for O_NOFOLLOW into the one-line message.
func linkError(opt, path string, err error) error {
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%s %s: is a symbolic link; tracecell never writes through a link (a traced program may have left it there): remove it or give another path", opt, path)
	}
	return fmt.Errorf("%s %s: %w", opt, path, err)
}

// createOutput opens path (checked by outputPath) for writing from its
// start, creating it mode 0644 if missing, without following a symlink or
// truncating a file that has other links. The fd is close-on-exec.
func createOutput(opt, path string, roots []string) (*os.File, error) {
	abs, err := outputPath(opt, path, roots)
	if err != nil {
		return nil, err
	}
	if isOwnStream(abs) {
		// --trace /dev/stderr: one of tracecell's own fds, which the
		// operator gave it; a link the tree cannot have made (/dev is
		// not writable to it, /proc/self is tracecell's own). Appended
		// to, never truncated: it may be a terminal, a pipe or a file.
		f, err := os.OpenFile(abs, os.O_WRONLY|os.O_APPEND|unix.O_NOCTTY, 0)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", opt, path, err)
		}
		if err := notSharedWithCommand(opt, path, int(f.Fd())); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	// O_NONBLOCK: a FIFO left at path must not block the open until some
	// reader comes (it fails with ENXIO instead); cleared below once the
	// file is known to be a regular one.
	fd, err := unix.Open(abs, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, linkError(opt, path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s %s: fstat: %w", opt, path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s %s: not a regular file: give a FILE to create or overwrite", opt, path)
	}
	if st.Nlink > 1 {
		unix.Close(fd)
		return nil, fmt.Errorf("%s %s: has %d hard links, so overwriting it would change another file too (a traced program may have linked it): remove it or give another path", opt, path, st.Nlink)
	}
	// `--trace t.jsonl >t.jsonl`: a file by its name is the command's
	// stdout all the same (red team, round 51).
	if err := notSharedWithCommand(opt, path, fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s %s: fcntl: %w", opt, path, err)
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s %s: truncate: %w", opt, path, err)
	}
	return os.NewFile(uintptr(fd), abs), nil
}

// isOwnStream: p names one of tracecell's own open files: /dev/stdout,
// /dev/stderr, /dev/fd/N or /proc/self/fd/N.
func isOwnStream(p string) bool { return ownStreamFD(p) >= 0 }

// ownStreamFD is the descriptor an own stream names (1 for /dev/stdout,
// N for /dev/fd/N), -1 for any other path.
func ownStreamFD(p string) int {
	switch p {
	case "/dev/stdout":
		return 1
	case "/dev/stderr":
		return 2
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, ok := strings.CutPrefix(p, dir); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			if fd, err := strconv.Atoi(n); err == nil {
				return fd
			}
		}
	}
	return -1
}

// notSharedWithCommand is the error for an output f that the command gets
// as one of its stdio streams (sharedWithCommand), nil otherwise.
func notSharedWithCommand(opt, path string, fd int) error {
	if std := sharedWithCommand(fd); std != "" {
		return fmt.Errorf("%s %s: is the same file as the command's %s, so the command's own output would mix with the trace and it could forge or erase trace lines: give a FILE outside the writable roots, or a descriptor of tracecell's own (%s /dev/fd/3 3>trace.jsonl)", opt, path, std, opt)
	}
	return nil
}

// sharedWithCommand names the stdio stream of tracecell's that fd is the
// same file as ("stdout" for --trace /dev/stdout, or /dev/fd/3 given
// 3>&1), "" when none: the command gets tracecell's fds 0, 1 and 2, and
// anything it writes there lands in f too (through a regular file's fd it
// may even truncate and rewrite it).
func sharedWithCommand(fd int) string {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return ""
	}
	for std, name := range []string{"stdin", "stdout", "stderr"} {
		var o unix.Stat_t
		if unix.Fstat(std, &o) == nil && o.Dev == st.Dev && o.Ino == st.Ino {
			return name
		}
	}
	return ""
}

// createNewOutput creates path (checked by outputPath), which must not
// exist yet: never a link, never an existing file. The fd is close-on-exec.
func createNewOutput(opt, path string) (*os.File, error) {
	abs, err := outputPath(opt, path, nil)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("%s %s: exists; tracecell writes this file only where none is: remove it or name a new file", opt, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", opt, path, err)
	}
	return os.NewFile(uintptr(fd), abs), nil
}
