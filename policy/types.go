// Package policy makes the allow/deny decisions of tracecell. It is pure: it
// never calls ptrace and never touches the file system. The tracer gives it an
// Op whose paths are already resolved the way the kernel would resolve them;
// the policy answers with a Decision that names the rule and the reason.
package policy

import (
	"encoding/json"
	"fmt"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/tracecell/tracecell/syscalls"
)

// NetMode is what the traced tree may do on the network.
type NetMode uint8

const (
	NetDeny     NetMode = iota // no inet connect/bind/sendto; AF_UNIX only inside writable roots
	NetLoopback                // inet only to 127.0.0.0/8 and ::1
	NetAllow                   // everything
)

var netNames = []string{"deny", "loopback", "allow"}

func (m NetMode) String() string {
	if int(m) < len(netNames) {
		return netNames[m]
	}
	return fmt.Sprintf("net(%d)", uint8(m))
}

// MarshalText encodes the mode by name.
func (m NetMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText decodes deny|loopback|allow.
func (m *NetMode) UnmarshalText(b []byte) error {
	for i, n := range netNames {
		if n == string(b) {
			*m = NetMode(i)
			return nil
		}
	}
	return fmt.Errorf("invalid net mode %q: want deny, loopback or allow", b)
}

// Mode is enforce (deny) or audit (allow, but report what would be denied).
type Mode uint8

const (
	Enforce Mode = iota
	Audit
)

var modeNames = []string{"enforce", "audit"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// MarshalText encodes the mode by name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText decodes enforce|audit.
func (m *Mode) UnmarshalText(b []byte) error {
	for i, n := range modeNames {
		if n == string(b) {
			*m = Mode(i)
			return nil
		}
	}
	return fmt.Errorf("invalid mode %q: want enforce or audit", b)
}

// Config is the effective policy. All paths are absolute, cleaned and have
// their symlinks expanded (the caller does that once at start-up).
type Config struct {
	WriteRoots []string `json:"write_roots"`          // writable trees
	ReadRoots  []string `json:"read_roots,omitempty"` // nil: reads are open
	// RuntimeRoots are readable even when ReadRoots restricts reads: what the
	// program needs to start (loader, libraries, interpreter prefix).
	RuntimeRoots []string `json:"runtime_roots,omitempty"`
	DenyRead     []string `json:"deny_read,omitempty"` // never readable (files or trees)
	// DenyReadViews are the other paths that show a DenyRead entry's
	// files through another mount (a bind mount, an overlay's layer or
	// merged view: fsview.Views), denied like the entry itself: policies
	// decide by path, and the mount does not change the file.
	DenyReadViews []View `json:"deny_read_views,omitempty"`
	// DenyReadFiles identify the deny-read entries that are files (not
	// directories) by device and inode, as they were when the run began:
	// a hard link elsewhere is the same file under a name no path rule
	// covers.
	DenyReadFiles []FileID `json:"deny_read_files,omitempty"`
	// DenyReadLinks are the deny-read entries as given (absolute, clean)
	// that go through a symlink: DenyRead holds where they led when the
	// run began, and the tracer follows them again at every checked read
	// (Path.DenyLink), since the link may be swapped while the tree runs
	// (a Kubernetes secret volume's ..data, kubelet rotating a token).
	DenyReadLinks []string `json:"deny_read_links,omitempty"`
	// DenyReadVersions are path.Match patterns (Path) of the other versions
	// of a link entry (Of) that a Kubernetes atomic writer keeps beside the
	// one its links lead to: token -> ..data/token, ..data -> ..<time> gives
	// "<dir>/..*/token". kubelet writes the next version's directory before
	// it swaps ..data, and a tree watching the volume opened the new token
	// in between (round 59 of the red team).
	DenyReadVersions []View   `json:"deny_read_versions,omitempty"`
	AllowExec        []string `json:"allow_exec,omitempty"` // resolved executables the tree may exec
	// AllowExecPatterns are path.Match patterns over the resolved program
	// ("/usr/bin/*": every program directly in /usr/bin; '*' stops at '/').
	// Their fixed leading directories have their symlinks expanded.
	AllowExecPatterns []string `json:"allow_exec_patterns,omitempty"`
	Net               NetMode  `json:"net"`
	Devices           []string `json:"devices"` // path.Match patterns of writable device files
	Scratch           []string `json:"scratch"` // create-only directories (default /dev/shm)
	Mode              Mode     `json:"mode"`
	// PrivateScratch: the entries of the scratch directories are readable
	// only if the tree created them (Ledger), as they are writable. For a
	// session server, whose sessions share /dev/shm: one session's POSIX
	// shared memory and semaphores are not another's to read. The tracer
	// checks read-only opens when it is set (ChecksReads).
	PrivateScratch bool `json:"private_scratch,omitempty"`
	// Unreachable are endpoints the tree may never connect or send to,
	// whatever Net says: the listeners of the program that runs the tree
	// (the session server's own sockets, which would let a session drive
	// every other one).
	Unreachable []Endpoint `json:"unreachable,omitempty"`
	// NetAdmin: the operator kept CAP_NET_ADMIN for the tree (--keep-cap
	// net_admin, a root tracecell, typically in a network namespace of the
	// tree's own). Socket ioctls off the allow-list (SIOCSIFFLAGS,
	// SIOCADDRT, ...) then reach the kernel, which checks the capability
	// itself; without it they are denied and reported as ioctl-not-allowed.
	NetAdmin bool `json:"net_admin,omitempty"`
}

// View is another path (Path) under which the mount table shows the files
// of the deny-read entry Of.
type View struct {
	Path string `json:"path"`
	Of   string `json:"of"`
	// Inside: the view shows only a directory strictly inside Of (a bind
	// mount of a subdirectory, a volume mounted below it), not Of itself.
	// A writable root that is such a view is carved out of the denial (a
	// project directory of a denied /home mounted as the sandbox); one
	// that shows Of itself is not, as a root equal to Of is not.
	Inside bool `json:"inside,omitempty"`
}

// FileID is a deny-read file's identity: its st_dev and st_ino, and the
// entry (Of).
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	Of  string `json:"of"`
}

// ChecksReads reports whether some read-only opens may be denied (read
// roots, deny-read paths, private scratch): the tracer must then trap them.
func (c Config) ChecksReads() bool {
	return c.ReadRoots != nil || len(c.DenyRead) > 0 || c.PrivateScratch
}

// Endpoint is one never-reachable listener: a Unix socket path, or a TCP
// or UDP port on one address or, when Addr is empty or unspecified (0.0.0.0,
// ::, a listener on every interface), on every address.
type Endpoint struct {
	Unix string `json:"unix,omitempty"` // absolute, clean, symlinks expanded
	Addr string `json:"addr,omitempty"` // an IP address
	Port int    `json:"port,omitempty"`
	// What the endpoint is, for the reason of a denial ("the session
	// server's own socket").
	What string `json:"what,omitempty"`
}

// Path is one path argument of an operation.
type Path struct {
	Role  string `json:"role"`  // "path", "source", "target", "socket", "program"
	Given string `json:"given"` // as the program passed it (bytes kept, may be invalid UTF-8)
	// Null is set when the path argument was a NULL pointer, which the
	// *at calls that take one read as "the dirfd itself" (utimensat,
	// setxattrat, file_setattr, ...): Given is then "" but no string was
	// passed at all.
	Null     bool   `json:"null,omitempty"`
	Dirfd    *int   `json:"dirfd,omitempty"`       // the dirfd argument, when the call has one
	Base     string `json:"relative_to,omitempty"` // directory a relative path started from ("" when absolute)
	Resolved string `json:"resolved"`              // absolute, symlinks expanded as the kernel would
	Exists   bool   `json:"exists"`                // whether Resolved existed at check time
	IsDir    bool   `json:"is_dir,omitempty"`
	// Special is set when the path named a non-file object through a /proc
	// magic link (for example "pipe:[1234]" or "socket:[99]"); Resolved is
	// then the /proc path of the link ("/proc/42/fd/1").
	Special string `json:"special,omitempty"`
	// SpecialInTree is set by the tracer for a Special path when the process
	// whose /proc entry named the object (pathres.Result.ProcPid) is in the
	// traced tree. Re-opening a pipe the tree holds (/dev/stdout) is no way
	// out; opening the pipe of a host process through /proc/<pid>/fd/N is.
	SpecialInTree bool `json:"special_in_tree,omitempty"`
	// SpecialWritable is set by the tracer for a SpecialInTree path that
	// is a file descriptor link (/proc/<pid>/fd/N) whose fd is open for
	// writing (its fdinfo flags: O_WRONLY or O_RDWR, not O_PATH).
	// Reopening an object for writing through /proc gives the tree no
	// write access it did not hold only then: a pipe it holds read-only
	// (a host process's pipe opened read-only through that process's
	// /proc/<pid>/fd/N, or a read end) must not become a write end.
	SpecialWritable bool `json:"special_writable,omitempty"`
	// DeletedWritable is set by the tracer for a Deleted path reached
	// through a file descriptor of a process of the tree that is open for
	// writing (O_WRONLY or O_RDWR, not O_PATH). A read-only fd shows
	// nothing about whose the file is: the tree gets one of any host
	// process's unlinked file through its /proc/<pid>/fd/N, or by opening
	// it read-only before the host unlinks it (red team, session 23).
	DeletedWritable bool `json:"-"`
	// ProcOutside is set by the tracer when Resolved lies under /proc/<pid>
	// of a process outside the traced tree (its environment, command line
	// and memory hold other programs' secrets).
	ProcOutside bool `json:"-"`
	// HeldOutside is set by the tracer when Resolved is an unlinked file or
	// a memfd (a " (deleted)" link text) reached through /proc/<pid>/fd of
	// a process outside the traced tree: that process's private memory or
	// scratch file (another session's), with no name the policy could
	// decide by.
	HeldOutside bool `json:"-"`
	// BlockDevice is set by the tracer when Resolved is a block device
	// node (the object the call opens, after symlinks): its raw blocks
	// hold every file stored on the device, the ones --deny-read and
	// --read keep from the tree included (round 56 of the red team: a root
	// tree read a deny-read file's bytes from /dev/loopN).
	BlockDevice bool `json:"-"`
	// Dev and Ino identify the object at Resolved when Exists (its lstat
	// st_dev and st_ino; 0 when not known).
	Dev, Ino uint64 `json:"-"`
	// DenyLink is set by the tracer to the entry of Config.DenyReadLinks
	// whose symlinks, followed at this call, lead to Resolved or above it.
	DenyLink string `json:"-"`
	// DenyLinkAt is where DenyLink leads now.
	DenyLinkAt string `json:"-"`
	// Deleted is set by the tracer when Resolved is the text
	// "<old name> (deleted)" of a /proc magic link (fd/N, map_files/*) to a
	// file with no name any more (unlinked, O_TMPFILE, memfd), checked
	// against the object's inode (pathres.Result.Deleted). The old name
	// only says where the file was linked last: whatever has that name (or
	// that text) now is another file, so the policy never decides by it.
	Deleted bool `json:"deleted,omitempty"`
	// OwnPty is set by the tracer when Resolved is a pty slave (PtySlave)
	// that the traced tree may write: one it created itself (recorded at
	// its TIOCGPTN by index and inode identity), or the terminal of
	// tracecell's own stdio (by device numbers). Every other pty is another
	// session's terminal.
	OwnPty bool `json:"-"`
	// Ctty is set by the tracer when the file is /dev/tty, which names no
	// terminal of its own: the kernel opens the caller's controlling
	// terminal, and an fd of it acts on the terminal that was controlling
	// when it was opened. Resolved is then that terminal (/dev/pts/N, or
	// the node of a console or serial line), OwnPty whether the tree may
	// write it, and CttyWhy, when set, why it cannot be told (denied).
	Ctty    bool   `json:"-"`
	CttyWhy string `json:"-"`
	// GivenBytes, BaseBytes and ResolvedBytes repeat Given, Base and
	// Resolved byte for byte when they are not valid UTF-8 (KeepBytes):
	// a JSON string cannot hold such bytes (encoding/json writes U+FFFD
	// for each), so two different paths would read alike in a report.
	// Reading a report back (UnmarshalJSON) restores the strings from them.
	GivenBytes    []byte `json:"given_base64,omitempty"`
	BaseBytes     []byte `json:"relative_to_base64,omitempty"`
	ResolvedBytes []byte `json:"resolved_base64,omitempty"`
}

// KeepBytes sets GivenBytes, BaseBytes and ResolvedBytes for the strings
// that are not valid UTF-8, and reports whether any was.
func (p *Path) KeepBytes() bool {
	kept := false
	for _, f := range []struct {
		s   string
		raw *[]byte
	}{{p.Given, &p.GivenBytes}, {p.Base, &p.BaseBytes}, {p.Resolved, &p.ResolvedBytes}} {
		if !utf8.ValidString(f.s) {
			*f.raw = []byte(f.s)
			kept = true
		}
	}
	return kept
}

// Shown is the path as the program passed it, for a one-line message: the
// given string quoted, or NULL (unquoted, as in C) for a NULL pointer.
func (p *Path) Shown() string {
	if p.Null {
		return "NULL"
	}
	return strconv.Quote(p.Given)
}

// UnmarshalJSON reads a path of a report: the *_base64 fields, when
// present, give the exact bytes of the strings they repeat.
func (p *Path) UnmarshalJSON(b []byte) error {
	type plain Path
	if err := json.Unmarshal(b, (*plain)(p)); err != nil {
		return err
	}
	if p.GivenBytes != nil {
		p.Given = string(p.GivenBytes)
	}
	if p.BaseBytes != nil {
		p.Base = string(p.BaseBytes)
	}
	if p.ResolvedBytes != nil {
		p.Resolved = string(p.ResolvedBytes)
	}
	return nil
}

// Op is one checked operation.
type Op struct {
	Kind    syscalls.Kind `json:"kind"`
	Syscall string        `json:"syscall"`
	Paths   []Path        `json:"paths,omitempty"`

	// Network (KindConnect, KindBind): Family is "inet", "inet6", "unix",
	// "netlink" or "family(N)"; Addr is an IP, Port its port; for "unix",
	// Paths[0] holds the socket path unless Abstract.
	Family   string `json:"family,omitempty"`
	Addr     string `json:"address,omitempty"`
	Port     int    `json:"port,omitempty"`
	Abstract bool   `json:"abstract,omitempty"`
	// Rewritten, when set, says why the memory the tracer read for this
	// address is not what the kernel will read: the kernel itself writes
	// into it earlier in the same call (sendmmsg writes each entry's
	// msg_len before it reads the next entry). The check is then void.
	Rewritten string `json:"rewritten,omitempty"`
	// From is, for a datagram send to an inet address, the local address
	// of the sending socket as the kernel will use it: an IP ("127.0.0.1",
	// "::"), or "unbound" when the socket has no port yet and the send
	// would bind it to every interface (inet_autobind). "" when it does not
	// matter (a stream socket, or not looked up).
	From string `json:"from,omitempty"`

	// Signals and process calls (KindSignal, KindProcess): the pid argument
	// as given (0, -1, -pgid or a pid) and whether every process it reaches
	// is inside the traced tree (decided by the tracer, which knows the tree).
	TargetPid    int  `json:"target_pid,omitempty"`
	TargetInTree bool `json:"target_in_tree,omitempty"`
	// AsyncTTY: signal-driven I/O turned on for the terminal in Paths[0],
	// whose foreground process group the kernel makes the fd's SIGIO
	// owner; TargetInTree says whether that terminal is the tree's own.
	AsyncTTY bool `json:"async_tty,omitempty"`

	// SetID are the S_ISUID and S_ISGID bits of the mode a chmod, an
	// O_CREAT open or a mknod would give Paths[0] (0 when none).
	SetID uint32 `json:"set_id,omitempty"`
	// Xattr is the name of the extended attribute a setxattr sets.
	Xattr string `json:"xattr,omitempty"`

	// Futex (KindFutex): why a futex word the call names may not be used,
	// "" when every word lies in memory the tree may write (the tracer
	// reads the memory map; the policy only states the rule).
	FutexWhy string `json:"futex_why,omitempty"`

	// Exec: Initial is true for the exec of the command tracecell was asked
	// to run (always allowed).
	Initial bool `json:"initial,omitempty"`

	// Ioctl names the command of a KindIoctl operation, one that neither
	// the filter's allow-list nor a rule of its own covers (its name, or
	// its number in hex); Paths[0] is what its fd points to. It is allowed
	// only where the tree may write that (decideIoctl).
	Ioctl string `json:"ioctl,omitempty"`

	// Option is the option of a forbidden call that is forbidden only
	// with it (prctl's PR_SET_MM, PR_SET_DUMPABLE), for the reason.
	Option string `json:"option,omitempty"`
}

// Decision is the answer of the policy.
//
// The policy is mode-agnostic: in audit mode Decide returns the same
// Decision as in enforce mode (Allow false, with Rule, Reason and Errno); the
// tracer then lets the call run and records it as "audit". Config().Mode
// tells the tracer which mode is on. Allowed decisions carry a Rule too (for
// example "inside-writable-root"), so --trace can say why a call passed.
type Decision struct {
	Allow  bool          `json:"allow"`
	Rule   Rule          `json:"rule,omitempty"`   // short stable id (the catalogue, Rules)
	Reason string        `json:"reason,omitempty"` // human text, e.g. "outside writable roots (/srv/sbx)"
	Errno  syscall.Errno `json:"-"`                // EACCES or EPERM when denied
	// Scratch is set when an allowed create lands in a scratch directory: the
	// tracer records the resolved path in its ledger.
	Scratch []string `json:"-"`
}

// Ledger knows which scratch entries the traced tree created itself. The
// tracer's records each entry a create of the tree's made with the
// identity of the object made, and checks it at every question: an entry
// is the tree's only while its name holds that very object. Nothing is the
// tree's for being below a directory it made: a host process may put its
// own files there.
type Ledger interface {
	// Owned reports whether the traced tree created the entry at path
	// itself and path still holds the object it made.
	Owned(path string) bool
	// Replaced reports whether path is a name the tree created whose
	// object another process has removed or moved away and replaced by
	// its own (asked after Owned said no, for the reason of the denial).
	Replaced(path string) bool
	// Foreign names an entry below the directory path that is not the
	// tree's (another process's, or one it could not check), "" when
	// every entry below it is: renaming the directory would move them.
	Foreign(path string) string
}
