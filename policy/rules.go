package policy

// Rule is the short stable id of the rule that decided a call, e.g.
// "outside-writable-roots". It is part of the report, trace, worker and
// API format (a JSON string): do not rename one. Every id tracecell reports
// is a constant below and has an entry in Rules; code names rules only by
// these constants.
type Rule string

// String is the id itself.
func (r Rule) String() string { return string(r) }

// Denials (Decision.Allow false, or recorded as "audit" in audit mode).
const (
	RuleOutsideRoots    Rule = "outside-writable-roots"
	RuleRootItself      Rule = "writable-root-itself"
	RuleScratchNotOwned Rule = "scratch-not-owned"
	RuleForeignPty      Rule = "foreign-pty"
	RuleProcWrite       Rule = "proc-write"
	RuleProcRead        Rule = "proc-read"
	// RulePathPage denies memory calls on tracecell's path page (decided
	// by the tracer, never by Decide).
	RulePathPage         Rule = "path-page"
	RuleDenyRead         Rule = "deny-read"
	RuleReadNotAllowed   Rule = "read-not-allowed"
	RuleExecNotAllowed   Rule = "exec-not-allowed"
	RuleUnixAbstract     Rule = "unix-abstract"
	RuleUnixOutsideRoots Rule = "unix-socket-outside-roots"
	RuleNetDeny          Rule = "net-deny"
	RuleNetLoopback      Rule = "net-loopback"
	RuleNetFamily        Rule = "net-family"
	// RuleKernelRewritten denies a call whose checked memory the kernel
	// itself overwrites, in the same call, before it reads it (sendmmsg),
	// or that the exit of a task killed during the freeze could write
	// after the check where no copy can be made (copy and freeze).
	RuleKernelRewritten Rule = "kernel-rewritten-input"
	// RuleForeignABI: a system call of another ABI (int 0x80, x32) killed
	// its process (decided by the filter and the tracer, never by Decide).
	RuleForeignABI       Rule = "foreign-abi"
	RuleUnreachable      Rule = "never-reachable"
	RuleOutsideTree      Rule = "outside-tree"
	RuleForbiddenSyscall Rule = "forbidden-syscall"
	RuleUnresolvedPath   Rule = "unresolved-path"
	RuleUnknownKind      Rule = "unknown-kind"
	RuleNoPath           Rule = "no-path"
	// RuleIoctlNotAllowed denies an ioctl command that is not known to
	// only read or to act on its own fd alone, made on an fd the tree may
	// not write (issue 16).
	RuleIoctlNotAllowed Rule = "ioctl-not-allowed"
	// RuleFutexMemory denies a shared futex operation on a word in memory
	// the tree may not write (a read-only mapping of a host file).
	RuleFutexMemory Rule = "futex-memory"
	// RuleSetID denies setting S_ISUID or S_ISGID (chmod, O_CREAT, mknod).
	RuleSetID Rule = "set-id-bits"
	// RuleDeletedFile denies changing a file that has no name any more
	// (reached through /proc/<pid>/fd/N or an fd) where its last directory
	// does not make it the tree's: outside the writable roots, or in a
	// scratch dir in a directory the tree did not create.
	RuleDeletedFile Rule = "deleted-file"
	// RuleFileCaps denies setting file capabilities (security.capability).
	RuleFileCaps Rule = "file-capabilities"
	// RuleUnresolvablePath: the tracer could not check the call (a path
	// it could not resolve, memory it could not read) and failed closed
	// (decided by the tracer, never by Decide; the reason is FailClosed).
	RuleUnresolvablePath Rule = "unresolvable-path"
	// RuleMaxProcs refuses a fork past the operator's process limit with
	// EAGAIN (decided by the tracer, never by Decide).
	RuleMaxProcs Rule = "max-procs"
	// RuleScratchFull refuses a create in a scratch directory once the
	// tracer keeps as many of the tree's scratch entries as it may, with
	// ENOSPC (decided by the tracer, never by Decide).
	RuleScratchFull Rule = "scratch-full"
	// RuleExecMismatch: the program an execve loaded is not the one that
	// was checked; the process is killed (decided by the tracer).
	RuleExecMismatch Rule = "exec-mismatch"
	// RuleServerState denies a session's file request inside the server's
	// state directory (decided by the server, never by Decide).
	RuleServerState Rule = "server-state"
)

// Allows (Decision.Allow true), for --trace.
const (
	RuleInsideRoot    Rule = "inside-writable-root"
	RuleDevice        Rule = "device"
	RuleScratchCreate Rule = "scratch-create"
	RuleScratchOwned  Rule = "scratch-owned"
	RuleOwnPty        Rule = "own-pty"
	RuleSpecialObject Rule = "special-object"
	// RuleNetAdminKept allows a socket ioctl off the allow-list where the
	// operator kept CAP_NET_ADMIN for the tree (Config.NetAdmin).
	RuleNetAdminKept Rule = "net-admin-kept"
	RuleRead         Rule = "read"
	RuleInitialExec  Rule = "initial-exec"
	RuleAllowExec    Rule = "allow-exec"
	RuleNetAllow     Rule = "net-allow"
	RuleLoopback     Rule = "loopback"
	RuleNetlink      Rule = "netlink"
	RuleUnspec       Rule = "unspec"
	RuleUnixInRoots  Rule = "unix-socket-in-roots"
	RuleUnixAutobind Rule = "unix-autobind"
	RuleInTree       Rule = "in-tree"
	// RuleLifecycle marks the trace's process events, which are no checked
	// call: "fork", "vfork" and "clone" (a new process) and "exit". Their
	// decision is allow and they are not counted (report.Event).
	RuleLifecycle Rule = "lifecycle"
)

// RuleInfo is one entry of the rule catalogue.
type RuleInfo struct {
	// Rule is the id.
	Rule Rule `json:"rule"`
	// Deny is true for a rule that refuses a call (or, in audit mode,
	// reports one that enforce mode would refuse), false for one that
	// allows it.
	Deny bool `json:"deny"`
	// Meaning says in one line what the rule covers.
	Meaning string `json:"meaning"`
}

// rules is the catalogue, denials first, in the order of the constants.
var rules = []RuleInfo{
	{RuleOutsideRoots, true, "a write, create, delete, rename, link, chmod, chown or xattr change outside the writable roots"},
	{RuleRootItself, true, "deleting, renaming or changing a writable root itself"},
	{RuleScratchNotOwned, true, "changing an entry of a scratch dir that the traced tree did not create"},
	{RuleForeignPty, true, "writing a pseudo-terminal that is not the tree's own (another terminal of the user)"},
	{RuleProcWrite, true, "a write through /proc, to the /proc entries of a process outside the tree, or a reopen for writing through an fd not open for writing"},
	{RuleProcRead, true, "reading the /proc entries, fds or memory of a process outside the tree"},
	{RulePathPage, true, "a memory call that would unmap or change tracecell's path page"},
	{RuleDenyRead, true, "reading a path the operator made unreadable (--deny-read)"},
	{RuleReadNotAllowed, true, "reading a path outside the readable directories the operator gave (--read)"},
	{RuleExecNotAllowed, true, "running a program: exec is not allowed (or not of this program)"},
	{RuleUnixAbstract, true, "an abstract unix socket, which --net does not allow"},
	{RuleUnixOutsideRoots, true, "a unix socket path outside the writable roots"},
	{RuleNetDeny, true, "a network connection, bind or send while the network is off (--net deny)"},
	{RuleNetLoopback, true, "a network address other than this machine's loopback under --net loopback"},
	{RuleNetFamily, true, "a socket family the network mode does not allow"},
	{RuleKernelRewritten, true, "a call whose checked memory the kernel overwrites before it reads it (sendmmsg), or that a killed task's exit could write after the check where no copy can be made (Copy and freeze)"},
	{RuleForeignABI, true, "a system call of another ABI (int 0x80, x32): the process is killed"},
	{RuleUnreachable, true, "an address never reachable whatever the network mode (a socket of the program that runs the sandbox)"},
	{RuleOutsideTree, true, "a signal or process call on a process outside the traced tree"},
	{RuleForbiddenSyscall, true, "a system call that is never allowed in the sandbox"},
	{RuleUnresolvedPath, true, "a path the policy was given unresolved"},
	{RuleUnknownKind, true, "an operation of a kind the policy does not classify"},
	{RuleNoPath, true, "a file-system change without a path"},
	{RuleIoctlNotAllowed, true, "an ioctl command off the allow-list on an fd the tree may not write"},
	{RuleFutexMemory, true, "a shared futex on memory the tree may not write (a read-only mapping of a host file)"},
	{RuleSetID, true, "setting the set-user-ID or set-group-ID bit"},
	{RuleDeletedFile, true, "changing a deleted file whose last directory does not make it the tree's"},
	{RuleFileCaps, true, "setting file capabilities (security.capability)"},
	{RuleUnresolvablePath, true, "a call tracecell could not check (a path or memory it could not read): failed closed"},
	{RuleMaxProcs, true, "a fork past the process limit (--max-procs): fails with EAGAIN"},
	{RuleScratchFull, true, "a create in a scratch directory past the entries tracecell keeps for the tree (100000, or 16 MiB of names): fails with ENOSPC"},
	{RuleExecMismatch, true, "an execve that loaded another program than the one checked: the process is killed"},
	{RuleServerState, true, "a session's file request inside the server's state directory"},
	{RuleInsideRoot, false, "a change inside a writable root"},
	{RuleDevice, false, "writing an allowed device file (/dev/null, --allow-device)"},
	{RuleScratchCreate, false, "creating an entry in a scratch dir"},
	{RuleScratchOwned, false, "changing a scratch dir entry the traced tree created"},
	{RuleOwnPty, false, "writing a pseudo-terminal that is the tree's own"},
	{RuleSpecialObject, false, "a pipe, socket or anonymous file the tree holds (no path to protect), reopened for writing only through an fd open for writing"},
	{RuleNetAdminKept, false, "a socket ioctl off the allow-list where the operator kept CAP_NET_ADMIN"},
	{RuleRead, false, "a read the policy allows"},
	{RuleInitialExec, false, "the command tracecell was asked to run"},
	{RuleAllowExec, false, "running a program the operator allowed (--allow-exec)"},
	{RuleNetAllow, false, "a network call under --net allow"},
	{RuleLoopback, false, "a loopback address under --net loopback"},
	{RuleNetlink, false, "a netlink socket (the kernel's own, not the network)"},
	{RuleUnspec, false, "an AF_UNSPEC address (dissolving a socket's association)"},
	{RuleUnixInRoots, false, "a unix socket path inside the writable roots"},
	{RuleUnixAutobind, false, "a unix socket bound to a kernel-chosen abstract name"},
	{RuleInTree, false, "a signal or process call on a process of the traced tree"},
	{RuleLifecycle, false, "a process event of the trace (fork, vfork, clone, exit), not a checked call"},
}

// Rules is the catalogue: every rule id tracecell reports, with its
// meaning. The slice is a copy.
func Rules() []RuleInfo { return append([]RuleInfo(nil), rules...) }

// Known reports whether r is in the catalogue.
func (r Rule) Known() bool {
	for _, i := range rules {
		if i.Rule == r {
			return true
		}
	}
	return false
}
