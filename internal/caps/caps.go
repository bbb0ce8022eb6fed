// Package caps names Linux capabilities and works out which of tracecell's
// own capabilities a traced tree gives up.
//
// tracecell checks file-system writes, execs, the network and signals; it
// does not check the many privileged calls a root process can make besides
// (a netlink request that adds a route, BLKPG on a disk it may open for
// reading, raising its own hard rlimits past --memory, reading another
// root process's memory through /proc). When tracecell runs with
// capabilities (as root, or with file or ambient capabilities), the tree
// keeps only a short list that file work under a path policy needs
// (DefaultKeep); everything else is dropped from its permitted, effective,
// inheritable and ambient sets and, for a root tree, from its bounding set,
// so that no exec brings it back.
package caps

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Set is a set of capabilities, bit N for capability N (linux/capability.h).
type Set uint64

// names are the capabilities by number, as in linux/capability.h without
// the CAP_ prefix. Capabilities a kernel does not know are skipped when
// dropping.
var names = [...]string{
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill",
	"setgid", "setuid", "setpcap", "linux_immutable", "net_bind_service",
	"net_broadcast", "net_admin", "net_raw", "ipc_lock", "ipc_owner",
	"sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
	"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time",
	"sys_tty_config", "mknod", "lease", "audit_write", "audit_control",
	"setfcap", "mac_override", "mac_admin", "syslog", "wake_alarm",
	"block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
}

// Capability numbers used here.
const (
	Chown          = 0
	DacOverride    = 1
	DacReadSearch  = 2
	Fowner         = 3
	Fsetid         = 4
	Kill           = 5
	Setgid         = 6
	Setuid         = 7
	Setpcap        = 8
	NetBindService = 10
	NetAdmin       = 12
	NetRaw         = 13
	SysAdmin       = 21
	SysResource    = 24
)

// All is every capability this package names.
const All = Set(1)<<len(names) - 1

// DefaultKeep is what a tree keeps: the file-access capabilities (a root
// tree still reads and, inside the writable roots, writes files of any
// owner; the path policy decides where), ownership and mode changes (also
// path-checked), signals (checked against the tree) and binding ports
// below 1024 (binds are checked by the network policy). Not uid and gid
// changes (setuid, setgid): as another user a root tree read that user's
// processes' environment through /proc, which the dropped sys_ptrace keeps
// from root (red team, session 23).
const DefaultKeep = Set(1)<<Chown | 1<<DacOverride | 1<<DacReadSearch | 1<<Fowner |
	1<<Fsetid | 1<<Kill | 1<<NetBindService

// Has reports whether c is in s.
func (s Set) Has(c int) bool { return c >= 0 && c < 64 && s&(1<<uint(c)) != 0 }

// Names lists the capabilities in s by number, as "net_admin"; a number
// this package does not name appears as "cap_41".
func (s Set) Names() []string {
	out := []string{}
	for c := 0; c < 64; c++ {
		if s.Has(c) {
			out = append(out, Name(c))
		}
	}
	return out
}

// String is the comma-separated Names, "none" for an empty set.
func (s Set) String() string {
	if s == 0 {
		return "none"
	}
	return strings.Join(s.Names(), ",")
}

// MarshalText writes the String form.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Name is capability c's name without the CAP_ prefix, in lower case.
func Name(c int) string {
	if c >= 0 && c < len(names) {
		return names[c]
	}
	return "cap_" + strconv.Itoa(c)
}

// Parse reads capability names: "net_raw", "CAP_NET_RAW", "cap_net_raw"
// (any case), "all" for every capability or "none". The error names the
// value it could not read.
func Parse(list []string) (Set, error) {
	var s Set
	for _, v := range list {
		n := strings.ToLower(strings.TrimSpace(v))
		switch n {
		case "all":
			s |= All
			continue
		case "none":
			continue
		}
		n = strings.TrimPrefix(n, "cap_")
		c := -1
		for i, name := range names {
			if name == n {
				c = i
				break
			}
		}
		if c < 0 {
			return 0, fmt.Errorf("unknown capability %q: want a name such as net_raw or CAP_NET_RAW, or all", v)
		}
		s |= 1 << uint(c)
	}
	return s, nil
}

// State is a process's capabilities.
type State struct {
	Effective, Permitted, Inheritable Set
	// Bounding is read only when Root is set: it limits what an exec can
	// give a root process.
	Bounding Set
	// Root is set when the real or effective uid is 0: an exec then gives
	// the program every capability of the bounding set (unless
	// SECBIT_NOROOT, which tracecell does not rely on).
	Root bool
	// Last is the highest capability the kernel knows.
	Last int
}

// Current reads the calling thread's capabilities (the same in every
// thread of tracecell: nothing changes them after start).
func Current() (State, error) {
	var st State
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return st, os.NewSyscallError("capget", err)
	}
	st.Effective = Set(data[0].Effective) | Set(data[1].Effective)<<32
	st.Permitted = Set(data[0].Permitted) | Set(data[1].Permitted)<<32
	st.Inheritable = Set(data[0].Inheritable) | Set(data[1].Inheritable)<<32
	st.Last = len(names) - 1
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 && n < 64 {
			st.Last = n
		}
	}
	st.Root = unix.Getuid() == 0 || unix.Geteuid() == 0
	if st.Root {
		for c := 0; c <= st.Last; c++ {
			r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
			if err == nil && r == 1 {
				st.Bounding |= 1 << uint(c)
			}
		}
	}
	return st, nil
}

// Drop is what a tree started by a process in State st must give up to
// keep no more than keep.
type Drop struct {
	// Bounding are the capabilities to drop from the bounding set
	// (PR_CAPBSET_DROP, which needs CAP_SETPCAP): only for a root tree.
	Bounding Set
	// Effective, Permitted, Inheritable are the sets to install with
	// capset; the kernel lowers the ambient set with them (only what is
	// both permitted and inheritable stays ambient).
	Effective, Permitted, Inheritable Set
	// RaiseSetpcap is set when CAP_SETPCAP is permitted but not effective:
	// the child first installs Raise, which makes it effective, then drops
	// the bounding set.
	RaiseSetpcap bool
	Raise        [2]unix.CapUserData
	// NoSetpcap is set when the bounding set must shrink but CAP_SETPCAP
	// is not even permitted: the drop cannot be done, and the tree must
	// not start.
	NoSetpcap bool
	// Dropped is everything the tree loses that tracecell has, for the
	// report: the union of the above.
	Dropped Set
	// Kept is what the tree's programs still have: the permitted set and,
	// for a root tree, what an exec gives it from the bounding set.
	Kept Set
}

// Needed reports whether anything is to be dropped.
func (d Drop) Needed() bool { return d.Dropped != 0 }

// Plan works out the drop for a tree that keeps keep.
func (st State) Plan(keep Set) Drop {
	known := Set(1)<<uint(st.Last+1) - 1
	if st.Last >= 63 {
		known = ^Set(0)
	}
	d := Drop{
		Effective:   st.Effective & keep,
		Permitted:   st.Permitted & keep,
		Inheritable: st.Inheritable & keep,
	}
	d.Kept = st.Permitted & keep
	if st.Root {
		d.Bounding = st.Bounding &^ keep & known
		d.Kept |= st.Bounding & keep
	}
	d.Dropped = (st.Permitted | st.Effective | st.Inheritable | d.Bounding) &^ keep
	if d.Bounding != 0 && !st.Effective.Has(Setpcap) {
		d.RaiseSetpcap = st.Permitted.Has(Setpcap)
		d.NoSetpcap = !d.RaiseSetpcap
		d.Raise = data(st.Effective|1<<Setpcap, st.Permitted, st.Inheritable)
	}
	return d
}

// Data is the final sets in capset's two-word form.
func (d Drop) Data() [2]unix.CapUserData { return data(d.Effective, d.Permitted, d.Inheritable) }

func data(e, p, i Set) [2]unix.CapUserData {
	return [2]unix.CapUserData{
		{Effective: uint32(e), Permitted: uint32(p), Inheritable: uint32(i)},
		{Effective: uint32(e >> 32), Permitted: uint32(p >> 32), Inheritable: uint32(i >> 32)},
	}
}
