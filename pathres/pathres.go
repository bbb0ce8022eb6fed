// Package pathres resolves a path the way the kernel's path walk would for a
// traced task (fs/namei.c: link_path_walk, walk_component, pick_link), so that
// the policy decides on the object the system call will really touch.
//
// tracecell runs in the tracee's mount namespace and chroot is forbidden to
// the traced tree, so "/" is the tracee's root too. The walk is done with
// lstat(2) and readlink(2) on absolute paths built component by component;
// symlinks are expanded where the kernel expands them and ".." is applied to
// the already-resolved directory, never lexically to the input.
//
// Two places differ from a plain walk because tracecell is not the tracee:
// "/proc/self" and "/proc/thread-self" are replaced by the task's own entries
// (reading those links in tracecell would name tracecell), and the /proc
// "magic links" (fd/N, cwd, root, exe, map_files/*, ns/*) are not paths at all
// in the kernel but jumps to an object (nd_jump_link): their readlink text is
// either that object's path or a name such as "pipe:[123]". That path is
// one of the namespace of the mount the object is on, which need not be
// tracecell's (a process in `unshare -m`, or an fd or cwd the tree got
// through one): the walk goes on from it only after checking that it leads,
// in tracecell's namespace, to the same inode on the same mount (ident.go).
//
// The result is a check-time snapshot. Anything that changes between the
// check and the kernel's own walk (a symlink swapped by another thread) is the
// tracer's business (it freezes the tree while a checked call is in flight).
package pathres

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// PathMax is the kernel's PATH_MAX: the size of a path buffer including the
// terminating NUL. A path of PathMax bytes or more fails with ENAMETOOLONG
// (fs/namei.c getname_flags → strncpy_from_user).
const PathMax = 4096

// MaxSymlinks is the kernel's MAXSYMLINKS: a walk may expand at most this many
// links in total; the next one fails with ELOOP (include/linux/namei.h; the
// nesting limit was raised to the same 40 in 4.2, commit 894bc8c4662b).
const MaxSymlinks = 40

// Task names the traced thread whose "/proc/self" and "/proc/thread-self"
// are meant.
type Task struct {
	Tgid int // process id: /proc/self
	Tid  int // thread id: /proc/thread-self (0 means the same as Tgid)
}

// Result is where a path leads.
type Result struct {
	// Path is absolute and cleaned with its symlinks expanded. When a
	// component is missing the remaining components are appended lexically
	// (cleaned). For a /proc magic link to a non-file object it is the
	// /proc path of the link (for example "/proc/42/fd/3"); for a magic link
	// to an unlinked file it is the link's text with its " (deleted)" suffix.
	Path string
	// Exists reports whether Path existed at check time. It is also true when
	// a permission error kept the walk from looking (see WalkErr == EACCES):
	// an entry that might exist is treated as existing, which is the
	// stricter assumption for the policy (changing an existing entry needs
	// more than creating one).
	Exists bool
	IsDir  bool        // Path is a directory
	Mode   fs.FileMode // lstat mode of Path (type and permission bits); 0 when unknown
	// Dev and Ino identify the object at Path (its lstat st_dev, st_ino)
	// when Exists and the walk looked; 0 otherwise.
	Dev, Ino uint64
	// Special is the readlink text of a /proc magic link that names a
	// non-file object: "pipe:[123]", "socket:[45]", "anon_inode:[eventfd]",
	// "net:[4026531992]", ...
	Special string
	// ProcPid is set with Special, and for an unlinked file or a memfd
	// (Path ends in " (deleted)"): the pid of the /proc/<pid> entry whose
	// magic link named the object (the owner of the file descriptor), so the
	// caller can tell whether it belongs to the traced tree.
	ProcPid int
	// Deleted: Path is a /proc magic link's text "<old name> (deleted)"
	// of a file that has no name any more (unlinked, an O_TMPFILE file,
	// a memfd), checked against the object's inode: no entry by that text
	// is the object. The old name tells where the file was linked last,
	// nothing more: a new file may have that name now.
	Deleted bool
	// Link is the /proc magic link a Special or Deleted result was reached
	// through ("/proc/42/fd/3", "/proc/42/task/43/fd/3",
	// "/proc/42/map_files/..."): the file descriptor whose open mode says
	// what its holder may do with the object (FdFlags).
	Link string
	// WalkErr is the error the kernel's walk would stop with before it
	// reaches the last component: ENOENT (a directory on the way is
	// missing), ENOTDIR (a component used as a directory is not one, or a
	// trailing slash follows a non-directory), EACCES (tracecell could not
	// look; the tracee, running with the same credentials, cannot either).
	// 0 when the walk reaches the last component. The caller may fail the
	// call with it instead of letting the kernel do so.
	WalkErr syscall.Errno
	// ViaProc: the walk started in, passed through or ended in /proc. What
	// a name there leads to changes with the state of processes without
	// any change to the file system: /proc/<pid>/fd/N follows whatever
	// dup2 last put at N, map_files/* whatever mmap put there, cwd the
	// last chdir. A walk the kernel makes later (a call checked while
	// other tasks run on) cannot rely on such a result.
	ViaProc bool
}

// Resolve resolves p for task t. A relative p starts at base, which the
// tracer read from /proc/<tid>/cwd or /proc/<tid>/fd/<dirfd> and must be
// absolute; an absolute p starts at "/". The last component is followed when
// it is a symlink and follow is set or p ends with "/" (a trailing slash
// always follows, as lookup_last sets LOOKUP_FOLLOW|LOOKUP_DIRECTORY);
// intermediate components are always followed.
//
// Errors wrap a syscall.Errno the kernel would return for the whole call:
// ENOENT for an empty path (AT_EMPTY_PATH is the caller's business),
// ENAMETOOLONG for a path of PathMax bytes or more, ELOOP after MaxSymlinks
// expansions, ENOTDIR for a relative path whose base is not a directory
// path (a dirfd naming a pipe), EINVAL when /proc/self is met but t has no
// pid. A /proc magic link whose text does not name its object in
// tracecell's mount namespace fails the walk with a *LinkError (wrapping no
// errno: the caller cannot know what the kernel will do and must deny).
// Other errors are unexpected failures of lstat or readlink.
func Resolve(t Task, base string, p []byte, follow bool) (Result, error) {
	return ResolveCached(t, base, string(p), follow, nil)
}

// ResolveCached is Resolve with a cache of directories already walked (nil
// for none): see DirCache for when that is sound. With a cache, base must be
// a directory path without symlinks that the caller has checked.
func ResolveCached(t Task, base string, p string, follow bool, c *DirCache) (Result, error) {
	if len(p) == 0 {
		return Result{}, pathErr(p, syscall.ENOENT)
	}
	if len(p) >= PathMax {
		return Result{}, pathErr(p, syscall.ENAMETOOLONG)
	}
	cur := "/"
	if p[0] != '/' {
		if !strings.HasPrefix(base, "/") {
			return Result{}, &os.PathError{Op: "resolve", Path: p,
				Err: fmt.Errorf("base %q is not a directory: %w", base, syscall.ENOTDIR)}
		}
		cur = path.Clean(base)
	}
	w := walker{t: t, orig: p, follow: follow, cache: c, proc: inProc(cur)}
	r, err := w.run(cur, p)
	r.ViaProc = w.proc
	return r, err
}

// inProc reports whether the absolute, cleaned path p is /proc or below it.
func inProc(p string) bool { return p == "/proc" || strings.HasPrefix(p, "/proc/") }

// ResolveFd resolves what file descriptor fd of task t refers to, through
// /proc/<tgid>/task/<tid>/fd/<fd> (a thread may have its own fd table after
// unshare(CLONE_FILES)). A pipe, socket or other non-file object comes back
// as Special; a closed fd as an error wrapping EBADF.
func ResolveFd(t Task, fd int) (Result, error) {
	if fd < 0 {
		return Result{}, fmt.Errorf("resolve fd %d: %w", fd, syscall.EBADF)
	}
	tid := t.Tid
	if tid == 0 {
		tid = t.Tgid
	}
	p := fmt.Sprintf("/proc/%d/task/%d/fd/%d", t.Tgid, tid, fd)
	if _, err := os.Readlink(p); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			err = syscall.EBADF // no such fd (or no such task)
		}
		if errors.Is(err, syscall.ENAMETOOLONG) {
			// Its path is PATH_MAX bytes or more (d_path into one page):
			// no errno of the kernel's, the caller denies and reports.
			return Result{}, fmt.Errorf("resolve fd %d of task %d: its path is too long for /proc to show (%v)", fd, tid, err)
		}
		return Result{}, fmt.Errorf("resolve fd %d of task %d: %w", fd, tid, err)
	}
	return Resolve(t, "/", []byte(p), true)
}

func pathErr(p string, errno syscall.Errno) error {
	return &os.PathError{Op: "resolve", Path: p, Err: errno}
}

type walker struct {
	t      Task
	orig   string
	follow bool // follow the last component (sticky once a last link was followed)
	links  int  // symlinks expanded so far
	isDir  bool // a trailing slash asked for a directory
	cache  *DirCache
	proc   bool // the walk has been in /proc (Result.ViaProc)
}

// deletedSuffix is what d_path appends to the name of an unlinked dentry
// (fs/d_path.c prepend_path/d_path: " (deleted)").
const deletedSuffix = " (deleted)"

func (w *walker) run(cur, rest string) (Result, error) {
	// last is the lstat of cur when the walk ended on a component
	// (haveLast); a value, not a pointer to the loop's own, which would
	// be a heap allocation per component.
	var last info
	haveLast := false
	// jumped: the walk (re)starts at cur, where cached directories may take
	// it further down rest at once.
	jumped := true
	for {
		if jumped && w.cache != nil {
			cur, rest = w.cache.skip(cur, rest)
		}
		jumped = false
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			break
		}
		var name string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name, rest = rest[:i], rest[i:]
		} else {
			name, rest = rest, ""
		}
		isLast := strings.Trim(rest, "/") == ""
		if isLast && rest != "" {
			w.isDir = true
		}
		haveLast = false
		switch name {
		case ".":
			continue
		case "..":
			cur = parent(cur)
			continue
		}
		next := join(cur, name)
		if inProc(next) {
			w.proc = true
		}
		expand := !isLast || w.follow || w.isDir

		if cur == "/proc" && (name == "self" || name == "thread-self") && expand {
			// Do not readlink: in tracecell's process these name tracecell.
			body, err := w.procSelf(name)
			if err != nil {
				return Result{}, err
			}
			if err := w.count(); err != nil {
				return Result{}, err
			}
			if isLast {
				w.follow = true
			}
			rest = body + rest
			continue
		}

		if pid, ok := magicLink(cur, name); ok && expand {
			// Always a symlink when it exists (readlink says if not).
			if err := w.count(); err != nil {
				return Result{}, err
			}
			if isLast {
				w.follow = true
			}
			r, obj, done, err := w.magic(next, rest, pid)
			if err != nil || done {
				return r, err
			}
			// At the object, by its name in tracecell's namespace
			// (a path without symlinks: checked by CheckLink).
			cur = r.Path
			if strings.Trim(rest, "/") == "" {
				last, haveLast = info{mode: obj.Mode, dev: obj.Dev, ino: obj.Ino}, true
			}
			jumped = true
			continue
		}

		fi, err := lstat(next, false)
		if err != nil {
			return w.stop(next, rest, err)
		}
		if fi.mode&fs.ModeSymlink != 0 && expand {
			if err := w.count(); err != nil {
				return Result{}, err
			}
			if isLast {
				w.follow = true
			}
			body, err := readlink(next)
			if err != nil {
				return w.stop(next, rest, err)
			}
			if body == "" {
				// An empty link body fails the walk with ENOENT
				// (fs/namei.c get_link: "if (!*res) return -ENOENT").
				return lexical(next, true, rest, syscall.ENOENT), nil
			}
			if body[0] == '/' {
				cur = "/"
			}
			rest = body + rest // rest is empty or starts with "/"
			jumped = true
			continue
		}
		cur = next
		if !isLast && !fi.IsDir() {
			// walk_component on a non-directory with components left.
			return lexical(cur, true, rest, syscall.ENOTDIR), nil
		}
		if w.cache != nil && fi.IsDir() {
			w.cache.add(cur, fi)
		}
		last, haveLast = fi, true
	}
	if !haveLast {
		fi, err := lstat(cur, false)
		if err != nil {
			return w.stop(cur, "", err)
		}
		last = fi
	}
	r := Result{Path: cur, Exists: true, IsDir: last.IsDir(), Mode: last.mode, Dev: last.dev, Ino: last.ino}
	if w.isDir && !r.IsDir && r.Mode&fs.ModeSymlink == 0 {
		r.WalkErr = syscall.ENOTDIR
	}
	return r, nil
}

// count charges one symlink expansion (fs/namei.c pick_link:
// "if (unlikely(nd->total_link_count++ >= MAXSYMLINKS)) return -ELOOP").
func (w *walker) count() error {
	w.links++
	if w.links > MaxSymlinks {
		return pathErr(w.orig, syscall.ELOOP)
	}
	return nil
}

// procSelf is the body the kernel gives /proc/self ("<tgid>") and
// /proc/thread-self ("<tgid>/task/<tid>"), relative to /proc
// (fs/proc/self.c, fs/proc/thread_self.c).
func (w *walker) procSelf(name string) (string, error) {
	if w.t.Tgid <= 0 {
		return "", &os.PathError{Op: "resolve", Path: w.orig,
			Err: fmt.Errorf("/proc/%s needs the task's pid: %w", name, syscall.EINVAL)}
	}
	if name == "self" {
		return strconv.Itoa(w.t.Tgid), nil
	}
	tid := w.t.Tid
	if tid == 0 {
		tid = w.t.Tgid
	}
	return strconv.Itoa(w.t.Tgid) + "/task/" + strconv.Itoa(tid), nil
}

// magic follows the /proc magic link at next, of process pid. It either
// finishes the walk (done, with r) or returns the object the link leads to,
// r.Path being its name in tracecell's mount namespace, from which the walk
// goes on down rest as the kernel's does after nd_jump_link: the object
// itself is not followed again even when it is a symlink (an O_PATH fd of
// one), and a name after it needs a directory.
//
// The link's text is trusted only when it names the object in tracecell's
// mount namespace (CheckLink); otherwise the walk fails with a *LinkError,
// which callers treat as unresolvable.
func (w *walker) magic(next, rest string, pid int) (r Result, obj ID, done bool, err error) {
	target, err := readlink(next)
	if err != nil {
		r, err = w.stop(next, rest, err)
		return r, ID{}, true, err
	}
	more := strings.Trim(rest, "/") != ""
	switch {
	case !strings.HasPrefix(target, "/"):
		// A pipe, socket, anon inode, namespace...: not in the file system.
		if more {
			return lexical(next, true, rest, syscall.ENOTDIR), ID{}, true, nil
		}
		fi, err := lstat(next, false)
		if err != nil {
			r, err = w.stop(next, rest, err)
			return r, ID{}, true, err
		}
		return Result{Path: next, Exists: true, Mode: fi.mode, Special: target, ProcPid: pid, Link: next}, ID{}, true, nil
	case strings.HasSuffix(target, deletedSuffix) && !w.namedAsIs(next, target):
		// An unlinked file (or a memfd, "/memfd:name (deleted)"): the
		// text is no path to walk, and no name the policy may decide by.
		// Keep it literally and mark it Deleted. (A live file whose name
		// really ends in " (deleted)" has the same text: namedAsIs tells
		// it apart by its inode, and it is walked as any other.)
		if more {
			// Lookups in a dead directory fail.
			return lexical(target, false, rest, syscall.ENOENT), ID{}, true, nil
		}
		name := strings.TrimSuffix(target, deletedSuffix)
		if !isMemfd(name) {
			// Its old directory must be tracecell's.
			obj, err := StatID(next, true)
			if err != nil {
				r, err = w.stop(next, rest, err)
				return r, ID{}, true, err
			}
			if err := checkDeleted(next, target, name, obj); err != nil {
				return Result{}, ID{}, true, w.linkErr(err)
			}
		}
		return Result{Path: target, ProcPid: pid, Deleted: true, Link: next}, ID{}, true, nil
	}
	obj, err = StatID(next, true)
	if err != nil {
		r, err = w.stop(next, rest, err)
		return r, ID{}, true, err
	}
	if _, err := CheckLink(next, target, obj); err != nil {
		return Result{}, ID{}, true, w.linkErr(err)
	}
	if inProc(target) {
		w.proc = true
	}
	if !obj.IsDir() && (more || w.isDir || strings.HasPrefix(rest, "/")) {
		// A name, or a trailing slash, after a non-directory.
		r := lexical(target, true, rest, syscall.ENOTDIR)
		if !more {
			r.Exists, r.Mode = true, obj.Mode
		}
		return r, ID{}, true, nil
	}
	return Result{Path: target}, obj, false, nil
}

// namedAsIs reports whether text, the " (deleted)"-suffixed text of the magic
// link next, is the name of a live file that is the link's very object (same
// inode on the same mount): d_path appends " (deleted)" only to an unlinked
// dentry (fs/d_path.c), but a file may be named "x (deleted)" as well. Any
// other answer, an entry of that name that is another inode (the tree can
// create "/dev/shm/x (deleted)" to spoof the name of a host's unlinked
// /dev/shm/x) or none, means that the object has no name.
func (w *walker) namedAsIs(next, text string) bool {
	obj, err := StatID(next, true)
	if err != nil {
		return false
	}
	named, err := StatID(text, false)
	return err == nil && obj.same(named)
}

// isMemfd reports whether name (an unlinked file's text without
// " (deleted)") is a memfd's: memfd_create's files live on an internal
// mount that is in no namespace, under "/memfd:<name>".
func isMemfd(name string) bool {
	return strings.HasPrefix(name, "/memfd:") && !strings.Contains(name[1:], "/")
}

// linkErr wraps a *LinkError for the caller, naming the path walked.
func (w *walker) linkErr(err error) error {
	return &os.PathError{Op: "resolve", Path: w.orig, Err: err}
}

// stop ends the walk at next, which could not be looked up.
func (w *walker) stop(next, rest string, err error) (Result, error) {
	errno, ok := asErrno(err)
	if !ok {
		return Result{}, &os.PathError{Op: "resolve", Path: w.orig, Err: err}
	}
	more := strings.Trim(rest, "/") != ""
	switch errno {
	case syscall.ENOENT:
		if more {
			return lexical(next, false, rest, syscall.ENOENT), nil
		}
		return Result{Path: next}, nil
	case syscall.ENOTDIR:
		// Only when a component changed under us (we check IsDir before
		// descending); report it the same way.
		return lexical(next, false, rest, syscall.ENOTDIR), nil
	case syscall.EACCES:
		// No search permission on a directory above next. The tracee has
		// the same credentials and will fail too; assume the entry exists
		// (the stricter case for the policy) and say so in WalkErr.
		r := lexical(next, false, rest, syscall.EACCES)
		r.Exists = true
		return r, nil
	case syscall.ELOOP:
		return Result{}, &os.PathError{Op: "resolve", Path: w.orig, Err: errno}
	case syscall.ENAMETOOLONG:
		if i := strings.LastIndexByte(next, '/'); len(next)-i-1 > nameMax {
			// A component longer than NAME_MAX: the kernel's answer too.
			return Result{}, &os.PathError{Op: "resolve", Path: w.orig, Err: errno}
		}
		// Not the kernel's (paths of any length are walked, long.go):
		// no errno, so that the caller denies and reports it.
		return Result{}, &os.PathError{Op: "resolve", Path: w.orig,
			Err: fmt.Errorf("at %s (%d bytes): tracecell's own lookup failed: %v", next, len(next), err)}
	}
	// Say which component failed: lstat returns the bare errno.
	return Result{}, &os.PathError{Op: "resolve", Path: w.orig, Err: fmt.Errorf("at %s: %w", next, err)}
}

// asErrno is the errno err is or wraps. The bare errno that lstat returns
// is taken without errors.As, whose target would be a heap allocation on
// every walk that stops at a missing name (every create).
func asErrno(err error) (syscall.Errno, bool) {
	if e, ok := err.(syscall.Errno); ok {
		return e, true
	}
	var e syscall.Errno
	ok := errors.As(err, &e)
	return e, ok
}

// lexical ends a walk that cannot go on at next (missing, or not a
// directory): the unresolved rest is appended lexically and cleaned. The
// kernel fails such a walk, but the caller may still decide on the result, so
// Exists must not lie: "hostdir/missing/.." cleans to hostdir, which exists,
// and must not look like a fresh entry that a create may claim. A result at
// or below a missing next cannot exist; anything else is looked at.
func lexical(next string, nextExists bool, rest string, errno syscall.Errno) Result {
	p := next
	if strings.Trim(rest, "/") != "" {
		p = path.Clean(next + "/" + rest)
	}
	r := Result{Path: p, WalkErr: errno}
	if (p == next && !nextExists) || strings.HasPrefix(p, next+"/") {
		return r
	}
	if fi, err := lstat(p, false); err == nil {
		r.Exists, r.IsDir, r.Mode, r.Dev, r.Ino = true, fi.IsDir(), fi.mode, fi.dev, fi.ino
	}
	return r
}

// magicLink reports whether name in dir is one of procfs's magic links and
// the pid whose entry it is: /proc/<pid>/{cwd,root,exe},
// /proc/<pid>/{fd,map_files,ns}/*, and the same under /proc/<pid>/task/<tid>.
func magicLink(dir, name string) (int, bool) {
	rest, ok := strings.CutPrefix(dir, "/proc/")
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, "/")
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 || !allDigits(parts[0]) {
		return 0, false
	}
	parts = parts[1:]
	if len(parts) >= 2 && parts[0] == "task" && allDigits(parts[1]) {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return pid, name == "cwd" || name == "root" || name == "exe"
	case 1:
		return pid, parts[0] == "fd" || parts[0] == "map_files" || parts[0] == "ns"
	}
	return 0, false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// parent is ".." of a resolved directory; ".." at "/" stays "/".
func parent(dir string) string {
	i := strings.LastIndexByte(dir, '/')
	if i <= 0 {
		return "/"
	}
	return dir[:i]
}

// FdInfoPath is the fdinfo file of the file descriptor link res names:
// /proc/<pid>/fdinfo/<N> for /proc/<pid>/fd/<N>, and the same under
// /proc/<pid>/task/<tid>. ok is false for any other path (an ns/* link,
// map_files/*, cwd): those name no open file with an access mode.
func FdInfoPath(res string) (string, bool) {
	rest, ok := strings.CutPrefix(res, "/proc/")
	if !ok {
		return "", false
	}
	parts := strings.Split(rest, "/")
	if !allDigits(parts[0]) {
		return "", false
	}
	i := 1
	if len(parts) >= 3 && parts[1] == "task" && allDigits(parts[2]) {
		i = 3
	}
	if len(parts) != i+2 || parts[i] != "fd" || !allDigits(parts[i+1]) {
		return "", false
	}
	parts[i] = "fdinfo"
	return "/proc/" + strings.Join(parts, "/"), true
}

// FdFlags reads the open file flags (the octal "flags:" line of fdinfo:
// O_ACCMODE, O_PATH, O_NONBLOCK, ...) of the file descriptor the link res
// names (FdInfoPath). The fd must not change between the caller's walk of
// res and this read: the caller holds the tree frozen, or the fd's process
// is the stopped caller alone.
func FdFlags(res string) (uint64, error) {
	p, ok := FdInfoPath(res)
	if !ok {
		return 0, fmt.Errorf("%s is not a file descriptor link", res)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return ParseFdInfoFlags(b)
}

// ParseFdInfoFlags parses the "flags:" line of an fdinfo file (octal, as
// fs/proc/fd.c seq_show prints f_flags).
func ParseFdInfoFlags(b []byte) (uint64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		}
	}
	return 0, errors.New("fdinfo has no flags: line")
}
