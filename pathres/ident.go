package pathres

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The text of a /proc magic link (fd/N, cwd, root, exe) is d_path of the
// object: its path as seen from the reader's root, built by walking up the
// mounts the object hangs on. For an object on a mount of another mount
// namespace (a process in `unshare -m`, flatpak, rootless podman, or an fd
// the tree got from one) those mounts are not tracecell's, and the text is a
// path in that namespace: /proc/<pid>/root of a process in a namespace whose
// /dev/shm is its own tmpfs reads "/", and its /dev/shm/x is not tracecell's
// /dev/shm/x. The kernel does not walk the text: it jumps to the object
// (nd_jump_link) and walks what follows through that namespace's mounts.
//
// So the text is trusted only when it leads, in tracecell's namespace, to
// the very object: the same inode on the same mount (statx STATX_MNT_ID
// since Linux 5.8, the fdinfo of an O_PATH fd before; mount ids are unique
// across namespaces, and an `unshare -m` copy of a mount is a new mount with
// a new id even though its inodes are the same). Once the walk stands on a mount of tracecell's namespace, every
// mount below or above it, and every absolute symlink (the tree's root is
// tracecell's, chroot is denied), is tracecell's too.

// ID is what a path leads to: the mount it is reached through and the inode.
type ID struct {
	// Mnt is the mount id (statx STATX_MNT_ID, or fdinfo's mnt_id: the
	// id of /proc/<pid>/mountinfo).
	Mnt      uint64
	Dev, Ino uint64
	Mode     fs.FileMode // type and permission bits, as Result.Mode
}

// IsDir reports whether the object is a directory.
func (id ID) IsDir() bool { return id.Mode.IsDir() }

// same reports whether a and b are the same inode on the same mount.
func (id ID) same(b ID) bool {
	return id.Dev == b.Dev && id.Ino == b.Ino && id.Mnt == b.Mnt
}

// noMntID makes StatID ignore statx's mount id, as on a kernel before 5.8
// (for tests).
var noMntID bool

// noStatx is set once statx(2) answered ENOSYS (a kernel before 4.11, or a
// container's seccomp profile that does not know it).
var noStatx bool

// StatID is statx(2) of p for its mount and inode, following a last symlink
// (and so a /proc magic link, to its object) when follow is set. Where statx
// does not report the mount (before Linux 5.8) it is read from the
// "mnt_id:" line of the fdinfo of an O_PATH fd of p (Linux 3.15).
func StatID(p string, follow bool) (ID, error) {
	flags := 0
	if !follow {
		flags = unix.AT_SYMLINK_NOFOLLOW
	}
	var id ID
	haveMnt := false
	if !noStatx {
		dirfd, name, done, err := at(p) // a path of PATH_MAX or more: long.go
		if err != nil {
			return ID{}, err
		}
		var stx unix.Statx_t
		err = unix.Statx(dirfd, name, flags,
			unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_INO|unix.STATX_MNT_ID, &stx)
		for err == syscall.EINTR { // a FUSE file system can be interrupted
			err = unix.Statx(dirfd, name, flags,
				unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_INO|unix.STATX_MNT_ID, &stx)
		}
		done()
		switch {
		case err == syscall.ENOSYS:
			noStatx = true
		case err != nil:
			return ID{}, err
		default:
			id = ID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino, Mode: fileMode(uint32(stx.Mode))}
			if stx.Mask&unix.STATX_MNT_ID != 0 && !noMntID {
				id.Mnt, haveMnt = stx.Mnt_id, true
			}
		}
	}
	if noStatx {
		fi, err := lstat(p, follow)
		if err != nil {
			return ID{}, err
		}
		id = ID{Dev: fi.dev, Ino: fi.ino, Mode: fi.mode}
	}
	if !haveMnt {
		m, err := fdinfoMountID(p, follow)
		if err != nil {
			return ID{}, err
		}
		id.Mnt = m
	}
	return id, nil
}

// fdinfoMountID is the mount id of what p leads to, from the fdinfo of an
// O_PATH fd of it (an O_PATH open of a /proc magic link lands on its object,
// on its mount).
func fdinfoMountID(p string, follow bool) (uint64, error) {
	flags := unix.O_PATH | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	dirfd, name, done, err := at(p) // a path of PATH_MAX or more: long.go
	if err != nil {
		return 0, err
	}
	fd, err := openat(dirfd, name, flags)
	done()
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, fmt.Errorf("mount of %s: %v", p, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "mnt_id:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				return m, nil
			}
		}
	}
	return 0, fmt.Errorf("mount of %s: no mnt_id in its fdinfo", p)
}

// LinkError is a /proc magic link whose text does not name, in tracecell's
// mount namespace, the object the link leads to: the object is on a mount of
// another namespace, or was moved, or the name now leads elsewhere. A walk
// cannot go on from such a text; callers deny the call (fail closed).
type LinkError struct {
	Link, Text string
	Why        string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s reads %q, which %s", e.Link, e.Text, e.Why)
}

// CheckLink checks that text, read from the /proc magic link link, names in
// tracecell's mount namespace the object obj the link leads to (StatID(link,
// true)): lstat of text must find the same inode on the same mount. It
// returns what text names. The error is a *LinkError when it does not, or the
// errno of a failed lstat.
func CheckLink(link, text string, obj ID) (ID, error) {
	named, err := StatID(text, false)
	if err != nil {
		return ID{}, &LinkError{link, text, fmt.Sprintf("cannot be looked up by that name (%v): it was moved or removed, or is in another mount namespace", err)}
	}
	if !obj.same(named) {
		why := "is another file by that name: the object was moved, or is in another mount namespace"
		if obj.Mnt != named.Mnt && obj.Dev == named.Dev && obj.Ino == named.Ino {
			why = "is the same inode on another mount: the object is in another mount namespace (or that name is mounted over)"
		}
		return ID{}, &LinkError{link, text, why}
	}
	return named, nil
}

// checkDeleted checks the object obj of a magic link whose text is an
// unlinked file's old name (name, without " (deleted)"): the text cannot be
// looked up, but the object must be on the mount its old directory is on in
// tracecell's namespace, or the name would be one of another namespace.
func checkDeleted(link, text, name string, obj ID) error {
	dir := parent(name)
	d, err := StatID(dir, true)
	switch {
	case err != nil:
		return &LinkError{link, text, fmt.Sprintf("names an unlinked file in %s, which cannot be looked up (%v)", dir, err)}
	case d.Dev != obj.Dev || d.Mnt != obj.Mnt:
		return &LinkError{link, text, fmt.Sprintf("names an unlinked file that is not on the mount of %s: it is in another mount namespace", dir)}
	}
	return nil
}
