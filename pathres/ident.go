package pathres

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
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
// the very object: the same inode on the same mount (statx STATX_MNT_ID,
// Linux 5.8; mount ids are unique across namespaces, and an `unshare -m`
// copy of a mount is a new mount with a new id even though its inodes are
// the same). Once the walk stands on a mount of tracecell's namespace, every
// mount below or above it, and every absolute symlink (the tree's root is
// tracecell's, chroot is denied), is tracecell's too.

// ID is what a path leads to: the mount it is reached through and the inode.
type ID struct {
	// Mnt is the mount id (statx STATX_MNT_ID, the id of
	// /proc/<pid>/mountinfo); 0 when the kernel does not report it
	// (before 5.8).
	Mnt      uint64
	Dev, Ino uint64
	Mode     fs.FileMode // type and permission bits, as Result.Mode
}

// IsDir reports whether the object is a directory.
func (id ID) IsDir() bool { return id.Mode.IsDir() }

// same reports whether a and b are the same inode on the same mount. Without
// mount ids (an old kernel) only the inode can be compared.
func (id ID) same(b ID) bool {
	return id.Dev == b.Dev && id.Ino == b.Ino && id.Mnt == b.Mnt
}

// noMntID makes StatID leave Mnt 0, as before Linux 5.8 (for tests).
var noMntID bool

// noStatx is set once statx(2) answered ENOSYS (a kernel before 4.11, or a
// container's seccomp profile that does not know it).
var noStatx bool

// StatID is statx(2) of p for its mount and inode, following a last symlink
// (and so a /proc magic link, to its object) when follow is set.
func StatID(p string, follow bool) (ID, error) {
	flags := 0
	if !follow {
		flags = unix.AT_SYMLINK_NOFOLLOW
	}
	if !noStatx {
		var stx unix.Statx_t
		for {
			err := unix.Statx(unix.AT_FDCWD, p, flags,
				unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_INO|unix.STATX_MNT_ID, &stx)
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.ENOSYS {
				noStatx = true
				break
			}
			if err != nil {
				return ID{}, err
			}
			id := ID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino, Mode: fileMode(uint32(stx.Mode))}
			if stx.Mask&unix.STATX_MNT_ID != 0 && !noMntID {
				id.Mnt = stx.Mnt_id
			}
			return id, nil
		}
	}
	fi, err := lstat(p, follow)
	if err != nil {
		return ID{}, err
	}
	return ID{Dev: fi.dev, Ino: fi.ino, Mode: fi.mode}, nil
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
//
// Without mount ids (Linux before 5.8) the inode is compared, and the
// process whose entry link is must be in tracecell's mount namespace; an fd
// or cwd the tree itself holds into another namespace is then caught only
// when its inode differs (see README, Known gaps).
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
	if obj.Mnt == 0 {
		if err := sameMountNS(link); err != nil {
			return ID{}, &LinkError{link, text, err.Error()}
		}
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
	if obj.Mnt == 0 {
		if err := sameMountNS(link); err != nil {
			return &LinkError{link, text, err.Error()}
		}
	}
	return nil
}

var ownNS struct {
	once sync.Once
	id   ID
	err  error
}

// sameMountNS fails unless the process whose /proc entry link is under is in
// tracecell's mount namespace.
func sameMountNS(link string) error {
	rest, _ := strings.CutPrefix(link, "/proc/")
	pid, _, _ := strings.Cut(rest, "/")
	if _, err := strconv.Atoi(pid); err != nil {
		return fmt.Errorf("is not under /proc/<pid>")
	}
	ownNS.once.Do(func() { ownNS.id, ownNS.err = StatID("/proc/self/ns/mnt", true) })
	if ownNS.err != nil {
		return fmt.Errorf("cannot be checked: tracecell's own mount namespace is unknown (%v)", ownNS.err)
	}
	ns, err := StatID("/proc/"+pid+"/ns/mnt", true)
	if err != nil {
		return fmt.Errorf("cannot be checked: the mount namespace of process %s is unknown (%v)", pid, err)
	}
	if !ns.same(ownNS.id) {
		return fmt.Errorf("names a path in the mount namespace of process %s, not tracecell's", pid)
	}
	return nil
}
