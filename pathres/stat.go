package pathres

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// info is what a walk needs of a stat(2): the type and mode bits, and the
// identity the DirCache checks.
type info struct {
	mode     fs.FileMode
	dev, ino uint64
}

func (i info) IsDir() bool { return i.mode.IsDir() }

// lstat is lstat(2) of p, or stat(2) when follow is set. It is the walk's
// hot path (every checked call makes one or two), so it does not go through
// os.Lstat, which allocates a FileInfo and, for the missing names that
// creates look up, a PathError; measured on a 2-core VM, 2.9 µs against
// 3.5 µs for a missing name on tmpfs. The error is the bare errno.
func lstat(p string, follow bool) (info, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	dirfd, name := unix.AT_FDCWD, p
	if len(p) >= PathMax { // long.go
		fd, n, done, err := at(p)
		if err != nil {
			return info{}, err
		}
		defer done()
		dirfd, name = fd, n
	}
	var st unix.Stat_t
	for {
		err := fstatat(dirfd, name, &st, flags)
		if err == syscall.EINTR {
			continue // a FUSE file system can be interrupted; os.Lstat retries too
		}
		if err != nil {
			return info{}, err
		}
		return info{mode: fileMode(st.Mode), dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
	}
}

// fileMode converts st_mode as os.Lstat does (os/stat_linux.go
// fillFileStatFromSys), so that Result.Mode reads the same.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
