package policy

import (
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/syscalls"
)

// ledger is the test's Ledger, exact as the tracer's is: true for an entry
// the tree created that still holds its object, false for one the tree
// created that another process has replaced (and, below a directory, an
// entry that is not the tree's: Foreign).
type ledger map[string]bool

func (l ledger) Owned(p string) bool { return l[p] }

func (l ledger) Replaced(p string) bool {
	v, ok := l[p]
	return ok && !v
}

func (l ledger) Foreign(p string) string {
	var out []string
	for q, v := range l {
		if !v && strings.HasPrefix(q, p+"/") {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return out[0]
}

// owned: the tree's entries; /dev/shm/reused is a name of the tree's that
// a host process has taken over (F4a); /dev/shm/mydir/sub/hostfile is a
// host's file in a directory of the tree's (F4b).
var owned = ledger{"/dev/shm/spoof (deleted)": true, "/dev/shm/mine": true, "/dev/shm/mydir": true, "/dev/shm/mine.sock": true,
	"/dev/shm/mydir/x": true, "/dev/shm/mydir/sub": true, "/dev/shm/mydir/sub/hostfile": false, "/dev/shm/reused": false, "/dev/shm/reuseddir": false}

func baseConfig() Config {
	return Config{
		WriteRoots: []string{"/srv/sbx", "/work/b"},
		DenyRead:   []string{"/srv/sbx/.secret", "/etc/shadow"},
		Devices:    DefaultDevices(),
		Scratch:    DefaultScratch(),
		AllowExec:  []string{"/usr/bin/git"},
	}
}

func mustNew(t testing.TB, c Config) *Policy {
	t.Helper()
	p, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

var fsKinds = []syscalls.Kind{
	syscalls.KindWrite, syscalls.KindCreate, syscalls.KindDelete, syscalls.KindRename,
	syscalls.KindLink, syscalls.KindChmod, syscalls.KindChown, syscalls.KindXattr,
	// A lease changes nothing but is decided like a write (ChecksAsWrite).
	syscalls.KindLease,
}

var modes = []Mode{Enforce, Audit}

// form is one kind of resolved path with the rule expected for each kind of
// modifying operation: by["kind/role"], else by["kind"], else def.
type form struct {
	name string
	p    Path
	def  Rule
	by   map[string]Rule
}

func (f form) want(k syscalls.Kind, role string) Rule {
	if r, ok := f.by[k.String()+"/"+role]; ok {
		return r
	}
	if r, ok := f.by[k.String()]; ok {
		return r
	}
	return f.def
}

func ex(p string) Path   { return Path{Resolved: p, Exists: true} }
func newp(p string) Path { return Path{Resolved: p} }

// deleted is a file with no name whose old name was p (pathres Deleted).
// deleted is a file with no name reached through a write-mode fd of the
// tree; deletedRO through a read-only one.
func deleted(p string) Path {
	return Path{Resolved: p + " (deleted)", Deleted: true, DeletedWritable: true}
}
func deletedRO(p string) Path { return Path{Resolved: p + " (deleted)", Deleted: true} }
func dir(p string) Path       { return Path{Resolved: p, Exists: true, IsDir: true} }
func special(pid int, obj string, inTree, writable bool) Path {
	return Path{Resolved: fmt.Sprintf("/proc/%d/fd/1", pid), Exists: true, Special: obj, SpecialInTree: inTree, SpecialWritable: writable}
}

var rootItself = map[string]Rule{"write": RuleInsideRoot, "create": RuleInsideRoot, "link": RuleInsideRoot, "lease": RuleInsideRoot}
var writeOnly = func(rule Rule) map[string]Rule { return map[string]Rule{"write": rule} }
var scratchNew = map[string]Rule{"create": RuleScratchCreate, "rename/target": RuleScratchCreate, "link/target": RuleScratchCreate}

var forms = []form{
	{name: "inside existing", p: ex("/srv/sbx/a.txt"), def: RuleInsideRoot},
	{name: "inside new deep", p: newp("/srv/sbx/new/deep"), def: RuleInsideRoot},
	{name: "inside dir", p: dir("/srv/sbx/sub"), def: RuleInsideRoot},
	{name: "second root inside", p: ex("/work/b/x"), def: RuleInsideRoot},
	{name: "root itself", p: dir("/srv/sbx"), def: RuleRootItself, by: rootItself},
	{name: "second root itself", p: dir("/work/b"), def: RuleRootItself, by: rootItself},
	{name: "sibling prefix inside", p: ex("/srv/sbx2/a"), def: RuleOutsideRoots},
	{name: "sibling prefix", p: dir("/srv/sbx2"), def: RuleOutsideRoots},
	{name: "sibling prefix dot", p: newp("/srv/sbx.old"), def: RuleOutsideRoots},
	{name: "parent", p: dir("/srv"), def: RuleOutsideRoots},
	{name: "slash", p: dir("/"), def: RuleOutsideRoots},
	{name: "outside", p: ex("/etc/hosts"), def: RuleOutsideRoots},
	{name: "outside new", p: newp("/tmp/x"), def: RuleOutsideRoots},
	{name: "deny-read outside", p: ex("/etc/shadow"), def: RuleDenyRead},
	{name: "deny-read inside root", p: ex("/srv/sbx/.secret/key"), def: RuleDenyRead},
	{name: "deny-read dir itself", p: dir("/srv/sbx/.secret"), def: RuleDenyRead},
	{name: "deny-read new inside", p: newp("/srv/sbx/.secret/new"), def: RuleDenyRead},
	{name: "deny-read prefix sibling", p: ex("/srv/sbx/.secretive"), def: RuleInsideRoot},
	{name: "proc mem", p: ex("/proc/123/mem"), def: RuleProcWrite},
	{name: "proc attr", p: ex("/proc/456/attr/current"), def: RuleProcWrite},
	{name: "proc itself", p: dir("/proc"), def: RuleProcWrite},
	{name: "proc sysctl", p: ex("/proc/sys/kernel/core_pattern"), def: RuleProcWrite},
	{name: "proc fd link not followed", p: ex("/proc/77/fd/3"), def: RuleProcWrite},
	{name: "procfs lookalike", p: ex("/procfs/x"), def: RuleOutsideRoots},
	{name: "device null", p: ex("/dev/null"), def: RuleOutsideRoots, by: writeOnly(RuleDevice)},
	{name: "device urandom", p: ex("/dev/urandom"), def: RuleOutsideRoots, by: writeOnly(RuleDevice)},
	// Another session's terminal; the tree's own pty (the tracer's fact);
	// devpts's multiplexer, a twin of /dev/ptmx.
	{name: "device pts foreign", p: ex("/dev/pts/3"), def: RuleOutsideRoots, by: writeOnly(RuleForeignPty)},
	{name: "device pts missing", p: newp("/dev/pts/99"), def: RuleOutsideRoots, by: writeOnly(RuleForeignPty)},
	{name: "device pts own", p: Path{Resolved: "/dev/pts/4", Exists: true, OwnPty: true}, def: RuleOutsideRoots, by: writeOnly(RuleOwnPty)},
	{name: "device pts ptmx", p: ex("/dev/pts/ptmx"), def: RuleOutsideRoots, by: writeOnly(RuleDevice)},
	{name: "device pts nested", p: ex("/dev/pts/3/x"), def: RuleOutsideRoots},
	{name: "device pts nested own", p: Path{Resolved: "/dev/pts/3/x", Exists: true, OwnPty: true}, def: RuleOutsideRoots},
	{name: "device pts dir", p: dir("/dev/pts"), def: RuleOutsideRoots},
	{name: "own pty fact off /dev/pts", p: Path{Resolved: "/etc/hosts", Exists: true, OwnPty: true}, def: RuleOutsideRoots},
	{name: "device pts lookalike", p: ex("/dev/ptsx/3"), def: RuleOutsideRoots},
	{name: "device disk", p: ex("/dev/sda"), def: RuleOutsideRoots},
	{name: "device mem", p: ex("/dev/mem"), def: RuleOutsideRoots},
	{name: "scratch new", p: newp("/dev/shm/new"), def: RuleScratchNotOwned, by: scratchNew},
	// A directory of a host program (or another session) in the scratch
	// dir: nothing may be planted in it (F6).
	{name: "scratch new deep", p: newp("/dev/shm/hostdir/new"), def: RuleScratchNotOwned},
	{name: "scratch new deeper in own dir", p: newp("/dev/shm/mydir/sub/new"), def: RuleScratchNotOwned, by: scratchNew},
	// Files with no name (F8): decided by their last directory, never by
	// the text, which the tree may own ("/dev/shm/spoof (deleted)").
	{name: "deleted in root", p: deleted("/srv/sbx/gone"), def: RuleInsideRoot},
	// Held by a process outside the tree (its /proc/<pid>/fd link): that
	// process's file, even in the writable root (red team pass 3).
	{name: "deleted in root held outside", p: func() Path { p := deleted("/srv/sbx/tmpfile"); p.HeldOutside = true; return p }(), def: RuleDeletedFile},
	{name: "deleted deny-read in root", p: deleted("/srv/sbx/.secret/key"), def: RuleDenyRead},
	{name: "deleted outside", p: deleted("/etc/hosts"), def: RuleDeletedFile},
	{name: "deleted scratch top", p: deleted("/dev/shm/hostfile"), def: RuleDeletedFile},
	{name: "deleted scratch spoofed text", p: deleted("/dev/shm/spoof"), def: RuleDeletedFile},
	{name: "deleted scratch owned name", p: deleted("/dev/shm/mine"), def: RuleDeletedFile},
	{name: "deleted scratch own dir: the name shows nothing", p: deleted("/dev/shm/mydir/x"), def: RuleDeletedFile},
	// Through a read-only fd: a host process's unlinked file the tree
	// opened read-only (red team, session 23).
	{name: "deleted in root, read-only fd", p: deletedRO("/srv/sbx/gone"), def: RuleDeletedFile},
	{name: "deleted scratch host dir", p: deleted("/dev/shm/hostdir/x"), def: RuleDeletedFile},
	{name: "deleted memfd", p: deleted("/memfd:x"), def: RuleDeletedFile},
	{name: "deleted proc", p: deleted("/proc/1/x"), def: RuleDeletedFile},
	{name: "scratch existing not owned", p: ex("/dev/shm/hostfile"), def: RuleScratchNotOwned},
	{name: "scratch owned", p: ex("/dev/shm/mine"), def: RuleScratchOwned},
	{name: "scratch owned dir child", p: ex("/dev/shm/mydir/x"), def: RuleScratchOwned},
	// A name below the tree's directory that it did not make: not its own,
	// though it may create it.
	{name: "scratch owned dir new child", p: newp("/dev/shm/mydir/new"), def: RuleScratchNotOwned, by: scratchNew},
	// A host's file in the tree's directory (F4b): not the tree's.
	{name: "scratch host file in own dir", p: ex("/dev/shm/mydir/hostfile"), def: RuleScratchNotOwned},
	{name: "scratch host file in own subdir", p: ex("/dev/shm/mydir/sub/hostfile"), def: RuleScratchNotOwned},
	// The tree's names, taken over by a host process (F4a).
	{name: "scratch replaced", p: ex("/dev/shm/reused"), def: RuleScratchNotOwned},
	{name: "scratch new in replaced dir", p: newp("/dev/shm/reuseddir/new"), def: RuleScratchNotOwned},
	{name: "scratch in replaced dir", p: ex("/dev/shm/reuseddir/hostfile"), def: RuleScratchNotOwned},
	{name: "scratch owned prefix sibling", p: ex("/dev/shm/mine2"), def: RuleScratchNotOwned},
	{name: "scratch dir itself", p: dir("/dev/shm"), def: RuleScratchNotOwned},
	{name: "scratch lookalike", p: newp("/dev/shmx/a"), def: RuleOutsideRoots},
	{name: "special pipe in tree", p: special(77, "pipe:[5]", true, true), def: RuleProcWrite, by: writeOnly(RuleSpecialObject)},
	{name: "special socket in tree", p: special(77, "socket:[9]", true, true), def: RuleProcWrite, by: writeOnly(RuleSpecialObject)},
	{name: "special pipe in tree read-only fd", p: special(77, "pipe:[5]", true, false), def: RuleProcWrite},
	{name: "special pipe outside tree", p: special(1, "pipe:[5]", false, false), def: RuleProcWrite},
	{name: "unclean", p: ex("/srv/sbx/../etc/passwd"), def: RuleUnresolvedPath},
	{name: "trailing slash", p: dir("/srv/sbx/"), def: RuleUnresolvedPath},
	{name: "relative", p: ex("a.txt"), def: RuleUnresolvedPath},
	{name: "empty", p: newp(""), def: RuleUnresolvedPath},
	{name: "deleted inside root", p: newp("/srv/sbx/x (deleted)"), def: RuleInsideRoot},
	{name: "memfd", p: newp("/memfd:foo (deleted)"), def: RuleOutsideRoots},
	{name: "invalid utf8 inside", p: ex("/srv/sbx/\xff\xfe"), def: RuleInsideRoot},
	{name: "invalid utf8 outside", p: ex("/srv/\xff"), def: RuleOutsideRoots},
}

var allowRules = map[Rule]bool{
	RuleInsideRoot: true, RuleDevice: true, RuleOwnPty: true, RuleScratchCreate: true, RuleScratchOwned: true,
	RuleSpecialObject: true, RuleRead: true, RuleInitialExec: true, RuleAllowExec: true,
	RuleNetAllow: true, RuleLoopback: true, RuleNetlink: true, RuleUnspec: true,
	RuleUnixInRoots: true, RuleUnixAutobind: true, RuleInTree: true,
}

// check compares a decision with the expected rule, the errno that goes
// with it and the scratch paths.
func check(t *testing.T, d Decision, rule Rule, errno syscall.Errno, scratch []string) {
	t.Helper()
	if d.Rule != rule {
		t.Fatalf("rule = %q (allow %v, reason %q), want %q", d.Rule, d.Allow, d.Reason, rule)
	}
	if d.Allow != allowRules[rule] {
		t.Fatalf("allow = %v for rule %q", d.Allow, rule)
	}
	if d.Allow {
		if d.Errno != 0 || d.Reason != "" {
			t.Fatalf("allowed with errno %v reason %q", d.Errno, d.Reason)
		}
	} else {
		if d.Errno != errno {
			t.Fatalf("errno = %v, want %v", d.Errno, errno)
		}
		if d.Reason == "" || strings.ToLower(d.Reason[:1]) != d.Reason[:1] {
			t.Fatalf("reason %q: want short lower-case text", d.Reason)
		}
	}
	if !slices.Equal(d.Scratch, scratch) {
		t.Fatalf("scratch = %q, want %q", d.Scratch, scratch)
	}
}

// TestDecideFSForms runs every path form through every modifying kind, in
// both modes; rename and link with the form as source and as target.
func TestDecideFSForms(t *testing.T) {
	partner := ex("/srv/sbx/partner")
	n := 0
	for _, mode := range modes {
		c := baseConfig()
		c.Mode = mode
		p := mustNew(t, c)
		for _, f := range forms {
			for _, k := range fsKinds {
				roles := []string{"path"}
				if k == syscalls.KindRename || k == syscalls.KindLink {
					roles = []string{"source", "target"}
				}
				for _, role := range roles {
					n++
					t.Run(fmt.Sprintf("%v/%s/%v/%s", mode, f.name, k, role), func(t *testing.T) {
						op := &Op{Kind: k, Syscall: "test", Paths: []Path{f.p}}
						switch role {
						case "source":
							op.Paths = []Path{f.p, partner}
						case "target":
							op.Paths = []Path{partner, f.p}
						}
						want := f.want(k, role)
						var scratch []string
						if want == RuleScratchCreate {
							scratch = []string{f.p.Resolved}
						}
						d := p.Decide(op, owned)
						check(t, d, want, syscall.EACCES, scratch)
						if role != "path" && !d.Allow && !strings.HasPrefix(d.Reason, role+" ") {
							t.Fatalf("reason %q does not name the %s", d.Reason, role)
						}
					})
				}
			}
		}
	}
	t.Logf("%d cases", n)
}

func TestDecideFSReasons(t *testing.T) {
	p := mustNew(t, baseConfig())
	none := mustNew(t, Config{Devices: DefaultDevices()})
	cases := []struct {
		name   string
		p      *Policy
		op     Op
		reason string
	}{
		{"outside", p, Op{Kind: syscalls.KindWrite, Paths: []Path{ex("/etc/hosts")}}, "outside writable roots (/srv/sbx, /work/b)"},
		{"no roots", none, Op{Kind: syscalls.KindCreate, Paths: []Path{newp("/tmp/x")}}, "outside writable roots (none)"},
		{"link source", p, Op{Kind: syscalls.KindLink, Paths: []Path{ex("/etc/passwd"), newp("/srv/sbx/p")}}, "source outside writable roots (/srv/sbx, /work/b)"},
		{"rename target", p, Op{Kind: syscalls.KindRename, Paths: []Path{ex("/srv/sbx/a"), newp("/tmp/a")}}, "target outside writable roots (/srv/sbx, /work/b)"},
		{"delete root", p, Op{Kind: syscalls.KindDelete, Paths: []Path{dir("/srv/sbx")}}, "cannot delete the writable root itself (/srv/sbx)"},
		{"chmod root", p, Op{Kind: syscalls.KindChmod, Paths: []Path{dir("/work/b")}}, "cannot chmod the writable root itself (/work/b)"},
		{"xattr root", p, Op{Kind: syscalls.KindXattr, Paths: []Path{dir("/work/b")}}, "cannot set xattrs on the writable root itself (/work/b)"},
		{"proc", p, Op{Kind: syscalls.KindWrite, Paths: []Path{ex("/proc/1/mem")}}, "writes under /proc are not allowed"},
		{"foreign pipe", p, Op{Kind: syscalls.KindWrite, Paths: []Path{special(1, "pipe:[5]", false, false)}}, "pipe:[5] belongs to pid 1 outside the traced tree"},
		{"chmod pipe", p, Op{Kind: syscalls.KindChmod, Paths: []Path{special(7, "pipe:[5]", true, true)}}, "chmod of pipe:[5] through /proc is not allowed"},
		{"read-only pipe of tree", p, Op{Kind: syscalls.KindWrite, Paths: []Path{special(7, "pipe:[5]", true, false)}}, "pipe:[5] (fd 1 of pid 7) is not open for writing there: reopening it for writing through /proc would give the tree a write end it does not hold"},
		{"deny-read", p, Op{Kind: syscalls.KindWrite, Paths: []Path{ex("/srv/sbx/.secret/k")}}, "matches deny-read /srv/sbx/.secret"},
		{"scratch", p, Op{Kind: syscalls.KindDelete, Paths: []Path{ex("/dev/shm/x")}}, "not created by the traced tree (scratch dir /dev/shm is create-only; below a directory the tree created, only the entries it made itself are its own)"},
		{"scratch itself", p, Op{Kind: syscalls.KindChmod, Paths: []Path{dir("/dev/shm")}}, "the scratch dir /dev/shm itself may not be changed"},
		{"no path", p, Op{Kind: syscalls.KindWrite, Syscall: "truncate"}, "truncate without a path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.p.Decide(&c.op, nil)
			if d.Allow || d.Reason != c.reason || d.Errno != syscall.EACCES {
				t.Fatalf("Decide = %+v, want denial %q", d, c.reason)
			}
		})
	}
}

// TestDecideTwoPaths covers rename and link with both paths varying.
func TestDecideTwoPaths(t *testing.T) {
	p := mustNew(t, baseConfig())
	nested := mustNew(t, Config{WriteRoots: []string{"/srv/sbx", "/srv/sbx/sub"}})
	deep := mustNew(t, Config{WriteRoots: []string{"/srv/sbx"}, DenyRead: []string{"/srv/sbx/conf/.env"}})
	R, L := syscalls.KindRename, syscalls.KindLink
	cases := []struct {
		name    string
		p       *Policy
		kind    syscalls.Kind
		paths   []Path
		rule    Rule
		scratch []string
	}{
		{"rename inside", p, R, []Path{ex("/srv/sbx/a"), newp("/srv/sbx/b")}, RuleInsideRoot, nil},
		{"rename across roots", p, R, []Path{ex("/srv/sbx/a"), newp("/work/b/a")}, RuleInsideRoot, nil},
		{"rename out", p, R, []Path{ex("/srv/sbx/a"), newp("/tmp/a")}, RuleOutsideRoots, nil},
		{"rename in", p, R, []Path{ex("/etc/hosts"), newp("/srv/sbx/hosts")}, RuleOutsideRoots, nil},
		{"hard link escape", p, L, []Path{ex("/etc/passwd"), newp("/srv/sbx/p")}, RuleOutsideRoots, nil},
		{"link out", p, L, []Path{ex("/srv/sbx/a"), newp("/tmp/a")}, RuleOutsideRoots, nil},
		{"link inside", p, L, []Path{ex("/srv/sbx/a"), newp("/srv/sbx/b")}, RuleInsideRoot, nil},
		{"scratch rename owned to new", p, R, []Path{ex("/dev/shm/mine"), newp("/dev/shm/new")}, RuleScratchOwned, []string{"/dev/shm/new"}},
		{"scratch rename host file away", p, R, []Path{ex("/dev/shm/hostfile"), newp("/srv/sbx/x")}, RuleScratchNotOwned, nil},
		{"scratch rename over host file", p, R, []Path{ex("/srv/sbx/x"), ex("/dev/shm/hostfile")}, RuleScratchNotOwned, nil},
		{"scratch rename over owned", p, R, []Path{ex("/srv/sbx/x"), ex("/dev/shm/mine")}, RuleScratchOwned, nil},
		{"scratch rename into new", p, R, []Path{ex("/srv/sbx/x"), newp("/dev/shm/fresh")}, RuleScratchCreate, []string{"/dev/shm/fresh"}},
		{"scratch link host file", p, L, []Path{ex("/dev/shm/hostfile"), newp("/srv/sbx/h")}, RuleScratchNotOwned, nil},
		{"scratch link owned", p, L, []Path{ex("/dev/shm/mine"), newp("/dev/shm/mine.2")}, RuleScratchOwned, []string{"/dev/shm/mine.2"}},
		{"rename root away", p, R, []Path{dir("/srv/sbx"), newp("/srv/sbx.old")}, RuleRootItself, nil},
		{"rename over root", p, R, []Path{dir("/srv/sbx/d"), dir("/srv/sbx")}, RuleRootItself, nil},
		{"rename device", p, R, []Path{ex("/dev/null"), newp("/srv/sbx/null")}, RuleOutsideRoots, nil},
		{"link device", p, L, []Path{ex("/dev/null"), newp("/srv/sbx/null")}, RuleOutsideRoots, nil},
		{"rename deny-read", p, R, []Path{ex("/srv/sbx/.secret"), newp("/srv/sbx/s")}, RuleDenyRead, nil},
		{"rename onto deny-read", p, R, []Path{ex("/srv/sbx/s"), ex("/srv/sbx/.secret")}, RuleDenyRead, nil},
		{"rename a parent of deny-read", deep, R, []Path{dir("/srv/sbx/conf"), newp("/srv/sbx/c2")}, RuleDenyRead, nil},
		{"exchange with a parent of deny-read", deep, R, []Path{dir("/srv/sbx/empty"), dir("/srv/sbx/conf")}, RuleDenyRead, nil},
		{"rename a sibling of deny-read", deep, R, []Path{dir("/srv/sbx/confx"), newp("/srv/sbx/c3")}, RuleInsideRoot, nil},
		{"rename inside the parent", deep, R, []Path{ex("/srv/sbx/conf/a"), newp("/srv/sbx/conf/b")}, RuleInsideRoot, nil},
		{"rename proc", p, R, []Path{ex("/proc/1/fd/3"), newp("/srv/sbx/x")}, RuleProcWrite, nil},
		{"explicit roles reversed", p, R, []Path{{Role: "target", Resolved: "/dev/shm/new2"}, {Role: "source", Resolved: "/dev/shm/mine", Exists: true}}, RuleScratchCreate, []string{"/dev/shm/new2"}},
		{"explicit roles link", p, L, []Path{{Role: "target", Resolved: "/srv/sbx/l"}, {Role: "source", Resolved: "/etc/passwd", Exists: true}}, RuleOutsideRoots, nil},
		{"nested root delete inner", nested, syscalls.KindDelete, []Path{dir("/srv/sbx/sub")}, RuleInsideRoot, nil},
		{"nested root delete outer", nested, syscalls.KindDelete, []Path{dir("/srv/sbx")}, RuleRootItself, nil},
		{"nested root rename inner", nested, R, []Path{dir("/srv/sbx/sub"), newp("/srv/sbx/sub2")}, RuleInsideRoot, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.p.Decide(&Op{Kind: c.kind, Paths: c.paths}, owned)
			check(t, d, c.rule, syscall.EACCES, c.scratch)
		})
	}
}

func TestDecideRead(t *testing.T) {
	open := baseConfig()
	restricted := baseConfig()
	restricted.ReadRoots = []string{"/data"}
	restricted.RuntimeRoots = []string{"/usr", "/lib"}
	empty := baseConfig()
	empty.ReadRoots = []string{} // non-nil: only the implicit roots
	cases := []struct {
		path                  Path
		open, restricted, emp Rule
	}{
		{ex("/etc/hosts"), RuleRead, RuleReadNotAllowed, RuleReadNotAllowed},
		{ex("/etc/shadow"), RuleDenyRead, RuleDenyRead, RuleDenyRead},
		{ex("/etc/shadow.bak"), RuleRead, RuleReadNotAllowed, RuleReadNotAllowed},
		{ex("/srv/sbx/.secret/key"), RuleDenyRead, RuleDenyRead, RuleDenyRead},
		{dir("/srv/sbx/.secret"), RuleDenyRead, RuleDenyRead, RuleDenyRead},
		{ex("/srv/sbx/a"), RuleRead, RuleRead, RuleRead},
		{dir("/srv/sbx"), RuleRead, RuleRead, RuleRead},
		{ex("/work/b/x"), RuleRead, RuleRead, RuleRead},
		{ex("/data/x.csv"), RuleRead, RuleRead, RuleReadNotAllowed},
		{dir("/data"), RuleRead, RuleRead, RuleReadNotAllowed},
		{ex("/datax/y"), RuleRead, RuleReadNotAllowed, RuleReadNotAllowed},
		{ex("/usr/lib/python3/os.py"), RuleRead, RuleRead, RuleReadNotAllowed},
		{ex("/lib64/ld.so"), RuleRead, RuleReadNotAllowed, RuleReadNotAllowed},
		{ex("/dev/null"), RuleRead, RuleRead, RuleRead},
		{ex("/dev/urandom"), RuleRead, RuleRead, RuleRead},
		{ex("/dev/sda"), RuleRead, RuleReadNotAllowed, RuleReadNotAllowed},
		{ex("/dev/shm/x"), RuleRead, RuleRead, RuleRead},
		{ex("/proc/1/status"), RuleRead, RuleRead, RuleRead},
		{ex("/proc/cpuinfo"), RuleRead, RuleRead, RuleRead},
		{special(1, "pipe:[3]", false, false), RuleProcRead, RuleProcRead, RuleProcRead},
		{special(1, "pipe:[3]", true, true), RuleRead, RuleRead, RuleRead},
		{ex("/sys/devices/system/cpu/online"), RuleRead, RuleReadNotAllowed, RuleReadNotAllowed},
		{ex("/srv/sbx/../etc/hosts"), RuleUnresolvedPath, RuleUnresolvedPath, RuleUnresolvedPath},
		{dir("/"), RuleRead, RuleReadNotAllowed, RuleReadNotAllowed},
	}
	pols := []struct {
		name string
		c    Config
		pick func(i int) Rule
	}{
		{"open", open, func(i int) Rule { return cases[i].open }},
		{"restricted", restricted, func(i int) Rule { return cases[i].restricted }},
		{"empty", empty, func(i int) Rule { return cases[i].emp }},
	}
	for _, pc := range pols {
		for _, mode := range modes {
			pc.c.Mode = mode
			p := mustNew(t, pc.c)
			for i, c := range cases {
				t.Run(fmt.Sprintf("%s/%v/%s", pc.name, mode, c.path.Resolved), func(t *testing.T) {
					d := p.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{c.path}}, nil)
					check(t, d, pc.pick(i), syscall.EACCES, nil)
				})
			}
		}
	}
	// /proc of processes outside the tree: their secrets and their pipes
	// are not readable; the rest of /proc, and the tree's own, are.
	po := mustNew(t, baseConfig())
	outside := func(p string) Path { x := ex(p); x.ProcOutside = true; return x }
	for _, c := range []struct {
		name string
		path Path
		rule Rule
	}{
		{"environ outside", outside("/proc/77/environ"), RuleProcRead},
		{"cmdline outside", outside("/proc/77/cmdline"), RuleProcRead},
		{"thread mem outside", outside("/proc/77/task/78/mem"), RuleProcRead},
		{"status outside", outside("/proc/77/status"), RuleRead},
		{"stat outside", outside("/proc/77/stat"), RuleRead},
		{"map_files listing outside", outside("/proc/77/map_files"), RuleProcRead},
		{"map_files entry outside", outside("/proc/77/map_files/7f0000000000-7f0000001000"), RuleProcRead},
		{"fdinfo entry outside", outside("/proc/77/fdinfo/5"), RuleProcRead},
		{"thread fdinfo entry outside", outside("/proc/77/task/78/fdinfo/5"), RuleProcRead},
		{"thread map_files outside", outside("/proc/77/task/78/map_files"), RuleProcRead},
		{"fdinfo listing outside", outside("/proc/77/fdinfo"), RuleRead},
		{"fd listing outside", outside("/proc/77/fd"), RuleRead},
		{"task listing outside", outside("/proc/77/task"), RuleRead},
		{"thread status outside", outside("/proc/77/task/78/status"), RuleRead},
		{"fdinfo in tree", ex("/proc/42/fdinfo/5"), RuleRead},
		{"map_files in tree", ex("/proc/42/map_files"), RuleRead},
		{"environ in tree", ex("/proc/42/environ"), RuleRead},
		{"pipe outside", special(77, "pipe:[9]", false, false), RuleProcRead},
		{"pipe in tree", special(42, "pipe:[3]", true, true), RuleRead},
	} {
		t.Run("proc/"+c.name, func(t *testing.T) {
			d := po.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{c.path}}, nil)
			check(t, d, c.rule, syscall.EACCES, nil)
		})
	}

	// A writable root nested in a deny-read tree (a session's sandbox in
	// the server's state directory) is readable and writable; its siblings
	// and the tree itself are not; a deny-read entry inside the root or a
	// root equal to the entry still applies.
	nested := baseConfig()
	nested.WriteRoots = []string{"/state/sbx-1", "/secret"}
	nested.DenyRead = []string{"/state", "/state/sbx-1/.env", "/secret"}
	pn := mustNew(t, nested)
	for _, c := range []struct {
		name string
		kind syscalls.Kind
		path Path
		rule Rule
	}{
		{"own sandbox read", syscalls.KindRead, ex("/state/sbx-1/data.csv"), RuleRead},
		{"own sandbox dir", syscalls.KindRead, dir("/state/sbx-1"), RuleRead},
		{"own sandbox write", syscalls.KindWrite, ex("/state/sbx-1/data.csv"), RuleInsideRoot},
		{"sibling read", syscalls.KindRead, ex("/state/sbx-2/data.csv"), RuleDenyRead},
		{"prefix sibling read", syscalls.KindRead, ex("/state/sbx-10/data.csv"), RuleDenyRead},
		{"state dir itself", syscalls.KindRead, dir("/state"), RuleDenyRead},
		{"socket beside", syscalls.KindRead, ex("/state/tracecell.sock"), RuleDenyRead},
		{"deny inside the root", syscalls.KindRead, ex("/state/sbx-1/.env"), RuleDenyRead},
		{"root equal to the entry", syscalls.KindRead, ex("/secret/k"), RuleDenyRead},
	} {
		t.Run("nested/"+c.name, func(t *testing.T) {
			d := pn.Decide(&Op{Kind: c.kind, Syscall: "openat", Paths: []Path{c.path}}, nil)
			check(t, d, c.rule, syscall.EACCES, nil)
		})
	}

	p := mustNew(t, restricted)
	d := p.Decide(&Op{Kind: syscalls.KindRead, Paths: []Path{ex("/etc/hosts")}}, nil)
	if want := "outside readable roots (/data, /srv/sbx, /work/b, /dev/shm)"; d.Reason != want {
		t.Fatalf("reason %q, want %q", d.Reason, want)
	}
}

func TestExecPatternBase(t *testing.T) {
	for _, c := range []struct{ x, want string }{
		{"/usr/bin/*", "/usr/bin"},
		{"/usr/bin/py*", "/usr/bin"},
		{"/opt/*/bin/x", "/opt"},
		{"/*", "/"},
		{"/usr/bin/git", "/usr/bin/git"},
		{"/usr/bin/[gh]it", "/usr/bin"},
	} {
		t.Run(c.x, func(t *testing.T) {
			if got := ExecPatternBase(c.x); got != c.want {
				t.Errorf("ExecPatternBase(%q) = %q, want %q", c.x, got, c.want)
			}
		})
	}
}

func TestDecideExec(t *testing.T) {
	with := mustNew(t, baseConfig())
	c := baseConfig()
	c.AllowExec = nil
	without := mustNew(t, c)
	two := baseConfig()
	two.AllowExec = []string{"/usr/bin/git", "/usr/bin/python3.11"}
	both := mustNew(t, two)
	g := baseConfig()
	g.AllowExecPatterns = []string{"/usr/bin/*", "/usr/local/bin/*", "/opt/py/bin/python3*"}
	globs := mustNew(t, g)
	cases := []struct {
		name   string
		p      *Policy
		op     Op
		rule   Rule
		reason string
	}{
		{"initial", without, Op{Initial: true, Paths: []Path{ex("/usr/bin/python3.11")}}, RuleInitialExec, ""},
		{"initial outside anything", without, Op{Initial: true, Paths: []Path{ex("/tmp/evil")}}, RuleInitialExec, ""},
		{"allowed", with, Op{Paths: []Path{ex("/usr/bin/git")}}, RuleAllowExec, ""},
		{"allowed second", both, Op{Paths: []Path{ex("/usr/bin/python3.11")}}, RuleAllowExec, ""},
		{"not allowed", with, Op{Paths: []Path{ex("/usr/bin/curl")}}, RuleExecNotAllowed, "exec of /usr/bin/curl not allowed (allowed: /usr/bin/git)"},
		{"none allowed", without, Op{Paths: []Path{ex("/usr/bin/curl")}}, RuleExecNotAllowed, "exec of /usr/bin/curl not allowed (allowed: none)"},
		{"two allowed", both, Op{Paths: []Path{ex("/bin/sh")}}, RuleExecNotAllowed, "exec of /bin/sh not allowed (allowed: /usr/bin/git, /usr/bin/python3.11)"},
		{"prefix is not enough", with, Op{Paths: []Path{ex("/usr/bin/git2")}}, RuleExecNotAllowed, "exec of /usr/bin/git2 not allowed (allowed: /usr/bin/git)"},
		{"dir of allowed", with, Op{Paths: []Path{dir("/usr/bin")}}, RuleExecNotAllowed, "exec of /usr/bin not allowed (allowed: /usr/bin/git)"},
		{"under allowed", with, Op{Paths: []Path{ex("/usr/bin/git/x")}}, RuleExecNotAllowed, "exec of /usr/bin/git/x not allowed (allowed: /usr/bin/git)"},
		{"inside sandbox", with, Op{Paths: []Path{ex("/srv/sbx/a.out")}}, RuleExecNotAllowed, "exec of /srv/sbx/a.out not allowed (allowed: /usr/bin/git)"},
		{"memfd", with, Op{Paths: []Path{newp("/memfd:x (deleted)")}}, RuleExecNotAllowed, "exec of /memfd:x (deleted) not allowed (allowed: /usr/bin/git)"},
		{"no path", with, Op{}, RuleExecNotAllowed, "exec without a program path (allowed: /usr/bin/git)"},
		{"pattern", globs, Op{Paths: []Path{ex("/usr/bin/ls")}}, RuleAllowExec, ""},
		{"pattern other dir", globs, Op{Paths: []Path{ex("/usr/local/bin/tool")}}, RuleAllowExec, ""},
		{"pattern prefix glob", globs, Op{Paths: []Path{ex("/opt/py/bin/python3.11")}}, RuleAllowExec, ""},
		{"pattern prefix glob miss", globs, Op{Paths: []Path{ex("/opt/py/bin/pip")}}, RuleExecNotAllowed, "exec of /opt/py/bin/pip not allowed (allowed: /usr/bin/git, /usr/bin/*, /usr/local/bin/*, /opt/py/bin/python3*)"},
		{"pattern does not cross slash", globs, Op{Paths: []Path{ex("/usr/bin/sub/ls")}}, RuleExecNotAllowed, "exec of /usr/bin/sub/ls not allowed (allowed: /usr/bin/git, /usr/bin/*, /usr/local/bin/*, /opt/py/bin/python3*)"},
		{"pattern sibling dir", globs, Op{Paths: []Path{ex("/usr/bin2/ls")}}, RuleExecNotAllowed, "exec of /usr/bin2/ls not allowed (allowed: /usr/bin/git, /usr/bin/*, /usr/local/bin/*, /opt/py/bin/python3*)"},
		{"pattern not the dir itself", globs, Op{Paths: []Path{dir("/usr/bin")}}, RuleExecNotAllowed, "exec of /usr/bin not allowed (allowed: /usr/bin/git, /usr/bin/*, /usr/local/bin/*, /opt/py/bin/python3*)"},
		{"pattern unclean program", globs, Op{Paths: []Path{ex("/usr/bin/../../srv/sbx/a.out")}}, RuleExecNotAllowed, "exec of /usr/bin/../../srv/sbx/a.out not allowed (allowed: /usr/bin/git, /usr/bin/*, /usr/local/bin/*, /opt/py/bin/python3*)"},
		{"pattern sandbox", globs, Op{Paths: []Path{ex("/srv/sbx/a.out")}}, RuleExecNotAllowed, "exec of /srv/sbx/a.out not allowed (allowed: /usr/bin/git, /usr/bin/*, /usr/local/bin/*, /opt/py/bin/python3*)"},
	}
	for _, c := range cases {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%v/%s", mode, c.name), func(t *testing.T) {
				c.op.Kind = syscalls.KindExec
				c.op.Syscall = "execve"
				d := c.p.Decide(&c.op, nil)
				check(t, d, c.rule, syscall.EACCES, nil)
				if d.Reason != c.reason {
					t.Fatalf("reason %q, want %q", d.Reason, c.reason)
				}
			})
		}
	}
}

// TestDecideInet crosses every address form with connect/bind and the three
// net modes.
func TestDecideInet(t *testing.T) {
	type addr struct {
		family, ip   string
		loop, unspec bool
	}
	addrs := []addr{
		{"inet", "127.0.0.1", true, false},
		{"inet", "127.255.255.255", true, false},
		{"inet", "127.0.0.53", true, false},
		{"inet", "127.1.2.3", true, false},
		{"inet", "128.0.0.1", false, false},
		{"inet", "126.255.255.255", false, false},
		{"inet", "8.8.8.8", false, false},
		{"inet", "10.0.0.1", false, false},
		{"inet", "192.168.1.1", false, false},
		{"inet", "169.254.169.254", false, false},
		{"inet", "255.255.255.255", false, false},
		{"inet", "224.0.0.1", false, false},
		{"inet", "0.0.0.0", false, true},
		{"inet", "", false, false},
		{"inet", "localhost", false, false},
		{"inet6", "::1", true, false},
		{"inet6", "::ffff:127.0.0.1", true, false},
		{"inet6", "::ffff:127.255.255.255", true, false},
		{"inet6", "::ffff:128.0.0.1", false, false},
		{"inet6", "::ffff:8.8.8.8", false, false},
		{"inet6", "::ffff:0.0.0.0", false, true},
		{"inet6", "::", false, true},
		{"inet6", "::2", false, false},
		{"inet6", "::127.0.0.1", false, false}, // IPv4-compatible, not mapped: not loopback
		{"inet6", "2001:db8::1", false, false},
		{"inet6", "fe80::1", false, false},
		{"inet6", "ff02::1", false, false},
	}
	kinds := []syscalls.Kind{syscalls.KindConnect, syscalls.KindBind}
	for _, net := range []NetMode{NetDeny, NetLoopback, NetAllow} {
		for _, mode := range modes {
			c := baseConfig()
			c.Net, c.Mode = net, mode
			p := mustNew(t, c)
			for _, a := range addrs {
				for _, k := range kinds {
					t.Run(fmt.Sprintf("%v/%v/%v/%s/%q", net, mode, k, a.family, a.ip), func(t *testing.T) {
						var want Rule
						switch {
						case net == NetAllow:
							want = RuleNetAllow
						case net == NetDeny:
							want = RuleNetDeny
						case a.loop || (a.unspec && k == syscalls.KindConnect):
							want = RuleLoopback
						default:
							want = RuleNetLoopback
						}
						d := p.Decide(&Op{Kind: k, Syscall: "x", Family: a.family, Addr: a.ip, Port: 443}, nil)
						check(t, d, want, syscall.EACCES, nil)
					})
				}
			}
		}
	}
}

func TestDecideNetReasons(t *testing.T) {
	c := baseConfig()
	deny := mustNew(t, c)
	c.Net = NetLoopback
	loop := mustNew(t, c)
	cases := []struct {
		p      *Policy
		op     Op
		reason string
	}{
		{deny, Op{Kind: syscalls.KindConnect, Family: "inet", Addr: "93.184.216.34", Port: 443}, "network access is not allowed (--net deny): connect to 93.184.216.34:443"},
		{loop, Op{Kind: syscalls.KindConnect, Family: "inet6", Addr: "2001:db8::1", Port: 80}, "only loopback addresses are allowed (--net loopback): connect to [2001:db8::1]:80"},
		{loop, Op{Kind: syscalls.KindBind, Family: "inet", Addr: "0.0.0.0", Port: 8000}, "only loopback addresses are allowed (--net loopback): bind to 0.0.0.0:8000"},
		{loop, Op{Kind: syscalls.KindConnect, Family: "inet", Addr: "bogus", Port: 1}, "only loopback addresses are allowed (--net loopback): connect to bogus:1"},
		{deny, Op{Kind: syscalls.KindConnect, Family: "unix", Abstract: true, Addr: "@/tmp/.X11-unix/X0"}, "abstract unix socket @/tmp/.X11-unix/X0 is not allowed (--net deny)"},
		{deny, Op{Kind: syscalls.KindConnect, Family: "unix", Paths: []Path{ex("/run/docker.sock")}}, "unix socket /run/docker.sock is outside writable roots (/srv/sbx, /work/b)"},
		{loop, Op{Kind: syscalls.KindConnect, Family: "family(17)"}, "socket family family(17) is not allowed (--net loopback)"},
		{deny, Op{Kind: syscalls.KindBind, Family: "unspec"}, "network access is not allowed (--net deny): bind to the unspecified address (every interface)"},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			d := c.p.Decide(&c.op, nil)
			if d.Allow || d.Reason != c.reason || d.Errno != syscall.EACCES {
				t.Fatalf("Decide = %+v, want denial %q", d, c.reason)
			}
		})
	}
}

// TestDecideOtherFamilies: unix, netlink, unspec and unknown families in
// every net mode.
func TestDecideOtherFamilies(t *testing.T) {
	C, B := syscalls.KindConnect, syscalls.KindBind
	type want [3]Rule // deny, loopback, allow
	same := func(r Rule) want { return want{r, r, r} }
	cases := []struct {
		name    string
		op      Op
		want    want
		scratch []string
	}{
		{"netlink connect", Op{Kind: C, Family: "netlink"}, same(RuleNetlink), nil},
		{"netlink bind", Op{Kind: B, Family: "netlink"}, same(RuleNetlink), nil},
		{"netlink kernel", Op{Kind: C, Syscall: "sendto", Family: "netlink", Port: 0, Addr: "groups 0"}, same(RuleNetlink), nil},
		{"netlink user port", Op{Kind: C, Syscall: "sendto", Family: "netlink", Port: 4242, Addr: "groups 0"}, want{RuleNetDeny, RuleNetLoopback, RuleNetlink}, nil},
		{"netlink group", Op{Kind: C, Syscall: "sendmsg", Family: "netlink", Port: 0, Addr: "groups 1"}, want{RuleNetDeny, RuleNetLoopback, RuleNetlink}, nil},
		{"netlink bind port", Op{Kind: B, Family: "netlink", Port: 4242, Addr: "groups 1"}, same(RuleNetlink), nil},
		{"packet", Op{Kind: C, Family: "family(17)"}, want{RuleNetFamily, RuleNetFamily, RuleNetAllow}, nil},
		{"packet bind", Op{Kind: B, Family: "family(17)"}, want{RuleNetFamily, RuleNetFamily, RuleNetAllow}, nil},
		{"bluetooth", Op{Kind: C, Family: "family(31)"}, want{RuleNetFamily, RuleNetFamily, RuleNetAllow}, nil},
		{"unspec connect", Op{Kind: C, Family: "unspec"}, same(RuleUnspec), nil},
		{"unspec connect (named)", Op{Kind: C, Syscall: "connect", Family: "unspec"}, same(RuleUnspec), nil},
		{"unspec sendto", Op{Kind: C, Syscall: "sendto", Family: "unspec", Addr: "8.8.8.8", Port: 53}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"unspec sendmsg", Op{Kind: C, Syscall: "sendmsg", Family: "unspec"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"unspec sendmmsg", Op{Kind: C, Syscall: "sendmmsg", Family: "unspec"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"empty family connect", Op{Kind: C}, same(RuleUnspec), nil},
		{"unspec bind", Op{Kind: B, Family: "unspec"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"listen unbound", Op{Kind: B, Syscall: "listen", Family: "unspec"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"source route", Op{Kind: C, Syscall: "setsockopt", Family: "source-route", Addr: "IP options"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"outgoing interface", Op{Kind: C, Syscall: "setsockopt", Family: syscalls.RouteInterface, Addr: "SO_BINDTODEVICE"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"pktinfo interface", Op{Kind: C, Syscall: "sendmsg", Family: syscalls.RouteInterface, Addr: "IP_PKTINFO (interface index 2)"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"multicast join", Op{Kind: C, Syscall: "setsockopt", Family: syscalls.RouteMembership, Addr: "IP_ADD_MEMBERSHIP"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"sctp socket", Op{Kind: C, Syscall: "socket", Family: syscalls.SocketCreate, Addr: "AF_INET SOCK_STREAM protocol 132"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"abstract connect", Op{Kind: C, Family: "unix", Abstract: true, Addr: "@x"}, want{RuleUnixAbstract, RuleUnixAbstract, RuleNetAllow}, nil},
		{"abstract bind", Op{Kind: B, Family: "unix", Abstract: true, Addr: "@x"}, want{RuleUnixAbstract, RuleUnixAbstract, RuleNetAllow}, nil},
		{"autobind", Op{Kind: B, Family: "unix"}, same(RuleUnixAutobind), nil},
		{"unix connect without path", Op{Kind: C, Family: "unix"}, want{RuleUnixAbstract, RuleUnixAbstract, RuleNetAllow}, nil},
		{"unix connect in root", Op{Kind: C, Family: "unix", Paths: []Path{ex("/srv/sbx/s.sock")}}, want{RuleUnixInRoots, RuleUnixInRoots, RuleNetAllow}, nil},
		{"unix connect second root", Op{Kind: C, Family: "unix", Paths: []Path{ex("/work/b/run/s")}}, want{RuleUnixInRoots, RuleUnixInRoots, RuleNetAllow}, nil},
		{"unix connect docker", Op{Kind: C, Family: "unix", Paths: []Path{ex("/run/docker.sock")}}, want{RuleUnixOutsideRoots, RuleUnixOutsideRoots, RuleNetAllow}, nil},
		{"unix connect dbus", Op{Kind: C, Family: "unix", Paths: []Path{ex("/run/dbus/system_bus_socket")}}, want{RuleUnixOutsideRoots, RuleUnixOutsideRoots, RuleNetAllow}, nil},
		{"unix sendto dev log", Op{Kind: C, Family: "unix", Paths: []Path{ex("/dev/log")}}, want{RuleUnixOutsideRoots, RuleUnixOutsideRoots, RuleNetAllow}, nil},
		{"unix connect sibling prefix", Op{Kind: C, Family: "unix", Paths: []Path{ex("/srv/sbx2/s")}}, want{RuleUnixOutsideRoots, RuleUnixOutsideRoots, RuleNetAllow}, nil},
		{"unix connect scratch owned", Op{Kind: C, Family: "unix", Paths: []Path{ex("/dev/shm/mine.sock")}}, want{RuleUnixInRoots, RuleUnixInRoots, RuleNetAllow}, nil},
		{"unix connect scratch host", Op{Kind: C, Family: "unix", Paths: []Path{ex("/dev/shm/host.sock")}}, want{RuleUnixOutsideRoots, RuleUnixOutsideRoots, RuleNetAllow}, nil},
		{"unix connect unclean", Op{Kind: C, Family: "unix", Paths: []Path{ex("/srv/sbx/../run/docker.sock")}}, want{RuleUnixOutsideRoots, RuleUnixOutsideRoots, RuleNetAllow}, nil},
		{"unix connect via proc", Op{Kind: C, Family: "unix", Paths: []Path{special(1, "socket:[4]", true, true)}}, want{RuleUnixOutsideRoots, RuleUnixOutsideRoots, RuleNetAllow}, nil},
		{"unix bind in root", Op{Kind: B, Family: "unix", Paths: []Path{newp("/srv/sbx/s.sock")}}, same(RuleInsideRoot), nil},
		{"unix bind outside", Op{Kind: B, Family: "unix", Paths: []Path{newp("/tmp/s.sock")}}, same(RuleOutsideRoots), nil},
		{"unix bind scratch", Op{Kind: B, Family: "unix", Paths: []Path{newp("/dev/shm/new.sock")}}, same(RuleScratchCreate), []string{"/dev/shm/new.sock"}},
		{"unix bind scratch existing", Op{Kind: B, Family: "unix", Paths: []Path{ex("/dev/shm/host.sock")}}, same(RuleScratchNotOwned), nil},
		{"unix bind deny-read", Op{Kind: B, Family: "unix", Paths: []Path{newp("/srv/sbx/.secret/s")}}, same(RuleDenyRead), nil},
		{"unix bind proc", Op{Kind: B, Family: "unix", Paths: []Path{newp("/proc/1/x")}}, same(RuleProcWrite), nil},
		// sendmmsg memory the kernel rewrites: void whatever it names.
		{"rewritten unix in root", Op{Kind: C, Syscall: "sendmmsg", Family: "unix", Paths: []Path{ex("/srv/sbx/s.sock")}, Rewritten: "entry 1"}, want{RuleKernelRewritten, RuleKernelRewritten, RuleNetAllow}, nil},
		{"rewritten loopback", Op{Kind: C, Syscall: "sendmmsg", Family: "inet", Addr: "127.0.0.1", Port: 9, From: "127.0.0.1", Rewritten: "entry 1"}, want{RuleKernelRewritten, RuleKernelRewritten, RuleNetAllow}, nil},
		{"rewritten no address", Op{Kind: C, Syscall: "sendmmsg", Rewritten: "entry 1"}, want{RuleKernelRewritten, RuleKernelRewritten, RuleNetAllow}, nil},
		// The socket a datagram leaves from (UDP autobind).
		{"send from loopback", Op{Kind: C, Syscall: "sendto", Family: "inet", Addr: "127.0.0.1", Port: 9, From: "127.0.0.1"}, want{RuleNetDeny, RuleLoopback, RuleNetAllow}, nil},
		{"send from loopback6", Op{Kind: C, Syscall: "sendmsg", Family: "inet6", Addr: "::1", Port: 9, From: "::1"}, want{RuleNetDeny, RuleLoopback, RuleNetAllow}, nil},
		{"send from mapped loopback", Op{Kind: C, Syscall: "sendto", Family: "inet6", Addr: "::ffff:127.0.0.1", Port: 9, From: "::ffff:127.0.0.2"}, want{RuleNetDeny, RuleLoopback, RuleNetAllow}, nil},
		{"send from unbound", Op{Kind: C, Syscall: "sendto", Family: "inet", Addr: "127.0.0.1", Port: 9, From: "unbound"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"send from wildcard", Op{Kind: C, Syscall: "sendmmsg", Family: "inet", Addr: "127.0.0.1", Port: 9, From: "0.0.0.0"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"send from wildcard6", Op{Kind: C, Syscall: "sendto", Family: "inet6", Addr: "::1", Port: 9, From: "::"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"send to any from unbound", Op{Kind: C, Syscall: "sendto", Family: "inet", Addr: "0.0.0.0", Port: 9, From: "unbound"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"send from unknown", Op{Kind: C, Syscall: "sendto", Family: "inet", Addr: "127.0.0.1", Port: 9, From: "?(protocol SCTP)"}, want{RuleNetDeny, RuleNetLoopback, RuleNetAllow}, nil},
		{"connect ignores from", Op{Kind: C, Syscall: "connect", Family: "inet", Addr: "127.0.0.1", Port: 9, From: "unbound"}, want{RuleNetDeny, RuleLoopback, RuleNetAllow}, nil},
	}
	for ni, net := range []NetMode{NetDeny, NetLoopback, NetAllow} {
		for _, mode := range modes {
			c := baseConfig()
			c.Net, c.Mode = net, mode
			p := mustNew(t, c)
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%v/%v/%s", net, mode, tc.name), func(t *testing.T) {
					var scratch []string
					if tc.want[ni] == RuleScratchCreate {
						scratch = tc.scratch
					}
					check(t, p.Decide(&tc.op, owned), tc.want[ni], syscall.EACCES, scratch)
				})
			}
		}
	}
}

// TestWorst: the operation that decides a call sending to several
// addresses is its first denied one (sendmmsg).
func TestWorst(t *testing.T) {
	c := baseConfig()
	c.Net = NetLoopback
	p := mustNew(t, c)
	C := syscalls.KindConnect
	lo := &Op{Kind: C, Syscall: "sendmmsg", Family: "inet", Addr: "127.0.0.1", Port: 1}
	lo2 := &Op{Kind: C, Syscall: "sendmmsg", Family: "inet", Addr: "127.0.0.2", Port: 2}
	far := &Op{Kind: C, Syscall: "sendmmsg", Family: "inet", Addr: "10.0.0.1", Port: 3}
	far2 := &Op{Kind: C, Syscall: "sendmmsg", Family: "inet", Addr: "10.0.0.2", Port: 4}
	cases := []struct {
		name string
		ops  []*Op
		want *Op
	}{
		{"none", nil, nil},
		{"all allowed", []*Op{lo, lo2}, lo},
		{"last denied", []*Op{lo, lo2, far}, far},
		{"first of two denied", []*Op{lo, far2, far}, far2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Worst(tc.ops, nil); got != tc.want {
				t.Errorf("Worst = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecideTargets(t *testing.T) {
	p := mustNew(t, baseConfig())
	cases := []struct {
		pid    int
		in     bool
		reason string
	}{
		{1234, true, ""},
		{0, true, ""},
		{-77, true, ""},
		{1234, false, "pid 1234 is not in the traced tree"},
		{1, false, "pid 1 is not in the traced tree"},
		{-1, false, "pid -1 (every process) is not in the traced tree"},
		{-55, false, "process group 55 is not in the traced tree"},
		{0, false, "the caller's process group is not in the traced tree"},
	}
	for _, k := range []syscalls.Kind{syscalls.KindSignal, syscalls.KindProcess} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%d/%v", k, c.pid, c.in), func(t *testing.T) {
				d := p.Decide(&Op{Kind: k, Syscall: "kill", TargetPid: c.pid, TargetInTree: c.in}, nil)
				want := RuleInTree
				if !c.in {
					want = RuleOutsideTree
				}
				check(t, d, want, syscall.EPERM, nil)
				if d.Reason != c.reason {
					t.Fatalf("reason %q, want %q", d.Reason, c.reason)
				}
			})
		}
	}
}

// Signal-driven I/O on a terminal: its foreground group is the target,
// which is the tree's only for the tree's own ptys.
func TestDecideAsyncTTY(t *testing.T) {
	p := mustNew(t, baseConfig())
	for _, c := range []struct {
		in     bool
		path   string
		rule   Rule
		reason string
	}{
		{true, "/dev/pts/7", RuleInTree, ""},
		{false, "/dev/pts/3", RuleOutsideTree, "signal-driven I/O on /dev/pts/3 would signal its foreground process group, which is not the traced tree's (only the tree's own ptys allow it)"},
		{false, "", RuleOutsideTree, "signal-driven I/O on a terminal would signal its foreground process group, which is not the traced tree's (only the tree's own ptys allow it)"},
	} {
		t.Run(fmt.Sprintf("%s/%v", c.path, c.in), func(t *testing.T) {
			op := &Op{Kind: syscalls.KindSignal, Syscall: "fcntl", AsyncTTY: true, TargetInTree: c.in}
			if c.path != "" {
				op.Paths = []Path{ex(c.path)}
			}
			d := p.Decide(op, nil)
			check(t, d, c.rule, syscall.EPERM, nil)
			if d.Reason != c.reason {
				t.Fatalf("reason %q, want %q", d.Reason, c.reason)
			}
		})
	}
}

func TestDecideForbiddenAndUnknown(t *testing.T) {
	p := mustNew(t, baseConfig())
	cases := []struct {
		name   string
		op     *Op
		rule   Rule
		reason string
	}{
		{"ptrace", &Op{Kind: syscalls.KindForbidden, Syscall: "ptrace"}, RuleForbiddenSyscall, "ptrace is never allowed"},
		{"mount", &Op{Kind: syscalls.KindForbidden, Syscall: "mount"}, RuleForbiddenSyscall, "mount is never allowed"},
		{"prctl PR_SET_MM", &Op{Kind: syscalls.KindForbidden, Syscall: "prctl", Option: "PR_SET_MM"}, RuleForbiddenSyscall, "prctl(PR_SET_MM) is never allowed"},
		{"prctl PR_SET_DUMPABLE", &Op{Kind: syscalls.KindForbidden, Syscall: "prctl", Option: "PR_SET_DUMPABLE"}, RuleForbiddenSyscall, "prctl(PR_SET_DUMPABLE) is never allowed but to turn dumpable on (a process that is not dumpable hides its fds, program and memory from a tracer without CAP_SYS_PTRACE, so tracecell could no longer check its calls)"},
		{"unnamed", &Op{Kind: syscalls.KindForbidden}, RuleForbiddenSyscall, "this system call is never allowed"},
		{"none", &Op{Kind: syscalls.KindNone, Syscall: "x"}, RuleUnknownKind, "operation kind none is not classified"},
		{"out of range", &Op{Kind: syscalls.Kind(200)}, RuleUnknownKind, "operation kind kind(200) is not classified"},
		{"nil", nil, RuleUnknownKind, "no operation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Decide(c.op, nil)
			check(t, d, c.rule, syscall.EPERM, nil)
			if d.Reason != c.reason {
				t.Fatalf("reason %q, want %q", d.Reason, c.reason)
			}
		})
	}
}

func TestNew(t *testing.T) {
	mod := func(f func(*Config)) Config { c := baseConfig(); f(&c); return c }
	cases := []struct {
		name string
		cfg  Config
		err  string // substring; "" = valid
	}{
		{"base", baseConfig(), ""},
		{"zero", Config{}, ""},
		{"slash root", mod(func(c *Config) { c.WriteRoots = []string{"/"} }), ""},
		{"relative write root", mod(func(c *Config) { c.WriteRoots = []string{"srv/sbx"} }), `write root "srv/sbx" is not an absolute path`},
		{"empty write root", mod(func(c *Config) { c.WriteRoots = []string{""} }), `write root "" is not an absolute path`},
		{"trailing slash", mod(func(c *Config) { c.WriteRoots = []string{"/srv/sbx/"} }), `write root "/srv/sbx/" is not clean (want "/srv/sbx")`},
		{"double slash", mod(func(c *Config) { c.WriteRoots = []string{"//srv"} }), `write root "//srv" is not clean`},
		{"dotdot", mod(func(c *Config) { c.WriteRoots = []string{"/srv/../etc"} }), `write root "/srv/../etc" is not clean (want "/etc")`},
		{"proc root", mod(func(c *Config) { c.WriteRoots = []string{"/proc/1"} }), `write root "/proc/1" is under /proc`},
		{"read root", mod(func(c *Config) { c.ReadRoots = []string{"data"} }), `read root "data"`},
		{"runtime root", mod(func(c *Config) { c.RuntimeRoots = []string{"/usr/"} }), `runtime root "/usr/"`},
		{"deny read", mod(func(c *Config) { c.DenyRead = []string{"~/.ssh"} }), `deny-read path "~/.ssh"`},
		{"allow exec", mod(func(c *Config) { c.AllowExec = []string{"git"} }), `allowed executable "git"`},
		{"scratch", mod(func(c *Config) { c.Scratch = []string{"/dev/shm/."} }), `scratch dir "/dev/shm/."`},
		{"exec pattern", mod(func(c *Config) { c.AllowExecPatterns = []string{"/usr/bin/*"} }), ""},
		{"relative exec pattern", mod(func(c *Config) { c.AllowExecPatterns = []string{"bin/*"} }), `exec pattern "bin/*" is not an absolute path`},
		{"unclean exec pattern", mod(func(c *Config) { c.AllowExecPatterns = []string{"/usr/bin/*/"} }), `exec pattern "/usr/bin/*/" is not clean`},
		{"bad exec pattern", mod(func(c *Config) { c.AllowExecPatterns = []string{"/usr/bin/[a"} }), `exec pattern "/usr/bin/[a": syntax error in pattern`},
		{"bad pattern", mod(func(c *Config) { c.Devices = []string{"/dev/["} }), `device pattern "/dev/[": syntax error in pattern`},
		{"relative pattern", mod(func(c *Config) { c.Devices = []string{"dev/null"} }), `device pattern "dev/null" is not absolute`},
		{"net", mod(func(c *Config) { c.Net = 7 }), "net mode net(7) is not deny, loopback or allow"},
		{"mode", mod(func(c *Config) { c.Mode = 3 }), "mode mode(3) is not enforce or audit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(c.cfg)
			if c.err == "" {
				if err != nil || p == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("New error %v, want %q", err, c.err)
			}
		})
	}
}

func TestConfigIsACopy(t *testing.T) {
	c := baseConfig()
	p := mustNew(t, c)
	c.WriteRoots[0] = "/" // the caller's slice changes after New
	got := p.Config()
	if got.WriteRoots[0] != "/srv/sbx" {
		t.Fatalf("policy shares the caller's slice: %q", got.WriteRoots)
	}
	got.WriteRoots[0] = "/"
	got.Devices = append(got.Devices[:0], "/dev/*")
	if d := p.Decide(&Op{Kind: syscalls.KindWrite, Paths: []Path{ex("/etc/x")}}, nil); d.Allow {
		t.Fatal("mutating Config() changed the policy")
	}
	if !reflect.DeepEqual(p.Config(), baseConfig()) {
		t.Fatalf("Config() = %+v, want %+v", p.Config(), baseConfig())
	}
	if p.Config().ReadRoots != nil {
		t.Fatal("nil ReadRoots must stay nil (reads open)")
	}
}

func TestUnder(t *testing.T) {
	cases := []struct {
		p, root string
		want    bool
	}{
		{"/srv/sbx", "/srv/sbx", true},
		{"/srv/sbx/a", "/srv/sbx", true},
		{"/srv/sbx/a/b", "/srv/sbx", true},
		{"/srv/sbx2", "/srv/sbx", false},
		{"/srv/sbx2/a", "/srv/sbx", false},
		{"/srv/sb", "/srv/sbx", false},
		{"/srv", "/srv/sbx", false},
		{"/", "/srv/sbx", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"relative", "/", false},
		{"/srv/sbx.d", "/srv/sbx", false},
		{"/srv/sbx-x/a", "/srv/sbx", false},
	}
	for _, c := range cases {
		t.Run(c.p+" in "+c.root, func(t *testing.T) {
			if got := Under(c.p, c.root); got != c.want {
				t.Fatalf("Under(%q, %q) = %v", c.p, c.root, got)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	if _, err := New(Config{Devices: DefaultDevices(), Scratch: DefaultScratch()}); err != nil {
		t.Fatal(err)
	}
	a := DefaultDevices()
	a[0] = "/x"
	if DefaultDevices()[0] != "/dev/null" {
		t.Fatal("DefaultDevices shares its slice")
	}
	p := mustNew(t, Config{Devices: DefaultDevices()})
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts/ptmx"} {
		if d := p.Decide(&Op{Kind: syscalls.KindWrite, Paths: []Path{ex(dev)}}, nil); !d.Allow || d.Rule != RuleDevice {
			t.Errorf("write to %s: %+v", dev, d)
		}
	}
}

// TestPtys: of the pty slaves only the tree's own (the tracer's fact
// Path.OwnPty: made by the tree, or tracecell's own terminal) are writable
// by default; --allow-device '/dev/pts/*' gives back every one, and a
// narrower pattern only what it matches.
func TestPtys(t *testing.T) {
	own := func(p string) Path { return Path{Resolved: p, Exists: true, OwnPty: true} }
	cases := []struct {
		name    string
		devices []string
		p       Path
		rule    Rule
	}{
		{"own pty", nil, own("/dev/pts/0"), RuleOwnPty},
		{"own pty high index", nil, own("/dev/pts/1048575"), RuleOwnPty},
		{"foreign pty", nil, ex("/dev/pts/0"), RuleForeignPty},
		{"foreign pty high index", nil, ex("/dev/pts/12"), RuleForeignPty},
		{"ptmx in /dev/pts", nil, ex("/dev/pts/ptmx"), RuleDevice},
		{"ptmx in /dev/pts, own fact too", nil, own("/dev/pts/ptmx"), RuleDevice},
		{"/dev/ptmx", nil, ex("/dev/ptmx"), RuleDevice},
		{"allow-device pts star, foreign", []string{"/dev/pts/*"}, ex("/dev/pts/7"), RuleDevice},
		{"allow-device pts star, own", []string{"/dev/pts/*"}, own("/dev/pts/7"), RuleDevice},
		{"allow-device one pty", []string{"/dev/pts/7"}, ex("/dev/pts/7"), RuleDevice},
		{"allow-device one pty, another", []string{"/dev/pts/7"}, ex("/dev/pts/8"), RuleForeignPty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Devices = append(cfg.Devices, c.devices...)
			p := mustNew(t, cfg)
			d := p.Decide(&Op{Kind: syscalls.KindWrite, Syscall: "openat", Paths: []Path{c.p}}, nil)
			check(t, d, c.rule, syscall.EACCES, nil)
			if c.rule == RuleForeignPty && !strings.Contains(d.Reason, "did not create") {
				t.Errorf("reason %q does not say why", d.Reason)
			}
			// Read-only opens, where reads are checked: another session's
			// terminal gives its input.
			want := RuleRead
			if c.rule == RuleForeignPty {
				want = RuleForeignPty
			}
			check(t, p.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{c.p}}, nil), want, syscall.EACCES, nil)
		})
	}
	// Only opens for writing: the fact gives no chmod, chown, xattr,
	// delete, rename or link of a slave.
	p := mustNew(t, baseConfig())
	for _, k := range fsKinds {
		if k == syscalls.KindWrite {
			continue
		}
		if d := p.Decide(&Op{Kind: k, Paths: []Path{own("/dev/pts/0"), own("/dev/pts/1")}}, nil); d.Allow {
			t.Errorf("%v of an own pty allowed: %+v", k, d)
		}
	}
}

// TestPropertyNoWayOut feeds random operations through random policies and
// checks with an independent component-wise oracle that no modifying
// operation is ever allowed on a path outside the writable roots, device
// patterns (writes only), the tree's own ptys (writes only), scratch dirs
// (fresh entries or owned ones), or the tree's own special objects — and
// that audit decides exactly as enforce.
func TestPropertyNoWayOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	comps := []string{"srv", "sbx", "sbx2", "sbx.old", "work", "b", "dev", "shm", "null", "pts", "0", "ptmx", "sda",
		"proc", "1", "fd", "mem", "etc", "passwd", ".secret", "mine", "mydir", "x", "..", ".", "", "\xff"}
	prefixes := []string{"/srv/sbx", "/srv/sbx/.secret", "/work/b", "/dev/shm", "/dev/shm/mydir", "/dev", "/dev/pts", "/proc", "/srv", "/", ""}
	randPath := func() string {
		n := rng.IntN(4)
		var b strings.Builder
		b.WriteString(prefixes[rng.IntN(len(prefixes))])
		if b.Len() == 0 && rng.IntN(20) != 0 {
			b.WriteByte('/')
		}
		for i := 0; i < n; i++ {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "/") {
				b.WriteByte('/')
			}
			b.WriteString(comps[rng.IntN(len(comps))])
		}
		if rng.IntN(15) == 0 {
			b.WriteByte('/')
		}
		p := b.String()
		if rng.IntN(2) == 0 && strings.HasPrefix(p, "/") {
			p = path.Clean(p) // mostly clean, like resolved paths
		}
		return p
	}
	rootSets := [][]string{{"/srv/sbx"}, {"/srv/sbx", "/work/b"}, {"/srv/sbx", "/srv/sbx/x"}, {}, {"/work"}}
	split := func(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }
	under := func(p, root string) bool { // oracle: compare component slices
		if root == "/" {
			return true
		}
		pc, rc := split(p), split(root)
		return len(pc) >= len(rc) && slices.Equal(pc[:len(rc)], rc)
	}
	strictlyUnder := func(p, root string) bool { return under(p, root) && len(split(p)) > len(split(root)) }
	isClean := func(p string) bool { return strings.HasPrefix(p, "/") && path.Clean(p) == p }
	led := ledger{"/dev/shm/mine": true, "/dev/shm/mydir": true}

	allowedN, n := 0, 20000
	for i := 0; i < n; i++ {
		cfg := Config{
			WriteRoots: rootSets[rng.IntN(len(rootSets))],
			DenyRead:   []string{"/srv/sbx/.secret"},
			Devices:    DefaultDevices(),
			Scratch:    []string{"/dev/shm"},
			Net:        NetMode(rng.IntN(3)),
		}
		allPts := rng.IntN(5) == 0
		if allPts {
			cfg.Devices = append(DefaultDevices(), "/dev/pts/*")
		}
		enf := mustNew(t, cfg)
		cfg.Mode = Audit
		aud := mustNew(t, cfg)
		kind := fsKinds[rng.IntN(len(fsKinds))]
		op := &Op{Kind: kind}
		np := 1
		if kind == syscalls.KindRename || kind == syscalls.KindLink {
			np = 2
		}
		for j := 0; j < np; j++ {
			pa := Path{Resolved: randPath(), Exists: rng.IntN(2) == 0, OwnPty: rng.IntN(4) == 0}
			if rng.IntN(10) == 0 {
				pa.Special = "pipe:[1]"
				pa.SpecialInTree = rng.IntN(2) == 0
			}
			op.Paths = append(op.Paths, pa)
		}
		var l Ledger = led
		if rng.IntN(4) == 0 {
			l = nil
		}
		d := enf.Decide(op, l)
		if da := aud.Decide(op, l); !reflect.DeepEqual(d, da) {
			t.Fatalf("audit decided %+v, enforce %+v for %+v", da, d, op)
		}
		if !d.Allow {
			if d.Errno != syscall.EACCES {
				t.Fatalf("denied %+v with errno %v", op, d.Errno)
			}
			continue
		}
		allowedN++
		for j, pa := range op.Paths {
			res := pa.Resolved
			if pa.Special != "" {
				if kind != syscalls.KindWrite || !pa.SpecialInTree {
					t.Fatalf("allowed %v on special %+v", kind, pa)
				}
				continue
			}
			if !isClean(res) || under(res, "/proc") || under(res, "/srv/sbx/.secret") {
				t.Fatalf("allowed %v on %q (%+v)", kind, res, op)
			}
			ok := false
			for _, r := range cfg.WriteRoots {
				if under(res, r) {
					ok = true
				}
			}
			if kind == syscalls.KindWrite && (res == "/dev/null" || res == "/dev/zero" || res == "/dev/full" ||
				res == "/dev/random" || res == "/dev/urandom" || res == "/dev/tty" || res == "/dev/ptmx" ||
				res == "/dev/pts/ptmx" || ((pa.OwnPty || allPts) && len(split(res)) == 3 && strictlyUnder(res, "/dev/pts"))) {
				ok = true
			}
			if strictlyUnder(res, "/dev/shm") && !ok {
				target := j == 1 || kind == syscalls.KindCreate
				fresh := !pa.Exists && target && (kind == syscalls.KindCreate || kind == syscalls.KindRename || kind == syscalls.KindLink)
				if !fresh && (l == nil || !l.Owned(res)) {
					t.Fatalf("allowed %v on scratch %+v neither fresh nor owned", kind, pa)
				}
				ok = true
			}
			if !ok {
				t.Fatalf("allowed %v on %q outside every writable place (roots %q)", kind, res, cfg.WriteRoots)
			}
		}
		for _, s := range d.Scratch {
			if !strictlyUnder(s, "/dev/shm") {
				t.Fatalf("scratch record %q outside the scratch dir", s)
			}
			found := false
			for _, pa := range op.Paths {
				if pa.Resolved == s && !pa.Exists {
					found = true
				}
			}
			if !found {
				t.Fatalf("scratch record %q is not a fresh path of %+v", s, op)
			}
		}
	}
	// The generator must reach both outcomes often enough to mean something.
	if allowedN < n/20 || allowedN > n*9/10 {
		t.Fatalf("%d of %d operations allowed: generator is off", allowedN, n)
	}
	t.Logf("%d of %d random operations allowed", allowedN, n)
}

// TestDecideIoctl: an ioctl command that is neither on the filter's
// allow-list nor decided by a rule of its own (issue 16) is allowed only on
// what the tree may write, and on its own non-socket objects; otherwise it
// is denied as ioctl-not-allowed, naming the command and the path.
func TestDecideIoctl(t *testing.T) {
	p := mustNew(t, baseConfig())
	own := ex("/dev/pts/7")
	own.OwnPty = true
	cases := []struct {
		name string
		cmd  string
		path Path
		rule Rule
	}{
		{"unknown_in_root", "0x12345678", ex("/srv/sbx/f"), RuleInsideRoot},
		{"unknown_root_dir_itself", "0x12345678", ex("/srv/sbx"), RuleInsideRoot},
		{"subvol_destroy_like_outside", "0x12345678", ex("/home/u/bin"), RuleIoctlNotAllowed},
		{"fat_set_attributes_outside", "FAT_IOCTL_SET_ATTRIBUTES", ex("/mnt/usb/f"), RuleIoctlNotAllowed},
		{"loop_clr_fd", "LOOP_CLR_FD", ex("/dev/loop0"), RuleIoctlNotAllowed},
		{"loop_control", "LOOP_CTL_GET_FREE", ex("/dev/loop-control"), RuleIoctlNotAllowed},
		{"dev_null", "0x12345678", ex("/dev/null"), RuleDevice},
		{"own_pty", "TIOCNOTTY", own, RuleOwnPty},
		{"foreign_pty", "TIOCNOTTY", ex("/dev/pts/3"), RuleIoctlNotAllowed},
		{"deny_read_in_root", "0x12345678", ex("/srv/sbx/.secret"), RuleIoctlNotAllowed},
		{"proc", "0x12345678", ex("/proc/1/status"), RuleIoctlNotAllowed},
		{"scratch_not_owned", "0x12345678", ex("/dev/shm/theirs"), RuleIoctlNotAllowed},
		{"scratch_owned", "0x12345678", ex("/dev/shm/mine"), RuleScratchOwned},
		{"pipe_of_tree", "0x12345678", Path{Resolved: "/proc/9/task/9/fd/3", Exists: true, Special: "pipe:[77]", SpecialInTree: true}, RuleSpecialObject},
		{"eventfd_of_tree", "0x12345678", Path{Resolved: "/proc/9/task/9/fd/4", Exists: true, Special: "anon_inode:[eventfd]", SpecialInTree: true}, RuleSpecialObject},
		{"socket_of_tree", "SIOCSIFFLAGS", Path{Resolved: "/proc/9/task/9/fd/5", Exists: true, Special: "socket:[88]", SpecialInTree: true}, RuleIoctlNotAllowed},
		{"unresolved", "0x12345678", ex("/srv/sbx/../etc"), RuleIoctlNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := &Op{Kind: syscalls.KindIoctl, Syscall: "ioctl", Ioctl: c.cmd, Paths: []Path{c.path}}
			d := p.Decide(op, owned)
			if d.Rule != c.rule {
				t.Fatalf("%s on %s: %+v, want rule %s", c.cmd, c.path.Resolved, d, c.rule)
			}
			if d.Allow != (c.rule != RuleIoctlNotAllowed) {
				t.Fatalf("allow %v with rule %s", d.Allow, d.Rule)
			}
			if !d.Allow {
				if d.Errno != syscall.EPERM {
					t.Errorf("errno %v, want EPERM", d.Errno)
				}
				if !strings.Contains(d.Reason, c.cmd) {
					t.Errorf("reason %q does not name %s", d.Reason, c.cmd)
				}
				if c.path.Special == "" && !strings.Contains(d.Reason, c.path.Resolved) {
					t.Errorf("reason %q does not name %s", d.Reason, c.path.Resolved)
				}
			}
		})
	}
	if d := p.Decide(&Op{Kind: syscalls.KindIoctl, Syscall: "ioctl", Ioctl: "0x1"}, nil); d.Allow || d.Rule != RuleIoctlNotAllowed {
		t.Errorf("no path: %+v", d)
	}
	// With CAP_NET_ADMIN kept by the operator, socket configuration
	// reaches the kernel, which checks the capability.
	na := baseConfig()
	na.NetAdmin = true
	sock := Path{Resolved: "/proc/9/task/9/fd/5", Exists: true, Special: "socket:[88]", SpecialInTree: true}
	if d := mustNew(t, na).Decide(&Op{Kind: syscalls.KindIoctl, Syscall: "ioctl", Ioctl: "SIOCSIFFLAGS", Paths: []Path{sock}}, nil); !d.Allow || d.Rule != RuleNetAdminKept {
		t.Errorf("SIOCSIFFLAGS with net_admin kept: %+v", d)
	}
	if d := mustNew(t, na).Decide(&Op{Kind: syscalls.KindIoctl, Syscall: "ioctl", Ioctl: "LOOP_CLR_FD", Paths: []Path{ex("/dev/loop0")}}, nil); d.Allow {
		t.Errorf("net_admin kept allows a non-socket ioctl: %+v", d)
	}
	// As a write the same op is decided like one: the terminal changes
	// of syscalls.Ioctls keep their foreign-pty rule.
	if d := p.Decide(&Op{Kind: syscalls.KindWrite, Syscall: "ioctl", Paths: []Path{ex("/dev/pts/3")}}, nil); d.Rule != RuleForeignPty {
		t.Errorf("TCSETS on a foreign pty: %+v", d)
	}
}

// TestDecideSubvolCreate: a btrfs subvolume or snapshot creation is a
// create of the new entry (and a snapshot's source must be writable too).
func TestDecideSubvolCreate(t *testing.T) {
	p := mustNew(t, baseConfig())
	tgt := func(res string) Path { return Path{Role: "target", Given: path.Base(res), Resolved: res} }
	src := func(res string) Path {
		return Path{Role: "source", Given: "fd 4", Resolved: res, Exists: true, IsDir: true}
	}
	cases := []struct {
		name   string
		paths  []Path
		allow  bool
		rule   Rule
		reason string
	}{
		{"subvol_in_root", []Path{tgt("/srv/sbx/sub")}, true, RuleInsideRoot, ""},
		{"subvol_outside", []Path{tgt("/home/u/bin")}, false, RuleOutsideRoots, "outside writable roots"},
		{"snap_in_root", []Path{tgt("/srv/sbx/snap"), src("/srv/sbx/sub")}, true, RuleInsideRoot, ""},
		{"snap_to_outside", []Path{tgt("/home/u/bin"), src("/srv/sbx/sub")}, false, RuleOutsideRoots, "target outside"},
		{"snap_of_outside", []Path{tgt("/srv/sbx/snap"), src("/home")}, false, RuleOutsideRoots, "source outside"},
		{"snap_of_other_root", []Path{tgt("/srv/sbx/snap"), src("/work/b")}, true, RuleInsideRoot, ""},
		// baseConfig denies reading /srv/sbx/.secret: a snapshot of the
		// tree above it would copy it to a name deny-read does not cover.
		{"snap_above_deny_read", []Path{tgt("/srv/sbx/snap"), src("/srv/sbx")}, false, RuleDenyRead, "source copies /srv/sbx, which holds deny-read /srv/sbx/.secret"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Decide(&Op{Kind: syscalls.KindCreate, Syscall: "ioctl", Paths: c.paths}, nil)
			if d.Allow != c.allow || d.Rule != c.rule || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("%+v, want allow %v rule %s reason with %q", d, c.allow, c.rule, c.reason)
			}
		})
	}
}

// TestUnreachableEndpoints: the listeners named in Config.Unreachable are
// denied to connect and send in every net mode; other addresses and ports,
// binds, and a disconnect are decided as before.
func TestUnreachableEndpoints(t *testing.T) {
	C, B := syscalls.KindConnect, syscalls.KindBind
	eps := []Endpoint{
		{Unix: "/var/tmp/tc/tracecell.sock", What: "the server"},
		{Addr: "127.0.0.1", Port: 8765},
		{Port: 9000},             // every interface
		{Addr: "::", Port: 9100}, // every interface, as ln.Addr gives it
		{Addr: "::1", Port: 9200},
	}
	cases := []struct {
		name string
		op   Op
		hit  bool
	}{
		{"unix socket", Op{Kind: C, Syscall: "connect", Family: "unix", Paths: []Path{ex("/var/tmp/tc/tracecell.sock")}}, true},
		{"unix sendto", Op{Kind: C, Syscall: "sendto", Family: "unix", Paths: []Path{ex("/var/tmp/tc/tracecell.sock")}}, true},
		{"unix other socket", Op{Kind: C, Family: "unix", Paths: []Path{ex("/var/tmp/tc/other.sock")}}, false},
		{"unix bind", Op{Kind: B, Family: "unix", Paths: []Path{ex("/var/tmp/tc/tracecell.sock")}}, false},
		{"abstract", Op{Kind: C, Family: "unix", Abstract: true, Addr: "@/var/tmp/tc/tracecell.sock"}, false},
		{"loopback port", Op{Kind: C, Family: "inet", Addr: "127.0.0.1", Port: 8765}, true},
		{"v4-mapped", Op{Kind: C, Family: "inet6", Addr: "::ffff:127.0.0.1", Port: 8765}, true},
		{"unspecified reaches loopback", Op{Kind: C, Family: "inet", Addr: "0.0.0.0", Port: 8765}, true},
		{"unspecified v6", Op{Kind: C, Family: "inet6", Addr: "::", Port: 9200}, true},
		{"other loopback address", Op{Kind: C, Family: "inet", Addr: "127.0.0.2", Port: 8765}, false},
		{"other port", Op{Kind: C, Family: "inet", Addr: "127.0.0.1", Port: 8766}, false},
		{"wildcard listener, any address", Op{Kind: C, Family: "inet", Addr: "10.1.2.3", Port: 9000}, true},
		{"wildcard listener as ::", Op{Kind: C, Family: "inet", Addr: "192.168.0.7", Port: 9100}, true},
		{"udp sendto", Op{Kind: C, Syscall: "sendto", Family: "inet", Addr: "127.0.0.1", Port: 8765}, true},
		{"AF_UNSPEC send", Op{Kind: C, Syscall: "sendmsg", Family: "unspec", Addr: "127.0.0.1", Port: 8765}, true},
		{"disconnect", Op{Kind: C, Syscall: "connect", Family: "unspec"}, false},
		{"bind to the port", Op{Kind: B, Family: "inet", Addr: "127.0.0.1", Port: 8765}, false},
	}
	for _, net := range []NetMode{NetDeny, NetLoopback, NetAllow} {
		c := baseConfig()
		c.Net = net
		plain := mustNew(t, c)
		c.Unreachable = eps
		p := mustNew(t, c)
		for _, tc := range cases {
			t.Run(net.String()+"/"+tc.name, func(t *testing.T) {
				d := p.Decide(&tc.op, owned)
				if !tc.hit {
					if want := plain.Decide(&tc.op, owned); d.Allow != want.Allow || d.Rule != want.Rule {
						t.Fatalf("Decide = %+v, want as without the endpoints: %+v", d, want)
					}
					return
				}
				if d.Allow || d.Rule != RuleUnreachable || d.Errno != syscall.EACCES || !strings.Contains(d.Reason, "never allowed") {
					t.Fatalf("Decide = %+v, want %s", d, RuleUnreachable)
				}
			})
		}
	}
	c := baseConfig()
	c.Unreachable = eps[:1]
	d := mustNew(t, c).Decide(&cases[0].op, nil)
	if want := "connect to /var/tmp/tc/tracecell.sock is never allowed, whatever the network policy: it is the server"; d.Reason != want {
		t.Errorf("reason %q, want %q", d.Reason, want)
	}
	for _, bad := range []Endpoint{{Unix: "rel.sock"}, {Unix: "/a/../b"}, {Port: 0}, {Addr: "127.0.0.1", Port: 70000}, {Addr: "nope", Port: 1}, {Unix: "/s", Port: 1}} {
		c := baseConfig()
		c.Unreachable = []Endpoint{bad}
		if _, err := New(c); err == nil {
			t.Errorf("New accepted the endpoint %+v", bad)
		}
	}
}

// TestPrivateScratch: with PrivateScratch, the scratch directory's entries
// are readable only when the tree made them (a session server's sessions
// share /dev/shm); the directory itself and everything else read as before.
func TestPrivateScratch(t *testing.T) {
	c := baseConfig()
	open := mustNew(t, c)
	c.PrivateScratch = true
	priv := mustNew(t, c)
	if !c.ChecksReads() {
		t.Fatal("ChecksReads is false with PrivateScratch: the tracer would not trap read-only opens")
	}
	for _, tc := range []struct {
		path   string
		l      Ledger
		denied bool
	}{
		{"/dev/shm/mine", owned, false},
		{"/dev/shm/mydir/x", owned, false},
		{"/dev/shm/mydir/hostfile", owned, true},
		{"/dev/shm/reused", owned, true},
		{"/dev/shm", owned, false},
		{"/dev/shm/psm_other", owned, true},
		{"/dev/shm/sem.other", nil, true},
		{"/dev/shm/mine", nil, true},
		{"/etc/hosts", nil, false},
		{"/srv/sbx/data.csv", nil, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			op := &Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{ex(tc.path)}}
			if d := open.Decide(op, tc.l); !d.Allow {
				t.Fatalf("without PrivateScratch: %+v", d)
			}
			d := priv.Decide(op, tc.l)
			if d.Allow == tc.denied {
				t.Fatalf("Decide = %+v, want denied %v", d, tc.denied)
			}
			if tc.denied && (d.Rule != RuleScratchNotOwned || d.Errno != syscall.EACCES || !strings.Contains(d.Reason, "/dev/shm")) {
				t.Fatalf("denial %+v", d)
			}
			if replaced := tc.path == "/dev/shm/reused"; tc.denied && strings.Contains(d.Reason, "replaced by another process") != replaced {
				t.Fatalf("reason %q: replaced by another process %v", d.Reason, replaced)
			}
		})
	}
}

// TestHeldOutside: an unlinked file or memfd reached through /proc/<pid>/fd
// of a process outside the tree (another session's worker) is denied; the
// tree's own is read as before.
func TestHeldOutside(t *testing.T) {
	p := mustNew(t, baseConfig())
	for _, tc := range []struct {
		path    Path
		allowed bool
	}{
		{Path{Resolved: "/memfd:secret (deleted)", HeldOutside: true}, false},
		{Path{Resolved: "/tmp/x (deleted)", HeldOutside: true}, false},
		{Path{Resolved: "/memfd:mine (deleted)"}, true},
	} {
		d := p.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{tc.path}}, nil)
		if d.Allow != tc.allowed || (!d.Allow && d.Rule != RuleProcRead) {
			t.Errorf("%+v: %+v", tc.path, d)
		}
	}
}

// TestDecidePrivilege: set-id bits and file capabilities are denied
// wherever the file is, the writable roots included; S_ISGID on a
// directory is allowed (it only makes new entries take its group).
func TestDecidePrivilege(t *testing.T) {
	p := mustNew(t, baseConfig())
	for _, c := range []struct {
		name string
		op   Op
		rule Rule
	}{
		{"chmod_setuid_in_root", Op{Kind: syscalls.KindChmod, Syscall: "chmod", Paths: []Path{ex("/srv/sbx/python3")}, SetID: SetUID}, RuleSetID},
		{"chmod_setgid_file", Op{Kind: syscalls.KindChmod, Syscall: "fchmodat", Paths: []Path{ex("/srv/sbx/a")}, SetID: SetGID}, RuleSetID},
		{"chmod_both", Op{Kind: syscalls.KindChmod, Syscall: "fchmod", Paths: []Path{ex("/srv/sbx/a")}, SetID: SetUID | SetGID}, RuleSetID},
		{"chmod_setgid_dir", Op{Kind: syscalls.KindChmod, Syscall: "chmod", Paths: []Path{dir("/srv/sbx/shared")}, SetID: SetGID}, RuleInsideRoot},
		{"chmod_setuid_dir", Op{Kind: syscalls.KindChmod, Syscall: "chmod", Paths: []Path{dir("/srv/sbx/shared")}, SetID: SetUID}, RuleSetID},
		{"creat_setuid", Op{Kind: syscalls.KindCreate, Syscall: "openat", Paths: []Path{newp("/srv/sbx/new")}, SetID: SetUID}, RuleSetID},
		{"creat_setgid_scratch", Op{Kind: syscalls.KindCreate, Syscall: "openat", Paths: []Path{newp("/dev/shm/x")}, SetID: SetGID}, RuleSetID},
		{"setuid_outside", Op{Kind: syscalls.KindChmod, Syscall: "chmod", Paths: []Path{ex("/etc/passwd")}, SetID: SetUID}, RuleSetID},
		{"plain_chmod", Op{Kind: syscalls.KindChmod, Syscall: "chmod", Paths: []Path{ex("/srv/sbx/a")}}, RuleInsideRoot},
		{"setcap", Op{Kind: syscalls.KindXattr, Syscall: "setxattr", Paths: []Path{ex("/srv/sbx/a")}, Xattr: XattrCaps}, RuleFileCaps},
		{"fsetcap", Op{Kind: syscalls.KindXattr, Syscall: "fsetxattr", Paths: []Path{ex("/srv/sbx/a")}, Xattr: XattrCaps}, RuleFileCaps},
		{"user_xattr", Op{Kind: syscalls.KindXattr, Syscall: "setxattr", Paths: []Path{ex("/srv/sbx/a")}, Xattr: "user.x"}, RuleInsideRoot},
		{"caps_lookalike", Op{Kind: syscalls.KindXattr, Syscall: "setxattr", Paths: []Path{ex("/srv/sbx/a")}, Xattr: "security.capability2"}, RuleInsideRoot},
	} {
		t.Run(c.name, func(t *testing.T) {
			errno := syscall.Errno(0)
			if !allowRules[c.rule] {
				errno = syscall.EPERM
			}
			check(t, p.Decide(&c.op, owned), c.rule, errno, nil)
		})
	}
}

// TestDecideFutex: the policy states the rule; the tracer found the why.
func TestDecideFutex(t *testing.T) {
	p := mustNew(t, baseConfig())
	check(t, p.Decide(&Op{Kind: syscalls.KindFutex, Syscall: "futex"}, nil), RuleInTree, 0, nil)
	check(t, p.Decide(&Op{Kind: syscalls.KindFutex, Syscall: "futex", FutexWhy: "the futex word at 0x1 lies in a read-only shared mapping of /dev/shm/sem.x"}, nil), RuleFutexMemory, syscall.EPERM, nil)
	d := p.Decide(&Op{Kind: syscalls.KindForbidden, Syscall: "mq_timedreceive"}, nil)
	check(t, d, RuleForbiddenSyscall, syscall.EPERM, nil)
	if !strings.Contains(d.Reason, "message queue") {
		t.Errorf("mq reason %q does not say why", d.Reason)
	}
}

// TestMayKnow: an errno may tell whether a path exists only where the
// tree may read it.
func TestMayKnow(t *testing.T) {
	open := mustNew(t, baseConfig())
	c := baseConfig()
	c.ReadRoots = []string{"/data"}
	restricted := mustNew(t, c)
	for _, x := range []struct {
		p    *Policy
		path string
		want bool
	}{
		{open, "/etc/hosts", true},
		{open, "/dev/shm/gone", true},
		{open, "/etc/shadow", false},
		{open, "/srv/sbx/.secret/x", false},
		{open, "/srv/sbx/../etc", false},
		{restricted, "/data/x", true},
		{restricted, "/srv/sbx/x", true},
		{restricted, "/home/u/.ssh", false},
	} {
		if got := x.p.MayKnow(x.path); got != x.want {
			t.Errorf("MayKnow(%s) = %v, want %v (read roots %v)", x.path, got, x.want, x.p.cfg.ReadRoots)
		}
	}
}

// TestDeletedRead: a file with no name (Deleted) is read-checked by its last
// directory, never by its link text, which the tree may own
// ("/dev/shm/spoof (deleted)" is in the test ledger): with PrivateScratch a
// scratch file is readable only from a directory the tree made; deny-read
// holds for the old name.
func TestDeletedRead(t *testing.T) {
	c := baseConfig()
	c.PrivateScratch = true
	p := mustNew(t, c)
	for _, tc := range []struct {
		old  string
		rule Rule // "" when allowed
	}{
		{"/dev/shm/spoof", RuleDeletedFile},
		{"/dev/shm/mine", RuleDeletedFile},
		{"/dev/shm/mydir/x", ""},
		{"/dev/shm/hostdir/x", RuleDeletedFile},
		{"/srv/sbx/.secret/key", RuleDenyRead},
		{"/srv/sbx/data.csv", ""},
		{"/memfd:x", ""},
	} {
		t.Run(tc.old, func(t *testing.T) {
			op := &Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{deleted(tc.old)}}
			d := p.Decide(op, owned)
			if tc.rule == "" {
				if !d.Allow {
					t.Fatalf("Decide = %+v, want allowed", d)
				}
				return
			}
			if d.Allow || d.Rule != tc.rule || d.Errno != syscall.EACCES {
				t.Fatalf("Decide = %+v, want %s, EACCES", d, tc.rule)
			}
		})
	}
}

// TestScratchOwnership: the tree owns exactly the scratch entries it made,
// while they hold what it made (red team F4a, F4b): not a name another
// process took over, not a host's file in the tree's own directory, not a
// directory holding such a file when renamed.
func TestScratchOwnership(t *testing.T) {
	p := mustNew(t, baseConfig())
	l := ledger{"/dev/shm/mine": true, "/dev/shm/mydir": true, "/dev/shm/mydir/x": true,
		"/dev/shm/mydir/sub": true, "/dev/shm/mydir/sub/hostfile": false,
		"/dev/shm/clean": true, "/dev/shm/clean/a": true,
		"/dev/shm/reused": false, "/dev/shm/reuseddir": false,
		"/dev/shm/sem.tmp": true}
	dirEx := func(s string) Path { q := ex(s); q.IsDir = true; return q }
	cases := []struct {
		name    string
		op      Op
		rule    Rule
		scratch []string
		reason  string // a part of the denial's reason
	}{
		{"write replaced file", Op{Kind: syscalls.KindWrite, Paths: []Path{ex("/dev/shm/reused")}}, RuleScratchNotOwned, nil, "replaced by another process"},
		{"unlink replaced file", Op{Kind: syscalls.KindDelete, Paths: []Path{ex("/dev/shm/reused")}}, RuleScratchNotOwned, nil, "replaced by another process"},
		{"create in replaced dir", Op{Kind: syscalls.KindCreate, Paths: []Path{newp("/dev/shm/reuseddir/f")}}, RuleScratchNotOwned, nil, "another process has since removed or moved"},
		{"write host file in own dir", Op{Kind: syscalls.KindWrite, Paths: []Path{ex("/dev/shm/mydir/hostfile")}}, RuleScratchNotOwned, nil, "only the entries it made itself"},
		{"unlink host file in own dir", Op{Kind: syscalls.KindDelete, Paths: []Path{ex("/dev/shm/mydir/hostfile")}}, RuleScratchNotOwned, nil, "only the entries it made itself"},
		{"chmod host file in own dir", Op{Kind: syscalls.KindChmod, Paths: []Path{ex("/dev/shm/mydir/hostfile")}}, RuleScratchNotOwned, nil, "only the entries it made itself"},
		{"rename over host file in own dir", Op{Kind: syscalls.KindRename, Paths: []Path{ex("/dev/shm/mydir/x"), ex("/dev/shm/mydir/hostfile")}}, RuleScratchNotOwned, nil, "target not created"},
		{"rename host file away", Op{Kind: syscalls.KindRename, Paths: []Path{ex("/dev/shm/mydir/hostfile"), newp("/dev/shm/mydir/y")}}, RuleScratchNotOwned, nil, "source not created"},
		{"link host file in own dir", Op{Kind: syscalls.KindLink, Paths: []Path{ex("/dev/shm/mydir/hostfile"), newp("/dev/shm/mydir/y")}}, RuleScratchNotOwned, nil, "source not created"},
		{"rename own dir holding a host file", Op{Kind: syscalls.KindRename, Paths: []Path{dirEx("/dev/shm/mydir"), newp("/dev/shm/moved")}}, RuleScratchNotOwned, nil, "holds /dev/shm/mydir/sub/hostfile, an entry it did not create"},
		{"exchange into own dir holding a host file", Op{Kind: syscalls.KindRename, Paths: []Path{ex("/dev/shm/mine"), dirEx("/dev/shm/mydir")}}, RuleScratchNotOwned, nil, "target renames /dev/shm/mydir"},
		// The tree's life cycle.
		{"rename own clean dir", Op{Kind: syscalls.KindRename, Paths: []Path{dirEx("/dev/shm/clean"), newp("/dev/shm/moved")}}, RuleScratchOwned, []string{"/dev/shm/moved"}, ""},
		{"create in own dir", Op{Kind: syscalls.KindCreate, Paths: []Path{newp("/dev/shm/mydir/new")}}, RuleScratchCreate, []string{"/dev/shm/mydir/new"}, ""},
		{"write own file in own dir", Op{Kind: syscalls.KindWrite, Paths: []Path{ex("/dev/shm/mydir/x")}}, RuleScratchOwned, nil, ""},
		{"rename own file within scratch", Op{Kind: syscalls.KindRename, Paths: []Path{ex("/dev/shm/mydir/x"), newp("/dev/shm/x2")}}, RuleScratchOwned, []string{"/dev/shm/x2"}, ""},
		{"rename own file over own file", Op{Kind: syscalls.KindRename, Paths: []Path{ex("/dev/shm/mine"), ex("/dev/shm/mydir/x")}}, RuleScratchOwned, nil, ""},
		{"recreate a name of its own that is gone", Op{Kind: syscalls.KindCreate, Paths: []Path{newp("/dev/shm/reused")}}, RuleScratchCreate, []string{"/dev/shm/reused"}, ""},
		// sem_open: a temporary name, linked to the final one.
		{"sem_open link", Op{Kind: syscalls.KindLink, Paths: []Path{ex("/dev/shm/sem.tmp"), newp("/dev/shm/sem.final")}}, RuleScratchOwned, []string{"/dev/shm/sem.final"}, ""},
		{"sem_open unlink temp", Op{Kind: syscalls.KindDelete, Paths: []Path{ex("/dev/shm/sem.tmp")}}, RuleScratchOwned, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := c.op
			op.Syscall = "test"
			d := p.Decide(&op, l)
			check(t, d, c.rule, syscall.EACCES, c.scratch)
			if !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("reason %q, want it to say %q", d.Reason, c.reason)
			}
		})
	}
}

// TestCtty: /dev/tty is decided as the terminal it names for the caller
// (Path.Ctty, the tracer's fact): its own pty or tracecell's terminal
// (OwnPty) passes, any other is foreign-pty naming /dev/tty and that
// terminal, whatever the default devices say of /dev/tty; a terminal that
// cannot be told is denied with the tracer's why; --allow-device gives a
// terminal back as for its name. Writes and checked reads alike.
func TestCtty(t *testing.T) {
	tty := func(res string, own bool, why string) Path {
		return Path{Given: DevTTY, Resolved: res, Exists: true, Ctty: true, OwnPty: own, CttyWhy: why}
	}
	cases := []struct {
		name    string
		devices []string
		p       Path
		rule    Rule
		reason  string // part of the reason of a denial
	}{
		{"own pty", nil, tty("/dev/pts/4", true, ""), RuleOwnPty, ""},
		{"tracecell's console", nil, tty("/dev/tty1", true, ""), RuleOwnPty, ""},
		{"foreign pty", nil, tty("/dev/pts/0", false, ""), RuleForeignPty, "/dev/tty is /dev/pts/0"},
		{"foreign console", nil, tty("/dev/tty2", false, ""), RuleForeignPty, "/dev/tty is /dev/tty2"},
		{"foreign serial line", nil, tty("/dev/ttyS0", false, ""), RuleForeignPty, "/dev/tty is /dev/ttyS0"},
		{"unnamed device", nil, tty("/dev/char/204:64", false, ""), RuleForeignPty, "/dev/char/204:64"},
		// The default device /dev/tty says nothing: not even when the
		// terminal could not be resolved and Resolved stayed /dev/tty.
		{"cannot tell", nil, tty(DevTTY, false, "which terminal fd 4 of /dev/tty refers to cannot be asked"), RuleForeignPty, "cannot be asked"},
		{"cannot tell, own caller", nil, tty("/dev/pts/4", true, "a process of the tree had /dev/pts/0"), RuleForeignPty, "/dev/pts/0"},
		{"allow-device pts star", []string{"/dev/pts/*"}, tty("/dev/pts/0", false, ""), RuleDevice, ""},
		{"allow-device that console", []string{"/dev/tty2"}, tty("/dev/tty2", false, ""), RuleDevice, ""},
		{"allow-device another pty", []string{"/dev/pts/7"}, tty("/dev/pts/0", false, ""), RuleForeignPty, "/dev/pts/0"},
		{"allow-device pts star, cannot tell", []string{"/dev/pts/*"}, tty("/dev/pts/0", false, "cannot be asked"), RuleForeignPty, "cannot be asked"},
		// Deny-read of the terminal's node wins, as for its name.
		{"deny-read", nil, tty("/srv/sbx/.secret/tty", true, ""), RuleDenyRead, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Devices = append(cfg.Devices, c.devices...)
			p := mustNew(t, cfg)
			for _, op := range []*Op{
				{Kind: syscalls.KindWrite, Syscall: "openat", Paths: []Path{c.p}},
				{Kind: syscalls.KindWrite, Syscall: "ioctl", Ioctl: "TCSETS", Paths: []Path{c.p}},
				{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{c.p}},
			} {
				d := p.Decide(op, nil)
				want := c.rule
				if op.Kind == syscalls.KindRead && d.Allow == allowRules[c.rule] && allowRules[c.rule] {
					want = RuleRead
				}
				check(t, d, want, syscall.EACCES, nil)
				if !d.Allow && !strings.Contains(d.Reason, c.reason) {
					t.Errorf("%v: reason %q does not say %q", op.Kind, d.Reason, c.reason)
				}
			}
		})
	}
	// Only for opens and terminal changes: a chmod of /dev/tty is of the
	// node, decided by its name (outside every root).
	pa := tty("/dev/pts/4", true, "")
	if d := mustNew(t, baseConfig()).Decide(&Op{Kind: syscalls.KindChmod, Paths: []Path{pa}}, nil); d.Allow {
		t.Errorf("chmod allowed: %+v", d)
	}
}

// A block device holds the raw blocks of every file on it: where reads are
// restricted it is refused with the rule that protects those files, unless
// --allow-device names it (round 56 of the red team).
func TestDecideReadBlockDevice(t *testing.T) {
	blk := func(p string) Path { x := ex(p); x.BlockDevice = true; return x }
	denyOnly := baseConfig() // has deny-read entries
	rootsOnly := baseConfig()
	rootsOnly.DenyRead = nil
	rootsOnly.ReadRoots = []string{"/data", "/dev"}
	openReads := baseConfig()
	openReads.DenyRead = nil
	allowed := baseConfig()
	allowed.Devices = append(allowed.Devices, "/dev/loop*")
	for _, c := range []struct {
		name string
		c    Config
		path Path
		rule Rule
	}{
		{"deny-read", denyOnly, blk("/dev/loop3"), RuleDenyRead},
		{"deny-read, a char device", denyOnly, ex("/dev/loop3"), RuleRead},
		{"read roots that hold /dev", rootsOnly, blk("/dev/vda"), RuleReadNotAllowed},
		{"open reads", openReads, blk("/dev/vda"), RuleRead},
		{"--allow-device", allowed, blk("/dev/loop3"), RuleRead},
		{"--allow-device, another device", allowed, blk("/dev/vda"), RuleDenyRead},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mustNew(t, c.c).Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{c.path}}, nil)
			check(t, d, c.rule, syscall.EACCES, nil)
			if !d.Allow && !strings.Contains(d.Reason, "block device") {
				t.Errorf("reason %q does not say why", d.Reason)
			}
		})
	}
}

// A deny-read entry's views (the same files through another mount) are
// denied like it, and say so; a view must name one of the entries.
func TestDenyReadViews(t *testing.T) {
	c := baseConfig()
	c.DenyRead = []string{"/srv/data"}
	c.DenyReadViews = []View{{Path: "/mnt/alias", Of: "/srv/data"}, {Path: "/srv/sbx/d/mounted", Of: "/srv/data"}}
	p := mustNew(t, c)
	for _, tc := range []struct {
		name string
		kind syscalls.Kind
		path []Path
		rule Rule
	}{
		{"read through the view", syscalls.KindRead, []Path{ex("/mnt/alias/x")}, RuleDenyRead},
		{"the view itself", syscalls.KindRead, []Path{dir("/mnt/alias")}, RuleDenyRead},
		{"beside the view", syscalls.KindRead, []Path{ex("/mnt/aliasx")}, RuleRead},
		{"rename of a directory above a view in the sandbox", syscalls.KindRename, []Path{dir("/srv/sbx/d"), newp("/srv/sbx/e")}, RuleDenyRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(&Op{Kind: tc.kind, Syscall: "openat", Paths: tc.path}, nil)
			if d.Rule != tc.rule {
				t.Fatalf("rule %s (%s), want %s", d.Rule, d.Reason, tc.rule)
			}
			if !d.Allow && !strings.Contains(d.Reason, "/srv/data") {
				t.Errorf("reason %q does not name the entry", d.Reason)
			}
		})
	}
	// A sandbox that is itself a view (a bind mount of a directory of a
	// denied tree) stays readable: the more specific grant wins.
	mounted := baseConfig()
	mounted.WriteRoots = []string{"/work"}
	mounted.DenyRead = []string{"/home"}
	mounted.DenyReadViews = []View{{Path: "/work", Of: "/home", Inside: true}, {Path: "/mnt/home", Of: "/home"}}
	mp := mustNew(t, mounted)
	for res, rule := range map[string]Rule{"/work/x": RuleRead, "/work": RuleRead, "/mnt/home/u/x": RuleDenyRead, "/home/u/project/x": RuleDenyRead} {
		if d := mp.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{ex(res)}}, nil); d.Rule != rule {
			t.Errorf("sandbox that is a view: read %s: %s (%s), want %s", res, d.Rule, d.Reason, rule)
		}
	}
	// One that shows the entry itself is not carved out, as a root equal
	// to the entry is not (round 58 of the red team).
	whole := mounted
	whole.DenyReadViews = []View{{Path: "/work", Of: "/home"}}
	if d := mustNew(t, whole).Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{ex("/work/x")}}, nil); d.Rule != RuleDenyRead {
		t.Errorf("sandbox that is a view of the entry itself: read /work/x: %s (%s), want deny-read", d.Rule, d.Reason)
	}
	bad := baseConfig()
	bad.DenyReadViews = []View{{Path: "/mnt/alias", Of: "/srv/other"}}
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "/srv/other") {
		t.Errorf("New with a view of no entry: %v", err)
	}
}

// A deny-read file is denied by its identity under any name (a hard link);
// a directory with a matching inode number, or a file of another device,
// is not it.
func TestDenyReadFiles(t *testing.T) {
	c := baseConfig()
	c.DenyRead = []string{"/home/u/.env"}
	c.DenyReadFiles = []FileID{{Dev: 8, Ino: 77, Of: "/home/u/.env"}}
	p := mustNew(t, c)
	id := func(pa Path, dev, ino uint64) Path { pa.Dev, pa.Ino = dev, ino; return pa }
	for _, tc := range []struct {
		name string
		path Path
		rule Rule
	}{
		{"a hard link", id(ex("/backup/env"), 8, 77), RuleDenyRead},
		{"another device", id(ex("/backup/env"), 9, 77), RuleRead},
		{"a directory", id(dir("/backup/envdir"), 8, 77), RuleRead},
		{"unknown identity", ex("/backup/env"), RuleRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{tc.path}}, nil)
			if d.Rule != tc.rule {
				t.Fatalf("rule %s (%s), want %s", d.Rule, d.Reason, tc.rule)
			}
		})
	}
	c.DenyReadFiles = []FileID{{Dev: 8, Ino: 77, Of: "/elsewhere"}}
	if _, err := New(c); err == nil {
		t.Error("New accepted a deny-read file of no entry")
	}
}

// A path the tracer found at the end of a deny-read entry's symlinks, as
// they point now, is denied and the entry named; a DenyLink that is no
// entry of the config is not trusted.
func TestDenyReadLinks(t *testing.T) {
	c := baseConfig()
	c.DenyRead = append(c.DenyRead, "/vol/..2024_v1/token")
	c.DenyReadLinks = []string{"/vol/token"}
	p := mustNew(t, c)
	pa := ex("/vol/..2024_v2/token")
	pa.DenyLink = "/vol/token"
	d := p.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{pa}}, nil)
	if d.Rule != RuleDenyRead || !strings.Contains(d.Reason, "/vol/token") {
		t.Errorf("%s (%s), want deny-read naming /vol/token", d.Rule, d.Reason)
	}
	pa.DenyLink = "/elsewhere"
	if d := p.Decide(&Op{Kind: syscalls.KindRead, Syscall: "openat", Paths: []Path{pa}}, nil); d.Rule != RuleRead {
		t.Errorf("an unknown link: %s (%s)", d.Rule, d.Reason)
	}
	c.DenyReadLinks = []string{"vol/token"}
	if _, err := New(c); err == nil {
		t.Error("New accepted a relative deny-read link")
	}
}
