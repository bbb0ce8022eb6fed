// Package rmtree removes a directory tree that untrusted code built, with a
// bounded number of file descriptors.
//
// os.RemoveAll keeps one descriptor open per directory level. A sandbox
// holds whatever the code made, and a loop of mkdir and chdir makes a chain
// thousands of directories deep in a second: removing it would take
// thousands of descriptors from the server that every session shares (with
// RLIMIT_NOFILE at 1024 a 3000-deep chain fails half-removed, and accept(2)
// and the worker pipes of other sessions fail with EMFILE meanwhile).
//
// RemoveAll here holds at most MaxDepth+2 descriptors: a directory found
// MaxDepth levels down is renamed into the top directory under a fresh name
// and removed from there later, so no chain of open directories grows past
// the bound. It never follows a symlink (every directory is opened with
// O_NOFOLLOW relative to its parent's descriptor, and a symlink is unlinked
// as itself), and makes each directory it empties readable, writable and
// searchable by its owner first, because the code may have made it
// read-only or mode 0.
package rmtree

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// MaxDepth is how many directory levels below the top one RemoveAll keeps
// open at once.
const MaxDepth = 32

// movedPrefix names the directories moved up to the top one.
const movedPrefix = ".tracecell-rm-"

// RemoveAll removes path and everything below it. A path that does not
// exist is no error; a symlink is removed itself, never what it points to.
// The error names the first entry that could not be removed.
func RemoveAll(path string) error {
	if path == "" {
		return errors.New("rmtree: empty path")
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// Not a directory (or a symlink to one): remove the entry itself.
		if err := unix.Unlink(path); err != nil && err != unix.ENOENT {
			if err == unix.EISDIR {
				return fmt.Errorf("remove %s: %w", path, os.ErrPermission)
			}
			return &os.PathError{Op: "remove", Path: path, Err: err}
		}
		return nil
	}
	r := &remover{top: fd, topPath: path}
	err = r.empty(fd, nil)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Rmdir(path); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

type remover struct {
	top     int    // the top directory, where deep directories are moved
	topPath string // its path, for errors
	moved   int    // directories moved up so far, for fresh names
}

// empty removes every entry of the directory fd, whose names below the top
// are chain (for errors). The entries are read again until none is left:
// removing while reading may skip some, and directories moved up to the
// top land in the top directory while it is being emptied.
//
// Precondition: fd is open on a directory at depth len(chain).
func (r *remover) empty(fd int, chain []string) error {
	// u+rwx: the code may have made it read-only or unsearchable.
	unix.Fchmod(fd, 0o700)
	for {
		names, err := ReadSome(fd, readBatch)
		if err != nil {
			return r.err("read", chain, err)
		}
		if len(names) == 0 {
			return nil
		}
		for _, n := range names {
			if err := r.remove(fd, chain, n); err != nil {
				return err
			}
		}
	}
}

// remove removes entry n of the directory fd.
func (r *remover) remove(fd int, chain []string, n string) error {
	err := unix.Unlinkat(fd, n, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return r.err("remove", append(chain, n), err)
	}
	sub, err := openDir(fd, n)
	if err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return r.err("open", append(chain, n), err)
	}
	if len(chain) >= MaxDepth {
		// Deep enough: move it up to the top directory, which is read
		// again until empty. Moving a directory to another parent
		// rewrites its "..", so it must be writable.
		unix.Fchmod(sub, 0o700)
		unix.Close(sub)
		if err := r.moveUp(fd, n); err != nil {
			return r.err("move up", append(chain, n), err)
		}
		return nil
	}
	err = r.empty(sub, append(chain, n))
	unix.Close(sub)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(fd, n, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return r.err("remove", append(chain, n), err)
	}
	return nil
}

// openDir opens directory n of fd for reading, never through a symlink.
// One the code made unreadable (mode 0 say) is made u+rwx first, through
// an O_PATH descriptor, which needs no permission on it, and /proc/self/fd
// (fchmod of an O_PATH descriptor fails before Linux 5.x, and fchmodat has
// no AT_SYMLINK_NOFOLLOW before fchmodat2).
func openDir(fd int, n string) (int, error) {
	sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != unix.EACCES {
		return sub, err
	}
	p, err := unix.Openat(fd, n, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(p)
	self := "/proc/self/fd/" + strconv.Itoa(p)
	if err := unix.Chmod(self, 0o700); err != nil {
		return -1, err
	}
	return unix.Open(self, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// moveUp renames directory n of fd into the top directory under a name
// no entry there has (RENAME_NOREPLACE, 3.15; where the file system lacks
// it, a name checked to be free: nothing else writes there by now).
func (r *remover) moveUp(fd int, n string) error {
	for {
		r.moved++
		to := movedPrefix + strconv.Itoa(r.moved)
		err := unix.Renameat2(fd, n, r.top, to, unix.RENAME_NOREPLACE)
		if err == unix.EINVAL || err == unix.ENOSYS {
			var st unix.Stat_t
			if unix.Fstatat(r.top, to, &st, unix.AT_SYMLINK_NOFOLLOW) != unix.ENOENT {
				continue
			}
			err = unix.Renameat(fd, n, r.top, to)
		}
		if err != unix.EEXIST {
			return err
		}
	}
}

// err names the entry chain below the top directory. A chain longer than
// a few levels is shortened in the middle: the path of a directory moved up
// is not its original one anyway.
func (r *remover) err(op string, chain []string, err error) error {
	shown := chain
	if len(shown) > 8 {
		shown = append(append(append([]string{}, chain[:3]...), "..."), chain[len(chain)-3:]...)
	}
	return &os.PathError{Op: op, Path: filepath.Join(append([]string{r.topPath}, shown...)...), Err: err}
}

// readBatch is how many names a directory read takes at a time.
const readBatch = 1024

// dirFile reads the directory fd from its start through a duplicate, so fd
// itself stays open and at its place.
func dirFile(fd int) (*os.File, error) {
	d, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(d)
	f := os.NewFile(uintptr(d), "dir")
	// Seek to the start: a duplicate shares the offset of earlier reads.
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadSome lists at most n names of the directory fd (never "." or ".."),
// in the directory's order. A caller that removes what it read and asks
// again empties a directory of any size holding n names at a time: the
// code in a sandbox chooses how many entries a directory has.
func ReadSome(fd, n int) ([]string, error) {
	f, err := dirFile(fd)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(n)
	if err == io.EOF {
		err = nil
	}
	return names, err
}

// FirstNames returns the k names of the directory fd that sort first, in
// order, and whether it has more. It reads every name but holds at most k
// of them (a max-heap of the smallest so far), so a listing capped at k
// entries costs memory for k names, not for the hundreds of thousands the
// code in a sandbox can make in one directory.
func FirstNames(fd, k int) ([]string, bool, error) {
	f, err := dirFile(fd)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	h := &maxHeap{}
	more := false
	for {
		batch, err := f.Readdirnames(readBatch)
		for _, n := range batch {
			switch {
			case h.Len() < k:
				heap.Push(h, n)
			case k > 0 && n < (*h)[0]:
				(*h)[0] = n
				heap.Fix(h, 0)
				more = true
			default:
				more = true
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	names := []string(*h)
	sort.Strings(names)
	return names, more, nil
}

// maxHeap is a container/heap of names, the greatest on top.
type maxHeap []string

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
