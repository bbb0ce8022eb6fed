package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/fsview"
	"github.com/tracecell/tracecell/internal/rmtree"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// Sandbox file access by the server (copy in, list, download).
//
// Every path inside a sandbox is walked one component at a time from a
// descriptor of the sandbox directory, each component opened with
// O_NOFOLLOW relative to its parent's descriptor, and ".." refused before
// anything is opened. A symlink the code made inside the sandbox is
// therefore never followed by the server, whatever it points to and however
// it is swapped in concurrently; this works on Linux 4.18 (openat2 with
// RESOLVE_BENEATH, 5.6, would do the same in one call). Files are written
// under a temporary name and renamed into place, so an existing entry (even
// a symlink or a hard link) is replaced, never written through.

const maxCopyEntries = 100000

// copyTestHook, when set by a test, runs between the policy check of a
// copy's source and the copy itself.
var copyTestHook func()

const maxListEntries = 10000

// maxListDepth is how deep a listing descends: the walk holds a descriptor
// per level, and code can make a chain of directories thousands deep in a
// second (descriptors the server's other sessions need). Deeper entries
// are left out and the listing says truncated.
const maxListDepth = 64

// maxListBytes caps the bytes of paths and symlink targets in one listing.
// The entry count alone does not bound it: the code chooses how long its
// names are and how deep it nests them, and a listing of 9950 symlinks with
// 4000-byte targets 62 levels down was 198 MB, held by the server while it
// was encoded, once per request in flight.
const maxListBytes = 8 << 20

// maxHeldNames bounds the names a listing or an archive holds at once, over
// every level of its walk: each level holds the names it read while the walk
// is below it, and 60 levels of 9000 names each were 220 MB per request.
// Where the bound cuts a level short, the listing says truncated (an archive
// is too large anyway: it would need more than maxListEntries entries).
const maxHeldNames = 2 * maxListEntries

// jsonLen is how many bytes s takes in JSON as encoding/json writes it: a
// control character, '<', '>', '&', U+2028, U+2029 and each byte that is not
// UTF-8 take six (\u0001), '"' and '\\' two. The code chooses its names: a
// cap on their raw bytes alone let a listing of control characters encode
// to six times it.
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1, r < 0x20, r == '<', r == '>', r == '&', r == 0x2028, r == 0x2029:
			n += 6
		case r == '"', r == '\\':
			n += 2
		default:
			n += w
		}
		i += w
	}
	return n
}

// sandboxRel turns a client path into components below the sandbox. An
// absolute path is accepted only when it is lexically inside the sandbox
// (the code sees the sandbox's absolute path as its cwd). "..", NUL bytes
// and empty paths are refused.
func sandboxRel(sandbox, p, what string) ([]string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return nil, errf(400, "invalid_path", "%s %q contains a NUL byte", what, p)
	}
	if strings.HasPrefix(p, "/") {
		if !policy.Under(path.Clean(p), sandbox) || hasDotDot(p) {
			return nil, errf(400, "path_outside_sandbox", "%s %q is outside the session's sandbox %s: give a path relative to the sandbox", what, p, sandbox)
		}
		p = strings.TrimPrefix(path.Clean(p), sandbox)
	}
	if hasDotDot(p) {
		return nil, errf(400, "path_outside_sandbox", "%s %q contains '..': give a path inside the sandbox, relative to it", what, p)
	}
	var comps []string
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." {
			continue
		}
		comps = append(comps, c)
	}
	return comps, nil
}

func hasDotDot(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// openRoot opens the sandbox directory itself.
func openRoot(sandbox string) (int, error) {
	fd, err := unix.Open(sandbox, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errf(500, "sandbox_unavailable", "open the sandbox %s: %v", sandbox, err)
	}
	return fd, nil
}

// openDirs walks comps from dirfd, each a directory opened with O_NOFOLLOW
// (created 0755 first when mkdir). It returns a new descriptor; dirfd is
// not closed.
func openDirs(dirfd int, comps []string, mkdir bool, shown string) (int, error) {
	fd, err := unix.Dup(dirfd)
	if err != nil {
		return -1, errf(500, "internal", "dup: %v", err)
	}
	unix.CloseOnExec(fd)
	for i, c := range comps {
		if mkdir {
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
				unix.Close(fd)
				return -1, errf(500, "copy_failed", "create directory %s in the sandbox: %v", strings.Join(comps[:i+1], "/"), err)
			}
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = symlinkOr(fd, c, err)
			unix.Close(fd)
			return -1, componentError(strings.Join(comps[:i+1], "/"), shown, err)
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// symlinkOr turns the ENOTDIR of O_DIRECTORY|O_NOFOLLOW on a symlink into
// ELOOP, so that the error says "symbolic link".
func symlinkOr(dirfd int, name string, err error) error {
	if err == unix.ENOTDIR {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return unix.ELOOP
		}
	}
	return err
}

// componentError explains why a sandbox path component could not be opened.
func componentError(sofar, shown string, err error) error {
	switch err {
	case unix.ELOOP:
		return errf(403, "symlink_refused", "%s: %s in the sandbox is a symbolic link; the server never follows symlinks inside a sandbox", shown, sofar)
	case unix.ENOTDIR:
		return errf(400, "not_a_directory", "%s: %s in the sandbox is not a directory", shown, sofar)
	case unix.ENOENT:
		return errf(404, "file_not_found", "%s: %s does not exist in the sandbox (list files with GET /v1/sessions/{id}/files)", shown, sofar)
	}
	return errf(500, "file_error", "%s: open %s in the sandbox: %v", shown, sofar, err)
}

// fileEntry is one entry of GET /v1/sessions/{id}/files.
type fileEntry struct {
	Path  string `json:"path"` // relative to the sandbox, '/'-separated
	Type  string `json:"type"` // "file", "dir", "symlink" or "other"
	Size  int64  `json:"size"`
	Mode  string `json:"mode"`
	MTime string `json:"mtime"`
	// Target is a symlink's target as stored (never followed).
	Target string `json:"target,omitempty"`
}

type fileList struct {
	Sandbox   string      `json:"sandbox"`
	Files     []fileEntry `json:"files"`
	Truncated bool        `json:"truncated"`
}

// listSandbox lists every entry of the sandbox (hidden ones too), depth
// first, sorted by path, descending only into real directories.
func listSandbox(sandbox string) (*fileList, error) {
	root, err := openRoot(sandbox)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	out := &fileList{Sandbox: sandbox, Files: []fileEntry{}}
	size := 0 // JSON bytes of the paths and targets listed (maxListBytes)
	held := 0 // names the walk's levels hold (maxHeldNames)
	link := make([]byte, 4096)
	var walk func(dirfd int, prefix string, depth int) error
	walk = func(dirfd int, prefix string, depth int) error {
		// Only the names the listing can still show are held, however
		// many the code made (rmtree.FirstNames), and no more than
		// maxHeldNames over all the levels.
		names, more, err := rmtree.FirstNames(dirfd, min(maxListEntries-len(out.Files), maxHeldNames-held))
		if err != nil {
			return errf(500, "file_error", "list %s in the sandbox: %v", orDot(prefix), err)
		}
		if more {
			out.Truncated = true
		}
		held += len(names)
		defer func() { held -= len(names) }()
		for _, n := range names {
			if len(out.Files) >= maxListEntries {
				out.Truncated = true
				return nil
			}
			var st unix.Stat_t
			if err := unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // removed meanwhile
			}
			rel := prefix + n
			e := fileEntry{Path: rel, Size: st.Size, Mode: fmt.Sprintf("%04o", st.Mode&0o7777),
				MTime: timespecUTC(st.Mtim)}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				e.Type = "file"
			case unix.S_IFDIR:
				e.Type = "dir"
			case unix.S_IFLNK:
				e.Type = "symlink"
				if k, err := unix.Readlinkat(dirfd, n, link); err == nil {
					e.Target = string(link[:k])
				}
			default:
				e.Type = "other"
			}
			if size += jsonLen(e.Path) + jsonLen(e.Target); size > maxListBytes {
				out.Truncated = true
				return nil
			}
			out.Files = append(out.Files, e)
			if e.Type == "dir" && depth >= maxListDepth {
				out.Truncated = true
			} else if e.Type == "dir" {
				sub, err := unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue // swapped for a symlink, or unreadable: not descended
				}
				err = walk(sub, rel+"/", depth+1)
				unix.Close(sub)
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, "", 1); err != nil {
		return nil, err
	}
	return out, nil
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// openSandboxFile opens a regular file of the sandbox for reading, never
// through a symlink.
func openSandboxFile(sandbox, rel string) (*os.File, os.FileInfo, error) {
	comps, err := sandboxRel(sandbox, rel, "path")
	if err != nil {
		return nil, nil, err
	}
	if len(comps) == 0 {
		return nil, nil, errf(400, "is_a_directory", "path %q is the sandbox itself: list it with GET /v1/sessions/{id}/files", rel)
	}
	root, err := openRoot(sandbox)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(root)
	dir, err := openDirs(root, comps[:len(comps)-1], false, "path "+rel)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, comps[len(comps)-1], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, componentError(strings.Join(comps, "/"), "path "+rel, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(sandbox, filepath.Join(comps...)))
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, errf(500, "file_error", "stat %s in the sandbox: %v", rel, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, errf(400, "is_a_directory", "path %q is a directory: list it with GET /v1/sessions/{id}/files", rel)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, errf(400, "not_a_regular_file", "path %q is not a regular file (%s)", rel, st.Mode().Type())
	}
	return f, st, nil
}

// deniedServed refuses to hand out a sandbox file (a download, an archive
// entry) that is a deny-read file under another name: the tracer keeps the
// tree from linking one into its sandbox, and this keeps any other way a
// hard link got there (a host program's) from becoming a read of it (round
// 61 of the red team, defence in depth).
func (s *Server) deniedServed(st os.FileInfo) (string, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return s.readPol.DeniedFile(uint64(sys.Dev), uint64(sys.Ino))
}

// openServed is openSandboxFile for a download: a deny-read file under
// another name is refused.
func (s *Server) openServed(sandbox, rel string) (*os.File, os.FileInfo, error) {
	f, st, err := openSandboxFile(sandbox, rel)
	if err != nil {
		return nil, nil, err
	}
	if of, denied := s.deniedServed(st); denied {
		f.Close()
		return nil, nil, errf(403, "read_denied", "path %q is the deny-read file %s under another name (a hard link)", rel, of)
	}
	return f, st, nil
}

// copyRequest is the body of POST /v1/sessions/{id}/copy.
type copyRequest struct {
	// Source is an absolute host path (or ~/...), a file or a directory.
	Source string `json:"source"`
	// Destination is where it lands, relative to the sandbox (or absolute
	// inside it); default: the source's base name at the sandbox's top.
	Destination string `json:"destination,omitempty"`
}

// copyReport says what a copy did.
type copyReport struct {
	Source      string    `json:"source"`      // resolved
	Destination string    `json:"destination"` // relative to the sandbox
	Path        string    `json:"path"`        // absolute path in the sandbox
	Files       int       `json:"files"`
	Directories int       `json:"directories"`
	Bytes       int64     `json:"bytes"`
	Skipped     []skipped `json:"skipped"`
}

type skipped struct {
	Path   string `json:"path"` // relative to the source
	Reason string `json:"reason"`
}

type copyItem struct {
	rel  string // relative to the source, '/'-separated; "" for the source itself
	dir  bool
	size int64
	mode os.FileMode
	// id is the file the policy was asked about (its lstat): the copy
	// opens it again by path and copies it only if it is still that file.
	id fileID
}

// fileID identifies a file by device and inode.
type fileID struct{ dev, ino uint64 }

// idOf is fi's device and inode, zero when fi has none.
func idOf(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(st.Dev), uint64(st.Ino)}
	}
	return fileID{}
}

// serverProc is the /proc entry of the server itself that the absolute
// path p starts with (/proc/self, /proc/thread-self, /proc/<server pid>),
// or "". The session's code resolves those names to its own process; the
// server, which resolves a copy's source, to itself.
func serverProc(p string) string {
	p = filepath.Clean(p)
	for _, e := range []string{"/proc/self", "/proc/thread-self", "/proc/" + strconv.Itoa(os.Getpid())} {
		if policy.Under(p, e) {
			return e
		}
	}
	return ""
}

// viaServerProc is serverProc of p or of any path its resolution passes
// through (/dev/fd/1 and /dev/stdout lead to /proc/self/fd/1), following
// its symlinks one at a time as the kernel would; "" when none is.
func viaServerProc(p string) string {
	for links := 0; links <= 40; links++ {
		if e := serverProc(p); e != "" {
			return e
		}
		parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
		cur, next := "/", ""
		for i, c := range parts {
			here := filepath.Join(cur, c)
			fi, err := os.Lstat(here)
			if err != nil {
				return "" // the resolution fails and says so
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t, err := os.Readlink(here)
				if err != nil {
					return ""
				}
				if !filepath.IsAbs(t) {
					t = filepath.Join(cur, t)
				}
				next = filepath.Join(append([]string{t}, parts[i+1:]...)...)
				break
			}
			cur = here
		}
		if next == "" {
			return ""
		}
		p = next
	}
	return ""
}

// decideRead asks the policy whether the session's worker could read the
// resolved path. The state directory outside the session's own sandbox
// (other sessions' sandboxes, the socket) is never a copy source.
func (s *Server) decideRead(resolved, sandbox string) policy.Decision {
	if policy.Under(resolved, s.opts.StateDir) && !policy.Under(resolved, sandbox) {
		return policy.Decision{Rule: policy.RuleServerState, Reason: "inside the server's state directory " + s.opts.StateDir + " (other sessions' sandboxes)"}
	}
	// The server is outside every worker's tree: /proc/<pid> of any process
	// (the server's own, vLLM's, another session's worker) is "outside" for
	// the policy, so a copy cannot read an environment, command line or
	// memory that the code itself is refused (rule proc-read).
	pa := policy.Path{Role: "path", Given: resolved, Resolved: resolved, Exists: true,
		ProcOutside: policy.Under(resolved, "/proc")}
	// What the tracer learns of an open's object, so that the copy is
	// decided as the worker's own open would be (round 59 of the red team:
	// a hard link to a deny-read file and a rotated token were copied):
	// its identity, whether it is a block device, and the deny-read
	// entries given through symlinks, followed now.
	var st unix.Stat_t
	if unix.Lstat(resolved, &st) == nil {
		pa.Dev, pa.Ino = uint64(st.Dev), st.Ino
		pa.IsDir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		pa.BlockDevice = st.Mode&unix.S_IFMT == unix.S_IFBLK
	}
	pa.DenyLink, pa.DenyLinkAt = fsview.FollowLinks(s.readPol.DenyReadLinks(), resolved)
	return s.readPol.Decide(&policy.Op{Kind: syscalls.KindRead, Syscall: "copy", Paths: []policy.Path{pa}}, nil)
}

// copyIn copies a host file or tree into the sandbox.
func (s *Server) copyIn(sandbox string, req copyRequest) (*copyReport, error) {
	src, err := s.checkSource(sandbox, req.Source)
	if err != nil {
		return nil, err
	}
	dst, comps, err := copyDestination(sandbox, req.Destination, src)
	if err != nil {
		return nil, err
	}
	rep := &copyReport{Source: src.real, Destination: strings.Join(comps, "/"),
		Path: filepath.Join(append([]string{sandbox}, comps...)...), Skipped: []skipped{}}
	items, err := s.planCopy(sandbox, src, rep)
	if err != nil {
		return nil, err
	}
	if copyTestHook != nil {
		copyTestHook()
	}
	return s.writeCopy(sandbox, src, dst, comps, items, rep)
}

// copySource is the source of a copy once checked.
type copySource struct {
	abs  string      // as given, made absolute ("~" expanded)
	real string      // abs resolved: what is read
	st   os.FileInfo // real's Lstat
}

// checkSource checks the source of a copy: an absolute host path the policy
// lets the session read, outside its sandbox.
func (s *Server) checkSource(sandbox, source string) (*copySource, error) {
	if source == "" {
		return nil, errf(400, "invalid_field", "source is required: an absolute host path to copy into the sandbox")
	}
	if strings.IndexByte(source, 0) >= 0 {
		return nil, errf(400, "invalid_field", "source contains a NUL byte")
	}
	if !strings.HasPrefix(source, "/") && source != "~" && !strings.HasPrefix(source, "~/") {
		return nil, errf(400, "invalid_field", "source %q must be an absolute host path (or start with ~/)", source)
	}
	abs, err := config.Abs(source)
	if err != nil {
		return nil, errf(400, "invalid_field", "source %q: %v", source, err)
	}
	if p := viaServerProc(abs); p != "" {
		return nil, errf(400, "invalid_field", "source %s goes through %s, which here names the server's own process, not the session's (round 68 of the red team: /proc/self/cwd and /proc/self/fd/N copied the server's files): give the file's own path", abs, p)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errf(404, "source_not_found", "source %s does not exist on the host", abs)
		}
		return nil, errf(403, "source_unreadable", "source %s: %v", abs, err)
	}
	if d := s.decideRead(real, sandbox); !d.Allow {
		return nil, errf(403, "read_denied", "source %s may not be read under the server's policy: %s", showResolved(abs, real), d.Reason)
	}
	if policy.Under(real, sandbox) {
		return nil, errf(400, "invalid_field", "source %s is inside the session's sandbox already", real)
	}
	st, err := os.Lstat(real)
	if err != nil {
		return nil, errf(403, "source_unreadable", "source %s: %v", real, err)
	}
	return &copySource{abs: abs, real: real, st: st}, nil
}

// copyDestination is where a copy of src lands: dst as given (default: the
// source's base name) and its components under the sandbox.
func copyDestination(sandbox, dst string, src *copySource) (string, []string, error) {
	if dst == "" {
		dst = filepath.Base(src.abs)
		if dst == "/" || dst == "." {
			return "", nil, errf(400, "invalid_field", "copying / needs an explicit destination (and is almost surely too large)")
		}
	}
	comps, err := sandboxRel(sandbox, dst, "destination")
	if err != nil {
		return "", nil, err
	}
	if len(comps) == 0 {
		return "", nil, errf(400, "invalid_field", "destination %q is the sandbox itself: name a file or directory inside it", dst)
	}
	return dst, comps, nil
}

// planCopy lists what a copy of src writes, before anything is written: it
// walks the source without following symlinks, applies the policy to every
// entry (what it skips goes to rep), and checks the size.
func (s *Server) planCopy(sandbox string, src *copySource, rep *copyReport) ([]copyItem, error) {
	real, st := src.real, src.st
	var items []copyItem
	var total int64
	switch {
	case st.Mode().IsRegular():
		items = append(items, copyItem{size: st.Size(), mode: st.Mode().Perm(), id: idOf(st)})
		total = st.Size()
	case st.IsDir():
		err := filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
			rel := strings.TrimPrefix(strings.TrimPrefix(p, real), "/")
			if err != nil {
				rep.Skipped = append(rep.Skipped, skipped{orDot(rel), "unreadable: " + errText(err)})
				if d != nil && d.IsDir() && p != real {
					return fs.SkipDir
				}
				return nil
			}
			if p != real {
				if dec := s.decideRead(p, sandbox); !dec.Allow {
					rep.Skipped = append(rep.Skipped, skipped{rel, "denied by policy: " + dec.Reason})
					if d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
			}
			switch t := d.Type(); {
			case t&fs.ModeSymlink != 0:
				rep.Skipped = append(rep.Skipped, skipped{rel, "symbolic link (not followed)"})
			case d.IsDir():
				fi, err := d.Info()
				mode := os.FileMode(0o755)
				if err == nil {
					mode = fi.Mode().Perm() | 0o700
				}
				items = append(items, copyItem{rel: rel, dir: true, mode: mode})
			case t.IsRegular():
				fi, err := d.Info()
				if err != nil {
					rep.Skipped = append(rep.Skipped, skipped{rel, "unreadable: " + errText(err)})
					return nil
				}
				items = append(items, copyItem{rel: rel, size: fi.Size(), mode: fi.Mode().Perm(), id: idOf(fi)})
				total += fi.Size()
			default:
				rep.Skipped = append(rep.Skipped, skipped{rel, "not a regular file (" + t.String() + ")"})
			}
			if len(items) > maxCopyEntries {
				return errf(413, "copy_too_large", "source %s has more than %d entries; copy a smaller tree", real, maxCopyEntries)
			}
			if total > s.opts.MaxCopySize {
				return errf(413, "copy_too_large", "source %s is more than %d bytes, the server's copy limit (--max-copy-size); nothing was copied", real, s.opts.MaxCopySize)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	default:
		return nil, errf(400, "invalid_field", "source %s is not a regular file or a directory (%s)", real, st.Mode().Type())
	}
	if total > s.opts.MaxCopySize {
		return nil, errf(413, "copy_too_large", "source %s is %d bytes, more than the server's copy limit of %d bytes (--max-copy-size); nothing was copied", real, total, s.opts.MaxCopySize)
	}
	return items, nil
}

// writeCopy writes the planned items under the sandbox at comps (dst as
// given, for errors) through directory fds, and counts them in rep.
func (s *Server) writeCopy(sandbox string, src *copySource, dst string, comps []string, items []copyItem, rep *copyReport) (*copyReport, error) {
	root, err := openRoot(sandbox)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	parent, err := openDirs(root, comps[:len(comps)-1], true, "destination "+dst)
	if err != nil {
		return nil, err
	}
	defer unix.Close(parent)
	name := comps[len(comps)-1]
	budget := s.opts.MaxCopySize
	if !src.st.IsDir() {
		n, err := copyFile(src.real, items[0].id, parent, name, items[0].mode, budget, rep.Destination)
		if err != nil {
			return nil, err
		}
		rep.Files, rep.Bytes = 1, n
		return rep, nil
	}
	for _, it := range items {
		var dcomps []string
		dcomps = append(dcomps, name)
		if it.rel != "" {
			dcomps = append(dcomps, strings.Split(it.rel, "/")...)
		}
		shown := "destination " + path.Join(rep.Destination, it.rel)
		if it.dir {
			fd, err := openDirs(parent, dcomps, true, shown)
			if err != nil {
				return nil, partial(err, rep)
			}
			unix.Fchmod(fd, uint32(it.mode))
			unix.Close(fd)
			rep.Directories++
			continue
		}
		dir, err := openDirs(parent, dcomps[:len(dcomps)-1], false, shown)
		if err != nil {
			return nil, partial(err, rep)
		}
		n, err := copyFile(filepath.Join(src.real, filepath.FromSlash(it.rel)), it.id, dir, dcomps[len(dcomps)-1], it.mode, budget, path.Join(rep.Destination, it.rel))
		unix.Close(dir)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.code == "source_changed" {
				rep.Skipped = append(rep.Skipped, skipped{it.rel, ae.msg})
				continue
			}
			return nil, partial(err, rep)
		}
		budget -= n
		rep.Files++
		rep.Bytes += n
	}
	return rep, nil
}

func showResolved(abs, real string) string {
	if abs == real {
		return abs
	}
	return abs + " (" + real + ")"
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// partial adds what was already copied to a failure in the middle of a copy.
func partial(err error, rep *copyReport) error {
	var ae *apiError
	if errors.As(err, &ae) && (rep.Files > 0 || rep.Directories > 0) {
		return &apiError{ae.status, ae.code, fmt.Sprintf("%s (%d files, %d bytes were copied before this)", ae.msg, rep.Files, rep.Bytes)}
	}
	return err
}

// openResolved opens for reading the file at the absolute path p, which
// was resolved (no symlink on it) when the policy allowed it: each
// directory is opened with O_NOFOLLOW relative to its parent's descriptor,
// so a component swapped for a symlink since then gives ELOOP or ENOTDIR
// instead of leading the open somewhere the policy did not see (a plain
// open follows symlinks in every component but the last).
func openResolved(p string) (int, error) {
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	dir, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range comps[:len(comps)-1] {
		next, err := unix.Openat(dir, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(dir)
		if err != nil {
			return -1, err
		}
		dir = next
	}
	defer unix.Close(dir)
	return unix.Openat(dir, comps[len(comps)-1], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
}

// copyFile copies the regular file src (not followed if it, or a directory
// on its path, became a symlink) to name in dirfd via a temporary file and a rename, writing at
// most budget bytes. want is the file the policy allowed: a file put at
// src since (a hard link to a file the policy denies, say) is not copied.
func copyFile(src string, want fileID, dirfd int, name string, mode os.FileMode, budget int64, shown string) (int64, error) {
	sfd, err := openResolved(src)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return 0, errf(409, "source_changed", "source %s changed after the policy check (it or a directory on its path became a symbolic link or another type); not followed", src)
		}
		return 0, errf(403, "source_unreadable", "open source %s: %v", src, err)
	}
	in := os.NewFile(uintptr(sfd), src)
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, errf(409, "source_changed", "source %s is no longer a regular file; not copied", src)
	}
	if want != (fileID{}) && idOf(fi) != want {
		return 0, errf(409, "source_changed", "source %s was replaced by another file after the policy check; not copied", src)
	}
	return writeTemp(dirfd, ".tracecell-copy-"+randomID(""), name, mode, shown,
		"destination "+shown+" is a directory in the sandbox; name the file inside it",
		func(out *os.File) (int64, error) {
			n, err := io.Copy(out, io.LimitReader(in, budget+1))
			if err == nil && n > budget {
				err = errf(413, "copy_too_large", "source %s grew past the server's copy limit (--max-copy-size) while copying; not copied", src)
			}
			return n, err
		})
}

// writeTemp writes a file of the sandbox the way the copy and unpack
// endpoints do: it creates tmp in dirfd (O_EXCL|O_NOFOLLOW: never through
// an entry session code planted), fills it, sets its mode through the fd
// (settle, never by name), and renames it over name, so an existing entry,
// even a symlink, is replaced and never written through. On any failure
// tmp is removed and the error is an API error: isDir when name is a
// directory, no_space for a full disk or quota, copy_failed otherwise.
func writeTemp(dirfd int, tmp, name string, mode os.FileMode, shown, isDir string, fill func(*os.File) (int64, error)) (int64, error) {
	perm := uint32(mode.Perm()&^0o022) | 0o600
	ofd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return 0, errf(500, "copy_failed", "create %s in the sandbox: %v", shown, err)
	}
	out := os.NewFile(uintptr(ofd), tmp)
	n, err := fill(out)
	if err == nil {
		err = settle(out, dirfd, tmp, perm, shown)
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		if rerr := unix.Renameat(dirfd, tmp, dirfd, name); rerr != nil {
			if rerr == unix.EISDIR || rerr == unix.ENOTEMPTY || rerr == unix.EEXIST {
				err = errf(409, "destination_is_directory", "%s", isDir)
			} else {
				err = rerr
			}
		}
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		var ae *apiError
		if errors.As(err, &ae) {
			return 0, ae
		}
		if errors.Is(err, syscall.EFBIG) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return 0, errf(507, "no_space", "write %s in the sandbox: %v", shown, err)
		}
		return 0, errf(500, "copy_failed", "write %s in the sandbox: %v", shown, err)
	}
	return n, nil
}

// settle gives the temporary file out (named tmp in dirfd, inside a
// sandbox) its mode and checks that tmp still names it, before the caller
// renames tmp into place. The sandbox is the session's: its code, running
// on in a thread while the server copies, can swap tmp for a symlink to any
// file. So the mode is set with fchmod(2) on the descriptor the server
// holds, never by name (fchmodat(2) follows a symlink at the last component
// on every kernel; AT_SYMLINK_NOFOLLOW for it needs fchmodat2, Linux 6.6).
// rename(2) moves the entry itself and never follows a symlink at either
// name, so what a swap can achieve is at most a link of the session's own
// at the destination name, which its code could make anyway; the swap is
// still refused here (409) so the caller is not told that its file arrived.
func settle(out *os.File, dirfd int, tmp string, perm uint32, shown string) error {
	fd := int(out.Fd())
	if err := unix.Fchmod(fd, perm); err != nil {
		return fmt.Errorf("fchmod %s: %w", tmp, err)
	}
	var held, named unix.Stat_t
	if err := unix.Fstat(fd, &held); err != nil {
		return fmt.Errorf("fstat %s: %w", tmp, err)
	}
	if err := unix.Fstatat(dirfd, tmp, &named, unix.AT_SYMLINK_NOFOLLOW); err != nil || named.Dev != held.Dev || named.Ino != held.Ino {
		return errf(409, "destination_changed", "the temporary file for %s in the sandbox was replaced or moved by the session's code while the server wrote it; not copied", shown)
	}
	return nil
}

// serveFile sends a sandbox file.
func serveFile(w http.ResponseWriter, r *http.Request, f *os.File, st os.FileInfo) {
	ct := mimeByExt(st.Name())
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Inert in a browser: no script, no requests, an opaque origin (an HTML
	// or SVG file the code wrote must not use this origin's API, nor send
	// what it holds out through a browser that no policy confines).
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox")
	http.ServeContent(w, r, st.Name(), st.ModTime(), f)
}
