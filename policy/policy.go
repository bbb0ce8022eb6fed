package policy

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/tracecell/tracecell/syscalls"
)

// DefaultDevices are the device files every program may open for writing:
// the sinks and sources any runtime expects, the controlling terminal, and
// the pty multiplexers (/dev/pts/ptmx is devpts's own twin of /dev/ptmx),
// which make a new pty. Not /dev/pts/*: the slaves of other ptys are the
// user's other terminals (another ssh session). Of those the tree may write
// only its own (Path.OwnPty, rule own-pty); an operator who wants the old
// behaviour says --allow-device '/dev/pts/*'.
func DefaultDevices() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts/ptmx"}
}

// cttyDecision decides the terminal that /dev/tty names for the caller
// (pa.Ctty): its controlling terminal when it opens /dev/tty, the terminal
// an fd of /dev/tty refers to for a terminal change. Resolved is that
// terminal (/dev/pts/N, or the node of a console or serial line). Like a
// pty slave opened by name: writable when it is the tree's own or
// tracecell's own terminal (pa.OwnPty) or a device the operator allowed;
// otherwise another session's terminal, which /dev/tty must not reach
// (red team F2: a read-only open of another terminal makes it the
// controlling terminal of a session leader that has none). CttyWhy, when
// set, says why the terminal cannot be told: denied.
func (p *Policy) cttyDecision(pa *Path) Decision {
	switch {
	case pa.CttyWhy != "":
		return deny(syscall.EACCES, RuleForeignPty, pa.CttyWhy)
	case pa.OwnPty:
		return allow(RuleOwnPty)
	case p.device(pa.Resolved):
		return allow(RuleDevice)
	}
	return deny(syscall.EACCES, RuleForeignPty, fmt.Sprintf("/dev/tty is %s here, a terminal the traced tree did not create (only its own ptys and tracecell's own terminal are writable)", pa.Resolved))
}

// DevTTY is the controlling terminal's name, a default device that names
// no terminal of its own (Path.Ctty).
const DevTTY = "/dev/tty"

// PtySlave reports whether the resolved path res names a pseudo-terminal
// slave, /dev/pts/N: an entry of the devpts mounted at /dev/pts other than
// its multiplexer ptmx (a twin of /dev/ptmx, which makes a new pty).
func PtySlave(res string) bool {
	name, ok := strings.CutPrefix(res, "/dev/pts/")
	return ok && name != "" && name != "ptmx" && !strings.Contains(name, "/")
}

// DefaultScratch are the create-only directories: /dev/shm, which POSIX
// shared memory and Python's multiprocessing (sem_open, shm_open) need.
func DefaultScratch() []string { return []string{"/dev/shm"} }

// Policy decides. It is immutable after New and safe for concurrent use.
type Policy struct {
	cfg Config
	// deny is every deny-read path: the entries, then their views.
	deny []denyEntry
	// denyFiles are the deny-read files by identity (Config.DenyReadFiles).
	denyFiles map[[2]uint64]string
	writeText string // "/a, /b" or "none", for reasons
	readText  string
	execText  string
}

// New validates cfg and returns its policy. Every path must be absolute and
// clean (the caller expands symlinks first), device patterns must be valid
// for path.Match, and the modes must be known. The error names the bad value.
func New(cfg Config) (*Policy, error) {
	lists := []struct {
		what string
		list []string
	}{
		{"write root", cfg.WriteRoots},
		{"read root", cfg.ReadRoots},
		{"runtime root", cfg.RuntimeRoots},
		{"deny-read path", cfg.DenyRead},
		{"deny-read link", cfg.DenyReadLinks},
		{"allowed executable", cfg.AllowExec},
		{"scratch dir", cfg.Scratch},
	}
	for _, l := range lists {
		for _, p := range l.list {
			if err := checkPath(l.what, p); err != nil {
				return nil, err
			}
		}
	}
	for _, v := range cfg.DenyReadViews {
		if err := checkPath("deny-read view", v.Path); err != nil {
			return nil, err
		}
		if !slices.Contains(cfg.DenyRead, v.Of) {
			return nil, fmt.Errorf("deny-read view %q: its entry %q is not a deny-read path", v.Path, v.Of)
		}
	}
	for _, p := range cfg.WriteRoots {
		if Under(p, "/proc") {
			return nil, fmt.Errorf("write root %q is under /proc: writes there are never allowed", p)
		}
	}
	for _, d := range cfg.Devices {
		if !strings.HasPrefix(d, "/") {
			return nil, fmt.Errorf("device pattern %q is not absolute", d)
		}
		if _, err := path.Match(d, "/dev/null"); err != nil {
			return nil, fmt.Errorf("device pattern %q: %w", d, err)
		}
	}
	for _, x := range cfg.AllowExecPatterns {
		if err := CheckExecPattern(x); err != nil {
			return nil, err
		}
	}
	for _, e := range cfg.Unreachable {
		if err := checkEndpoint(e); err != nil {
			return nil, err
		}
	}
	if cfg.Net > NetAllow {
		return nil, fmt.Errorf("net mode %v is not deny, loopback or allow", cfg.Net)
	}
	if cfg.Mode > Audit {
		return nil, fmt.Errorf("mode %v is not enforce or audit", cfg.Mode)
	}
	p := &Policy{cfg: copyConfig(cfg), deny: denyEntries(cfg)}
	for _, v := range cfg.DenyReadVersions {
		if _, err := path.Match(v.Path, "/"); err != nil || !slices.Contains(cfg.DenyReadLinks, v.Of) || checkPath("deny-read version", v.Path) != nil {
			return nil, fmt.Errorf("deny-read version %q of %q: not an absolute pattern of a deny-read link", v.Path, v.Of)
		}
	}
	for _, f := range cfg.DenyReadFiles {
		if f.Ino == 0 || !slices.Contains(cfg.DenyRead, f.Of) {
			return nil, fmt.Errorf("deny-read file %+v: no inode, or its entry is not a deny-read path", f)
		}
		if p.denyFiles == nil {
			p.denyFiles = map[[2]uint64]string{}
		}
		p.denyFiles[[2]uint64{f.Dev, f.Ino}] = f.Of
	}
	p.writeText = listText(cfg.WriteRoots)
	var readable []string
	readable = append(readable, cfg.ReadRoots...)
	readable = append(readable, cfg.WriteRoots...)
	readable = append(readable, cfg.Scratch...)
	p.readText = listText(readable)
	p.execText = listText(append(append([]string{}, cfg.AllowExec...), cfg.AllowExecPatterns...))
	return p, nil
}

func checkPath(what, p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%s %q is not an absolute path", what, p)
	}
	if c := path.Clean(p); c != p {
		return fmt.Errorf("%s %q is not clean (want %q)", what, p, c)
	}
	return nil
}

func listText(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func copyConfig(c Config) Config {
	dup := func(s []string) []string {
		if s == nil {
			return nil
		}
		return append([]string{}, s...)
	}
	c.WriteRoots = dup(c.WriteRoots)
	c.ReadRoots = dup(c.ReadRoots)
	c.RuntimeRoots = dup(c.RuntimeRoots)
	c.DenyRead = dup(c.DenyRead)
	if c.DenyReadViews != nil {
		c.DenyReadViews = append([]View{}, c.DenyReadViews...)
	}
	c.DenyReadLinks = dup(c.DenyReadLinks)
	if c.DenyReadVersions != nil {
		c.DenyReadVersions = append([]View{}, c.DenyReadVersions...)
	}
	if c.DenyReadFiles != nil {
		c.DenyReadFiles = append([]FileID{}, c.DenyReadFiles...)
	}
	c.AllowExec = dup(c.AllowExec)
	c.AllowExecPatterns = dup(c.AllowExecPatterns)
	c.Devices = dup(c.Devices)
	c.Scratch = dup(c.Scratch)
	if c.Unreachable != nil {
		c.Unreachable = append([]Endpoint{}, c.Unreachable...)
	}
	return c
}

func checkEndpoint(e Endpoint) error {
	if e.Unix != "" {
		if e.Addr != "" || e.Port != 0 {
			return fmt.Errorf("unreachable endpoint %+v: a unix path or an address and port, not both", e)
		}
		return checkPath("unreachable unix socket", e.Unix)
	}
	if e.Port < 1 || e.Port > 65535 {
		return fmt.Errorf("unreachable endpoint %q port %d: want 1 to 65535", e.Addr, e.Port)
	}
	if e.Addr != "" {
		if _, err := netip.ParseAddr(e.Addr); err != nil {
			return fmt.Errorf("unreachable endpoint %q: %w", e.Addr, err)
		}
	}
	return nil
}

// unreachable returns the never-reachable endpoint a connect or send
// reaches, if any. A path socket is matched by its resolved path (a
// symlink to it resolves to it; a hard link to it is a link of a file
// outside the writable roots, which the tree cannot make). An inet address
// matches a listener on it, on every address (Addr "", 0.0.0.0, ::), and
// 0.0.0.0 or :: match every listener: connecting to them reaches the
// loopback address (see decideInet), which is conservative for a listener
// on another local address.
func (p *Policy) unreachable(op *Op) (Endpoint, bool) {
	if op.Kind != syscalls.KindConnect || len(p.cfg.Unreachable) == 0 {
		return Endpoint{}, false
	}
	switch op.Family {
	case "unix":
		if op.Abstract || len(op.Paths) == 0 || op.Paths[0].Special != "" {
			return Endpoint{}, false
		}
		res := op.Paths[0].Resolved
		for _, e := range p.cfg.Unreachable {
			if e.Unix != "" && e.Unix == res {
				return e, true
			}
		}
	case "inet", "inet6", "", "unspec":
		// AF_UNSPEC: UDP takes it as AF_INET (see decideNet); a send to
		// an unparsable address reaches nothing of ours.
		ip, err := netip.ParseAddr(op.Addr)
		if err != nil {
			return Endpoint{}, false
		}
		ip = ip.Unmap()
		for _, e := range p.cfg.Unreachable {
			if e.Unix != "" || e.Port != op.Port {
				continue
			}
			if e.Addr == "" || ip.IsUnspecified() {
				return e, true
			}
			ea, err := netip.ParseAddr(e.Addr)
			if err == nil && (ea.Unmap() == ip || ea.IsUnspecified()) {
				return e, true
			}
		}
	}
	return Endpoint{}, false
}

// Config returns a copy of the effective configuration.
func (p *Policy) Config() Config { return copyConfig(p.cfg) }

// DeniedFile is the deny-read entry whose file (Config.DenyReadFiles) has
// this device and inode: that file under another name.
func (p *Policy) DeniedFile(dev, ino uint64) (string, bool) {
	of, ok := p.denyFiles[[2]uint64{dev, ino}]
	return of, ok && ino != 0
}

// DenyReadLinks is Config().DenyReadLinks without the copy, for the
// tracer's every checked path; the caller must not change it.
func (p *Policy) DenyReadLinks() []string { return p.cfg.DenyReadLinks }

// Under reports whether the clean absolute path p is root or inside it,
// component-wise: "/srv/sbx2" is not under "/srv/sbx".
func Under(p, root string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, root) && (len(p) == len(root) || p[len(root)] == '/')
}

// clean reports whether p is absolute and clean, as resolved paths are. The
// policy refuses anything else rather than compare prefixes of
// "/srv/sbx/../etc".
func clean(p string) bool {
	return strings.HasPrefix(p, "/") && path.Clean(p) == p
}

func allow(rule Rule) Decision { return Decision{Allow: true, Rule: rule} }

func deny(errno syscall.Errno, rule Rule, reason string) Decision {
	return Decision{Rule: rule, Reason: reason, Errno: errno}
}

// Decide answers for one operation. It never touches the file system: the
// paths of op are already resolved. l may be nil (nothing owned).
func (p *Policy) Decide(op *Op, l Ledger) Decision {
	if op == nil {
		return deny(syscall.EPERM, RuleUnknownKind, "no operation")
	}
	switch k := op.Kind; {
	case k == syscalls.KindIoctl:
		return p.decideIoctl(op, l)
	case k.ChecksAsWrite():
		if d, bad := privilege(op); bad {
			return d
		}
		return p.decideFS(op, l)
	case k == syscalls.KindRead:
		return p.decideRead(op, l)
	case k == syscalls.KindExec:
		return p.decideExec(op)
	case k == syscalls.KindConnect || k == syscalls.KindBind:
		return p.decideNet(op, l)
	case k == syscalls.KindSignal || k == syscalls.KindProcess:
		return decideTarget(op)
	case k == syscalls.KindFutex:
		if op.FutexWhy == "" {
			return allow(RuleInTree)
		}
		return deny(syscall.EPERM, RuleFutexMemory, op.FutexWhy)
	case k == syscalls.KindForbidden:
		name := op.Syscall
		if name == "" {
			name = "this system call"
		}
		if strings.HasPrefix(name, "mknod") {
			name += " of a device node"
		}
		why := ""
		if op.Option != "" {
			name += "(" + op.Option + ")"
		}
		if op.Option == "PR_SET_DUMPABLE" {
			why = " but to turn dumpable on (a process that is not dumpable hides its fds, program and memory from a tracer without CAP_SYS_PTRACE, so tracecell could no longer check its calls)"
		}
		if op.Option == "SIGSYS" {
			why = " with a siginfo of the caller's making (it could pose as the kernel's report of a seccomp trap; kill and tgkill send SIGSYS)"
		}
		if strings.HasPrefix(name, "mq_") {
			why = " (POSIX message queues live in the host's mqueue file system: mq_open is not allowed, so a queue descriptor can only be another program's queue, opened through /dev/mqueue)"
		}
		return deny(syscall.EPERM, RuleForbiddenSyscall, name+" is never allowed"+why)
	default:
		return deny(syscall.EPERM, RuleUnknownKind, fmt.Sprintf("operation kind %v is not classified", k))
	}
}

// Set-id mode bits (include/uapi/linux/stat.h).
const (
	SetUID = 0o4000 // S_ISUID
	SetGID = 0o2000 // S_ISGID
)

// XattrCaps is the extended attribute that holds a file's capabilities
// (XATTR_NAME_CAPS): whoever executes the file gains them.
const XattrCaps = "security.capability"

// privilege denies what would make a file run with more privilege than
// its caller has, wherever the file is, the sandbox included: any local
// user who can reach the sandbox may execute what the tree leaves there.
//   - S_ISUID on anything, and S_ISGID on anything but a directory: a copy
//     of python3 made setuid by a root tree runs as root for everyone. On
//     a directory S_ISGID only makes new entries take the directory's
//     group (and new subdirectories the bit): nothing runs with it, and
//     shared project directories use it, so it is allowed there. (mkdir
//     drops both bits itself: vfs_mkdir keeps S_IRWXUGO|S_ISVTX.)
//   - security.capability: file capabilities (cap_setuid+ep) are root's
//     power handed to whoever runs the file.
//
// chown needs no check: the kernel clears S_ISUID and S_ISGID of a
// non-directory on every chown (chown_common: ATTR_KILL_SUID|ATTR_KILL_SGID)
// and drops security.capability (ATTR_KILL_PRIV).
func privilege(op *Op) (Decision, bool) {
	if op.SetID != 0 {
		bits := op.SetID & (SetUID | SetGID)
		dir := len(op.Paths) > 0 && op.Paths[0].IsDir
		if bits&SetUID != 0 || (bits&SetGID != 0 && !dir) {
			what := "set-user-ID bit"
			switch bits {
			case SetGID:
				what = "set-group-ID bit"
			case SetUID | SetGID:
				what = "set-user-ID and set-group-ID bits"
			}
			return deny(syscall.EPERM, RuleSetID, fmt.Sprintf("%s would set the %s: a set-id file runs with its owner's privileges for every user, so tracecell never lets the traced tree make one (leave the bit out, e.g. chmod 0755)", nameOf(op), what)), true
		}
	}
	if op.Xattr == XattrCaps {
		return deny(syscall.EPERM, RuleFileCaps, nameOf(op)+" of security.capability would give the file capabilities, which whoever runs it gains: never allowed"), true
	}
	return Decision{}, false
}

// role says what a path is to its operation: "source" and "target" of
// rename and link (by Role, else by position), "path" otherwise.
func role(op *Op, i int) string {
	r := op.Paths[i].Role
	if r == "source" || r == "target" {
		return r
	}
	if op.Kind == syscalls.KindRename || op.Kind == syscalls.KindLink {
		if i == 0 {
			return "source"
		}
		return "target"
	}
	return "path"
}

// decideFS: every path of a modifying operation must be writable. Both
// paths of rename and link count: a hard link from an outside file into the
// sandbox would make the outside file writable through the new name.
func (p *Policy) decideFS(op *Op, l Ledger) Decision {
	if len(op.Paths) == 0 {
		return deny(syscall.EACCES, RuleNoPath, fmt.Sprintf("%s without a path", nameOf(op)))
	}
	out := allow(RuleInsideRoot)
	for i := range op.Paths {
		r := role(op, i)
		d, scratch := p.writable(op.Kind, r, &op.Paths[i], l)
		if !d.Allow {
			if len(op.Paths) > 1 {
				d.Reason = r + " " + d.Reason
			}
			return d
		}
		// The allow rule of the first path that is not plainly inside a
		// root (scratch, device) says the most about the operation.
		if out.Rule == RuleInsideRoot {
			out.Rule = d.Rule
		}
		if scratch != "" {
			out.Scratch = append(out.Scratch, scratch)
		}
	}
	return out
}

// creates reports whether the operation makes a new entry at pa (and so
// may claim it in a scratch directory): an entry that exists already is
// changed, never created, whatever the call (mkdir of an existing entry
// fails with EEXIST; claiming it would hand a host file to the tree).
func creates(kind syscalls.Kind, r string, pa *Path) bool {
	if pa.Exists {
		return false
	}
	switch kind {
	case syscalls.KindCreate:
		return true
	case syscalls.KindRename, syscalls.KindLink:
		return r == "target"
	}
	return false
}

// destroysRoot reports whether the operation on a writable root itself would
// remove or re-permission the sandbox (creating inside it is fine).
func destroysRoot(kind syscalls.Kind) (string, bool) {
	switch kind {
	case syscalls.KindDelete:
		return "delete", true
	case syscalls.KindRename:
		return "rename", true
	case syscalls.KindChmod:
		return "chmod", true
	case syscalls.KindChown:
		return "chown", true
	case syscalls.KindXattr:
		return "set xattrs on", true
	}
	return "", false
}

// writable decides one path of a modifying operation. The returned scratch
// path is set for a create the ledger must record.
func (p *Policy) writable(kind syscalls.Kind, r string, pa *Path, l Ledger) (Decision, string) {
	res := pa.Resolved
	if pa.Special != "" {
		// A non-file object named through /proc/<pid>/fd/N (Resolved is
		// that link). Writing to a pipe or socket the tree holds is what
		// /dev/stdout is for; the pipe of a host process is a way out.
		// Reopening gives a new open file of the object, with the mode
		// asked for, whatever the mode of the fd it was reached by: so
		// only an fd open for writing may be reopened for writing. A
		// pipe the tree opened read-only through a host process's
		// /proc/<pid>/fd/N is held by the tree too, but only to read.
		switch {
		case kind == syscalls.KindWrite && pa.SpecialInTree && pa.SpecialWritable:
			return allow(RuleSpecialObject), ""
		case kind == syscalls.KindWrite && pa.SpecialInTree:
			return deny(syscall.EACCES, RuleProcWrite, fmt.Sprintf("%s is not open for writing there: reopening it for writing through /proc would give the tree a write end it does not hold", fdOwner(res, pa.Special))), ""
		case kind == syscalls.KindWrite:
			return deny(syscall.EACCES, RuleProcWrite, fmt.Sprintf("%s belongs to %s outside the traced tree", pa.Special, procOwner(res))), ""
		}
		return deny(syscall.EACCES, RuleProcWrite, fmt.Sprintf("%s of %s through /proc is not allowed", kind, pa.Special)), ""
	}
	if pa.Deleted {
		return p.deletedWritable(kind, pa, l), ""
	}
	if !clean(res) {
		return deny(syscall.EACCES, RuleUnresolvedPath, fmt.Sprintf("path %q is not resolved", res)), ""
	}
	if d, ok := p.denyRead(res); ok {
		// Deny-read wins inside writable roots too: a file the program may
		// not read, it may not replace, truncate or re-permission either.
		return d, ""
	}
	if Under(res, "/proc") {
		return deny(syscall.EACCES, RuleProcWrite, "writes under /proc are not allowed"), ""
	}
	if pa.Ctty && kind == syscalls.KindWrite {
		return p.cttyDecision(pa), ""
	}
	if root, ok := p.writeRoot(res); ok {
		if verb, bad := destroysRoot(kind); bad && res == root {
			return deny(syscall.EACCES, RuleRootItself, fmt.Sprintf("cannot %s the writable root itself (%s)", verb, root)), ""
		}
		if d, ok := p.movesDenyRead(kind, res); ok {
			return d, ""
		}
		if d, ok := p.copiesDenyRead(kind, r, res); ok {
			return d, ""
		}
		return allow(RuleInsideRoot), ""
	}
	if kind == syscalls.KindWrite && p.device(res) {
		return allow(RuleDevice), ""
	}
	if kind == syscalls.KindWrite && PtySlave(res) {
		if pa.OwnPty {
			return allow(RuleOwnPty), ""
		}
		return deny(syscall.EACCES, RuleForeignPty, "a terminal the traced tree did not create (only its own ptys and tracecell's own terminal are writable)"), ""
	}
	if s, ok := p.scratchDir(res); ok {
		if d, ok := p.movesDenyRead(kind, res); ok {
			return d, ""
		}
		switch {
		case res != s && creates(kind, r, pa):
			// Only directly in the scratch dir or in a directory the
			// tree made: a directory of a host program (or of another
			// session) under it is that program's, and a symlink, FIFO
			// or file planted there is read by it (F6).
			if dir := path.Dir(res); dir != s && (l == nil || !l.Owned(dir)) {
				if l != nil && l.Replaced(dir) {
					return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("creates in %s, a directory the traced tree created that another process has since removed or moved and replaced by its own (scratch dir %s)", dir, s)), ""
				}
				return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("creates in %s, a directory the traced tree did not create (in scratch dir %s it may create entries only at the top or in its own directories)", dir, s)), ""
			}
			return allow(RuleScratchCreate), res
		case res != s && l != nil && l.Owned(res):
			// Renaming its own directory moves everything in it: not
			// when another process has put entries of its own there.
			if kind == syscalls.KindRename && pa.IsDir {
				if f := l.Foreign(res); f != "" {
					return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("renames %s, a directory the traced tree created, which holds %s, an entry it did not create (another process's): the rename would move it", res, f)), ""
				}
			}
			return allow(RuleScratchOwned), ""
		case res == s:
			return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("the scratch dir %s itself may not be changed", s)), ""
		case l != nil && l.Replaced(res):
			return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("replaced by another process: the traced tree created an entry by this name, but another process removed or moved it and made its own here, which is not the tree's (scratch dir %s)", s)), ""
		}
		return deny(syscall.EACCES, RuleScratchNotOwned, fmt.Sprintf("not created by the traced tree (scratch dir %s is create-only; below a directory the tree created, only the entries it made itself are its own)", s)), ""
	}
	return deny(syscall.EACCES, RuleOutsideRoots, "outside writable roots ("+p.writeText+")"), ""
}

// deletedDir is the directory an unlinked file (pa.Deleted) was linked in
// last: the parent of its old name, the link text without " (deleted)".
// d_path builds that text from the dentry's parents (fs/d_path.c), and the
// tracer has checked that the directory is on the object's mount
// (pathres.checkDeleted); a memfd ("/memfd:x") or a text that is no clean
// absolute path has none ("").
func deletedDir(pa *Path) string {
	name := strings.TrimSuffix(pa.Resolved, " (deleted)")
	if !clean(name) || strings.HasPrefix(name, "/memfd:") {
		return ""
	}
	return path.Dir(name)
}

// deletedWritable decides a change to a file with no name (pa.Deleted).
// Its old name cannot be trusted (an entry of that name, or of the text
// "<name> (deleted)", is another file: F8), only its last directory:
// inside a writable root the file was the tree's to change by name, and so
// it stays; in a scratch dir only inside a directory the tree created (the
// ledger), never directly in the scratch dir, where every process puts its
// files. Everything else is denied and reported: nothing else tells whose
// the inode is.
//
// Reached through another process's /proc/<pid>/fd/N (pa.HeldOutside), it
// is that process's file, whatever directory it was in: a TemporaryFile a
// host process made in the writable root never had a name the tree could
// change (red team pass 3).
func (p *Policy) deletedWritable(kind syscalls.Kind, pa *Path, l Ledger) Decision {
	if pa.HeldOutside {
		return deny(syscall.EACCES, RuleDeletedFile, fmt.Sprintf("%s of %s, a file with no name any more held by a process outside the traced tree (reached through its /proc fd link): it is that process's", kind, pa.Resolved))
	}
	dir := deletedDir(pa)
	name := strings.TrimSuffix(pa.Resolved, " (deleted)")
	if dir != "" {
		if d, ok := p.denyRead(name); ok {
			return d
		}
		if !pa.DeletedWritable {
			// A read lease too: it stalls the owner's next open for
			// writing, and a lease is allowed only where a write is.
			return deny(syscall.EACCES, RuleDeletedFile, fmt.Sprintf("%s of %s, a file with no name any more, through a file descriptor not open for writing: a read-only fd (which the tree can get of any process's unlinked file) shows nothing about whose the file is", kind, pa.Resolved))
		}
		if _, ok := p.writeRoot(dir); ok && !Under(dir, "/proc") {
			return allow(RuleInsideRoot)
		}
		// In a scratch directory, even one the tree made, the name of
		// the last directory shows nothing either: a host process's file
		// in its own /dev/shm/d, unlinked with d, reads as
		// "/dev/shm/d/f (deleted)" after the tree made a d of its own
		// (red team, session 23).
	}
	return deny(syscall.EACCES, RuleDeletedFile, fmt.Sprintf("%s of %s, a file with no name any more (unlinked, O_TMPFILE or memfd): not in a writable root, so nothing shows it is the tree's", kind, pa.Resolved))
}

// copiesDenyRead denies the source of a create that copies a whole tree
// (a btrfs snapshot, the only create with a source) when a deny-read entry
// lies inside it: the copy of sbx/sub/.env at sbx/snap/.env would be
// readable.
func (p *Policy) copiesDenyRead(kind syscalls.Kind, r, res string) (Decision, bool) {
	if kind != syscalls.KindCreate || r != "source" {
		return Decision{}, false
	}
	for _, d := range p.deny {
		if Under(d.path, res) {
			return deny(syscall.EACCES, RuleDenyRead, fmt.Sprintf("copies %s, which holds deny-read %s", res, d)), true
		}
	}
	return Decision{}, false
}

// movesDenyRead denies a rename of a directory above a deny-read entry:
// renaming sbx/conf to sbx/c2 would make the denied sbx/conf/.env
// readable as sbx/c2/.env (and RENAME_EXCHANGE moves the target too).
func (p *Policy) movesDenyRead(kind syscalls.Kind, res string) (Decision, bool) {
	if kind != syscalls.KindRename {
		return Decision{}, false
	}
	for _, d := range p.deny {
		if d.path != res && Under(d.path, res) {
			return deny(syscall.EACCES, RuleDenyRead, fmt.Sprintf("moves %s, which holds deny-read %s", res, d)), true
		}
	}
	return Decision{}, false
}

// writeRoot is the outermost writable root res is under. Outermost, so that
// a root nested inside another root may itself be deleted (it is an
// ordinary directory of the outer sandbox).
func (p *Policy) writeRoot(res string) (string, bool) {
	best := ""
	for _, r := range p.cfg.WriteRoots {
		if Under(res, r) && (best == "" || len(r) < len(best)) {
			best = r
		}
	}
	return best, best != ""
}

func (p *Policy) device(res string) bool {
	for _, d := range p.cfg.Devices {
		if ok, _ := path.Match(d, res); ok {
			return true
		}
	}
	return false
}

func (p *Policy) scratchDir(res string) (string, bool) {
	for _, s := range p.cfg.Scratch {
		if Under(res, s) {
			return s, true
		}
	}
	return "", false
}

// denyRead is the deny-read entry res falls under. A writable root nested
// strictly inside a deny-read tree is carved out of it: the more specific
// grant wins (a session server denies its whole state directory and gives
// each session its own sandbox inside it). Deny-read entries inside a
// writable root still apply to it.
func (p *Policy) denyRead(res string) (Decision, bool) {
	for _, d := range p.deny {
		if Under(res, d.path) && !p.carvedOut(res, d) {
			return deny(syscall.EACCES, RuleDenyRead, "matches deny-read "+d.String()), true
		}
	}
	return Decision{}, false
}

// denyEntry is one deny-read path: an entry (of == path) or a view of the
// entry of through another mount.
type denyEntry struct {
	path, of string
	inside   bool // a view that shows only a directory inside of (View.Inside)
}

// String is the entry, and the view when it is one.
func (d denyEntry) String() string {
	if d.path == d.of {
		return d.path
	}
	return d.of + " (seen here through another mount of its file system, at " + d.path + ")"
}

// denyEntries lists the deny-read entries of cfg, then their views.
func denyEntries(cfg Config) []denyEntry {
	out := make([]denyEntry, 0, len(cfg.DenyRead)+len(cfg.DenyReadViews))
	for _, d := range cfg.DenyRead {
		out = append(out, denyEntry{path: d, of: d})
	}
	for _, v := range cfg.DenyReadViews {
		out = append(out, denyEntry{path: v.Path, of: v.Of, inside: v.Inside})
	}
	return out
}

// carvedOut reports whether res lies in a writable root that is strictly
// inside the deny-read tree d, or is a view of a directory strictly inside
// d's entry: a sandbox that is a bind mount of a directory of a denied tree
// (/work, a mount of /home/u/project, with /home denied) is the operator's
// more specific grant, as it is under the entry's own path. A root that is
// a view of the entry itself is not (round 58 of the red team: --write V
// with V a bind mount of the denied D read D's files), as a root equal to
// the entry is not.
func (p *Policy) carvedOut(res string, d denyEntry) bool {
	for _, r := range p.cfg.WriteRoots {
		if (r != d.path || d.inside) && Under(r, d.path) && Under(res, r) {
			return true
		}
	}
	return false
}

// procSecrets are the /proc/<pid> (and /proc/<pid>/task/<tid>) entries that
// hold what another program keeps to itself: its environment (API tokens),
// command line (passwords given as flags), memory and stack.
var procSecrets = map[string]string{
	"environ": "environment", "cmdline": "command line", "mem": "memory", "auxv": "auxiliary vector",
	"pagemap": "page map", "stack": "kernel stack", "syscall": "current system call",
	"maps": "memory map", "smaps": "memory map", "smaps_rollup": "memory map", "numa_maps": "memory map",
	"io": "I/O counters", "personality": "personality", "timerslack_ns": "timer slack",
}

// procSecretDirs are /proc/<pid> (and /proc/<pid>/task/<tid>) directories
// whose entries (and, for map_files, whose listing) tell what another
// program keeps to itself: map_files names every mapping's address range
// (the program's address-space layout, which ASLR keeps secret; kernel 3.3+,
// and its links are followed only with CAP_SYS_ADMIN, but its listing is
// readable to the same user), fdinfo/N the state of each open file: the
// position of a memfd or file (how much was written), the counter of an
// eventfd, the watches of an inotify fd, the flags (kernel 2.6.22+; more
// fields in later kernels). The fdinfo listing itself holds no more than
// /proc/<pid>/fd, which stays readable.
var procSecretDirs = map[string]struct {
	what    string
	listing bool // the directory itself is secret too
}{
	"map_files": {"memory map (map_files)", true},
	"fdinfo":    {"open file state (fdinfo)", false},
}

// procSecret reports whether res (under /proc/<pid>) is one of procSecrets,
// or lies in one of procSecretDirs.
func procSecret(res string) (string, bool) {
	rest, ok := strings.CutPrefix(res, "/proc/")
	if !ok {
		return "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) >= 4 && parts[1] == "task" {
		parts = parts[2:] // /proc/<pid>/task/<tid>/x reads as /proc/<tid>/x
	}
	switch {
	case len(parts) == 2:
		if d, ok := procSecretDirs[parts[1]]; ok && d.listing {
			return d.what, true
		}
		what, ok := procSecrets[parts[1]]
		return what, ok
	case len(parts) >= 3:
		if d, ok := procSecretDirs[parts[1]]; ok {
			return d.what, true
		}
	}
	return "", false
}

// procOwner names the process of a /proc/<pid>/... path for a reason.
func procOwner(res string) string {
	rest, _ := strings.CutPrefix(res, "/proc/")
	if i := strings.IndexByte(rest, '/'); i > 0 {
		rest = rest[:i]
	}
	if _, err := strconv.Atoi(rest); err == nil {
		return "pid " + rest
	}
	return "a process"
}

// fdOwner names the object special and where the link res leads to it
// for a reason: "pipe:[12] (fd 3 of pid 42)" for /proc/42/fd/3 or
// /proc/42/task/43/fd/3.
func fdOwner(res, special string) string {
	rest, _ := strings.CutPrefix(res, "/proc/")
	parts := strings.Split(rest, "/")
	if n := len(parts); n >= 3 && parts[n-2] == "fd" {
		if n >= 5 && parts[n-4] == "task" {
			// /proc/<pid>/task/<tid>/fd/N: the thread's table, which
			// may be its own (clone without CLONE_FILES).
			return fmt.Sprintf("%s (fd %s of thread %s of %s)", special, parts[n-1], parts[n-3], procOwner(res))
		}
		return fmt.Sprintf("%s (fd %s of %s)", special, parts[n-1], procOwner(res))
	}
	return fmt.Sprintf("%s (%s)", special, res)
}

func nameOf(op *Op) string {
	if op.Syscall != "" {
		return op.Syscall
	}
	return op.Kind.String()
}

// decideIoctl decides an ioctl command that is neither on the filter's
// allow-list (syscalls.IoctlAllowed: measured, only reads or acts on its
// own fd) nor decided by a rule of its own. Its effect is unknown, so it is
// taken to change what its fd points to, which any read-only open reaches
// (btrfs subvolume and FAT attribute commands ignore the fd's mode): it is
// allowed where the tree may write that (inside a writable root, an
// allowed device, its own pty or tracecell's terminal) and on the pipes,
// eventfds and other anonymous objects of the tree. Not on a socket, even
// its own: socket commands beyond the allow-list configure the network of
// the whole host (SIOCSIF*, SIOCADDRT: net/core/dev_ioctl.c) or a
// protocol's devices (Bluetooth's HCIDEVUP).
func (p *Policy) decideIoctl(op *Op, l Ledger) Decision {
	what := "ioctl " + op.Ioctl
	if op.Ioctl == "" {
		what = "an ioctl command"
	}
	if len(op.Paths) == 0 {
		return deny(syscall.EPERM, RuleIoctlNotAllowed, what+" without a file to decide on")
	}
	pa := &op.Paths[0]
	if pa.Special != "" {
		switch {
		case strings.HasPrefix(pa.Special, "socket:") && p.cfg.NetAdmin:
			return allow(RuleNetAdminKept)
		case strings.HasPrefix(pa.Special, "socket:"):
			return deny(syscall.EPERM, RuleIoctlNotAllowed, fmt.Sprintf("%s on %s: socket commands other than the queries tracecell allows reach the network configuration or devices of the whole host", what, pa.Special))
		case pa.SpecialInTree:
			return allow(RuleSpecialObject)
		}
		return deny(syscall.EPERM, RuleIoctlNotAllowed, fmt.Sprintf("%s on %s, which belongs to %s outside the traced tree", what, pa.Special, procOwner(pa.Resolved)))
	}
	d, _ := p.writable(syscalls.KindWrite, "path", pa, l)
	if d.Allow {
		return d
	}
	return deny(syscall.EPERM, RuleIoctlNotAllowed, fmt.Sprintf("%s on %s: a command not known to only read may change what its fd points to, and this is not writable (%s)", what, pa.Resolved, d.Reason))
}

// decideTarget: signals and process calls only within the traced tree.
func decideTarget(op *Op) Decision {
	if op.TargetInTree {
		return allow(RuleInTree)
	}
	if op.AsyncTTY {
		what := "a terminal"
		if len(op.Paths) > 0 && op.Paths[0].Resolved != "" {
			what = op.Paths[0].Resolved
		}
		return deny(syscall.EPERM, RuleOutsideTree, "signal-driven I/O on "+what+" would signal its foreground process group, which is not the traced tree's (only the tree's own ptys allow it)")
	}
	var who string
	switch pid := op.TargetPid; {
	case pid > 0:
		who = "pid " + strconv.Itoa(pid)
	case pid == -1:
		who = "pid -1 (every process)"
	case pid < -1:
		who = "process group " + strconv.Itoa(-pid)
	default:
		who = "the caller's process group"
	}
	return deny(syscall.EPERM, RuleOutsideTree, who+" is not in the traced tree")
}
