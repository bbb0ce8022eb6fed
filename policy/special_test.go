package policy

import (
	"strings"
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/syscalls"
)

// TestSpecialReopenForWrite: a pipe or other non-file object reopened for
// writing through /proc/<pid>/fd/N (or task/<tid>/fd/N) is allowed only
// when the process is in the tree and that fd is itself open for writing.
// A red team opened a host process's pipe read-only through
// /proc/<hostpid>/fd/0 (read-only opens are not checked), then reopened its
// own /proc/self/fd/N for writing and wrote into the host's pipe (F1).
func TestSpecialReopenForWrite(t *testing.T) {
	p := mustNew(t, baseConfig())
	cases := []struct {
		name     string
		kind     syscalls.Kind
		path     Path
		rule     Rule
		inReason []string // for a denial: what the reason must name
	}{
		{"write end of the tree", syscalls.KindWrite,
			Path{Resolved: "/proc/42/fd/1", Exists: true, Special: "pipe:[7]", SpecialInTree: true, SpecialWritable: true},
			RuleSpecialObject, nil},
		{"write end through task", syscalls.KindWrite,
			Path{Resolved: "/proc/42/task/43/fd/9", Exists: true, Special: "pipe:[7]", SpecialInTree: true, SpecialWritable: true},
			RuleSpecialObject, nil},
		{"socket open read-write", syscalls.KindWrite,
			Path{Resolved: "/proc/42/fd/3", Exists: true, Special: "socket:[8]", SpecialInTree: true, SpecialWritable: true},
			RuleSpecialObject, nil},
		{"host pipe held read-only", syscalls.KindWrite,
			Path{Resolved: "/proc/42/fd/5", Exists: true, Special: "pipe:[99]", SpecialInTree: true},
			RuleProcWrite, []string{"pipe:[99]", "fd 5", "pid 42", "not open for writing"}},
		{"read end through task", syscalls.KindWrite,
			Path{Resolved: "/proc/42/task/43/fd/3", Exists: true, Special: "pipe:[7]", SpecialInTree: true},
			RuleProcWrite, []string{"pipe:[7]", "fd 3", "pid 42"}},
		{"namespace link", syscalls.KindWrite,
			Path{Resolved: "/proc/42/ns/net", Exists: true, Special: "net:[4026531992]", SpecialInTree: true},
			RuleProcWrite, []string{"net:[4026531992]", "/proc/42/ns/net"}},
		{"host process pipe", syscalls.KindWrite,
			Path{Resolved: "/proc/1/fd/0", Exists: true, Special: "pipe:[99]"},
			RuleProcWrite, []string{"pipe:[99]", "pid 1", "outside the traced tree"}},
		{"host write end", syscalls.KindWrite,
			Path{Resolved: "/proc/1/fd/1", Exists: true, Special: "pipe:[99]", SpecialWritable: true},
			RuleProcWrite, []string{"outside the traced tree"}},
		{"chmod of write end", syscalls.KindChmod,
			Path{Resolved: "/proc/42/fd/1", Exists: true, Special: "pipe:[7]", SpecialInTree: true, SpecialWritable: true},
			RuleProcWrite, []string{"chmod of pipe:[7]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Decide(&Op{Kind: c.kind, Syscall: "openat", Paths: []Path{c.path}}, nil)
			check(t, d, c.rule, syscall.EACCES, nil)
			for _, s := range c.inReason {
				if !strings.Contains(d.Reason, s) {
					t.Errorf("reason %q does not name %q", d.Reason, s)
				}
			}
		})
	}
}

func TestFdOwner(t *testing.T) {
	for _, c := range []struct{ res, want string }{
		{"/proc/42/fd/3", "pipe:[1] (fd 3 of pid 42)"},
		{"/proc/42/task/43/fd/10", "pipe:[1] (fd 10 of thread 43 of pid 42)"},
		{"/proc/42/ns/net", "pipe:[1] (/proc/42/ns/net)"},
	} {
		t.Run(c.res, func(t *testing.T) {
			if got := fdOwner(c.res, "pipe:[1]"); got != c.want {
				t.Errorf("fdOwner(%q) = %q, want %q", c.res, got, c.want)
			}
		})
	}
}
