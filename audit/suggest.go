package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
)

// Suggestion is a policy learned from what a run did (an audit-mode run:
// every would-be denial is in its report or trace), in the policy-file
// format of package config.
type Suggestion struct {
	Write     []Grant
	Read      []Grant // nil: reads stay open (the recorded policy did not restrict them)
	DenyRead  []Grant // kept from the recorded policy
	AllowExec []Grant
	Devices   []Grant
	// Scratch is the recorded run's scratch directories, when a recorded
	// policy says them (ScratchKnown): left out, the default (/dev/shm)
	// would come back even where the run had none.
	Scratch      []string
	ScratchKnown bool
	Net          string
	NetWhy       []string
	// Ungrantable are operations no policy file can allow (another
	// process's memory, a forbidden syscall, ...): the program must not
	// do them.
	Ungrantable []string
	// Incomplete says why the suggestion may miss grants (caps hit).
	Incomplete []string
	Sources    []string
	// Session: learned from a session server's sessions, whose own
	// sandboxes are writable without a grant.
	Session bool
	// Limits are the recorded run's resource limits, carried over; nil when
	// no source records them (traces alone).
	Limits *Limits
	// LimitNotes say what about the limits needs the operator's eye.
	LimitNotes []string
}

// Grant is one value of the policy and what needed it.
type Grant struct {
	Value string
	Why   []string // one line per operation that needed it (capped)
	More  int64    // operations past the listed ones
	// NotSuggested, when set, says why the value is left out of the policy
	// (it is written as a comment): it would allow more than the run did.
	NotSuggested string
	// Note is said of the value under it (how it is written, and why).
	Note string
}

const maxWhy = 3

type grants struct {
	m     map[string]*Grant
	order []string
}

func (g *grants) add(v, why string, count int64) {
	if g.m == nil {
		g.m = map[string]*Grant{}
	}
	x := g.m[v]
	if x == nil {
		x = &Grant{Value: v}
		g.m[v] = x
		g.order = append(g.order, v)
	}
	if why == "" {
		return
	}
	if len(x.Why) < maxWhy && !containsStr(x.Why, why) {
		x.Why = append(x.Why, why)
	} else if !containsStr(x.Why, why) {
		x.More += count
	}
}

func (g *grants) list() []Grant {
	var out []Grant
	sort.Strings(g.order)
	for _, v := range g.order {
		out = append(out, *g.m[v])
	}
	return out
}

// under reports whether p is root or inside it.
func under(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// collapse drops the grants inside another grant, folding their reasons
// into it.
func collapse(l []Grant) []Grant {
	sort.Slice(l, func(i, j int) bool {
		return len(l[i].Value) < len(l[j].Value) || len(l[i].Value) == len(l[j].Value) && l[i].Value < l[j].Value
	})
	var out []Grant
next:
	for _, g := range l {
		for k := range out {
			if under(g.Value, out[k].Value) {
				for _, w := range g.Why {
					if len(out[k].Why) < maxWhy {
						out[k].Why = append(out[k].Why, w)
					} else {
						out[k].More++
					}
				}
				out[k].More += g.More
				continue next
			}
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

func why(d *Denial) string {
	s := fmt.Sprintf("%s(%s) by %s", opName(d), cut(denialObject(d), 0), cut(d.Program, 30))
	if d.Count > 1 {
		s += fmt.Sprintf(" ×%d", d.Count)
	}
	return s
}

// Suggest learns a policy from s: the recorded policy's grants, plus what
// each would-be-denied (or denied) operation needed, and nothing more.
func Suggest(s *Summary) *Suggestion {
	sg := &Suggestion{}
	var write, read, deny, exec, dev grants
	var base *policy.Config
	baseAt := -1
	for i := range s.Sources {
		sg.Sources = append(sg.Sources, s.Sources[i].Name)
		if base == nil && s.Sources[i].Policy != nil {
			base, baseAt = s.Sources[i].Policy, i
		}
	}
	sg.suggestLimits(s, baseAt)
	net := policy.NetDeny
	var netWhy []string
	needNet := func(m policy.NetMode, w string) {
		if m > net {
			net = m
		}
		if len(netWhy) < maxWhy*2 {
			netWhy = append(netWhy, w)
		}
	}
	readRestricted := false
	deniedRead := map[string]bool{}
	// The recorded policy's own read roots and devices, kept as the
	// operator wrote them; the rest are learned from the run.
	baseRead, baseDev := map[string]bool{}, map[string]bool{}
	readDir := map[string]bool{} // read paths the run opened as directories
	// A session server's sandboxes live in its state directory, which no
	// --write of the server may overlap (server.checkWriteRoots); the
	// session's own sandbox is writable without a grant.
	stateDir := ""
	for _, src := range s.Sources {
		if src.Kind == "session-execution" && src.Sandbox != "" {
			stateDir = filepath.Dir(src.Sandbox)
		}
	}
	sg.Session = stateDir != ""
	if base != nil {
		sg.Scratch, sg.ScratchKnown = base.Scratch, true
		for _, w := range base.WriteRoots {
			if stateDir != "" && under(w, stateDir) {
				continue
			}
			write.add(w, "a writable root of the recorded run", 0)
		}
		if base.ReadRoots != nil {
			readRestricted = true
			for _, r := range base.ReadRoots {
				read.add(r, "readable in the recorded run", 0)
				baseRead[r] = true
			}
		}
		for _, x := range base.AllowExec {
			exec.add(x, "allowed in the recorded run", 0)
		}
		def := map[string]bool{}
		for _, d := range policy.DefaultDevices() {
			def[d] = true
		}
		for _, d := range base.Devices {
			if !def[d] {
				dev.add(d, "allowed in the recorded run", 0)
				baseDev[d] = true
			}
		}
		if base.Net > net {
			net = base.Net
			netWhy = append(netWhy, "the network mode of the recorded run")
		}
	} else if s.hasTraceSource() {
		// A trace alone names no policy: learn what the policy in force
		// allowed from the allowed events and the rules that allowed them.
		for _, f := range s.Files {
			w := fmt.Sprintf("%s %s by %s ×%d (allowed)", f.Kind, fileObject(f, pathBudget), strings.Join(f.Programs, ","), f.Count)
			switch f.Rule {
			case policy.RuleInsideRoot, "":
				for _, p := range f.Paths {
					if dir := grantDir(p, f.Kind, false); dir != "" && dir != "/" {
						write.add(dir, w, f.Count)
					}
				}
			case policy.RuleDevice:
				if !isDefaultDevice(f.Paths[0]) {
					dev.add(f.Paths[0], w, f.Count)
				}
			}
			// Scratch (/dev/shm), the tree's own ptys and pipes need no grant.
		}
		for _, p := range s.Processes {
			for _, x := range p.Execs {
				if x.Decision == "allow" && x.Rule == policy.RuleAllowExec {
					exec.add(x.Program, fmt.Sprintf("exec %s by %s[%d] (allowed)", elided(x.Given, pathBudget), p.Program, p.Pid), 1)
				}
			}
		}
		for _, n := range s.Network {
			if n.Decision != "allow" {
				continue
			}
			switch n.Rule {
			case policy.RuleNetAllow:
				needNet(policy.NetAllow, fmt.Sprintf("%s %s by %s (allowed)", n.Syscall, netObject(n), n.Program))
			case policy.RuleLoopback:
				needNet(policy.NetLoopback, fmt.Sprintf("%s %s by %s (allowed)", n.Syscall, netObject(n), n.Program))
			}
		}
	}
	if s.DenialKeysDropped > 0 {
		sg.Incomplete = append(sg.Incomplete, fmt.Sprintf("%d distinct denied operations past the report's cap were not examined", s.DenialKeysDropped))
	}
	for _, src := range s.Sources {
		if src.DenialsDropped > 0 {
			sg.Incomplete = append(sg.Incomplete, fmt.Sprintf("%s: %d denials past the recorder's cap are not in it", src.Name, src.DenialsDropped))
		}
	}
	for _, g := range s.Denials {
		for _, d := range g.Ops {
			w := why(d)
			switch g.Rule {
			case policy.RuleOutsideRoots, policy.RuleRootItself, policy.RuleUnixOutsideRoots:
				for _, p := range d.Paths {
					if p.Special != "" {
						continue
					}
					r := p.Resolved
					if strings.HasPrefix(r, "/dev/") && d.Kind == "write" && p.Exists && !p.IsDir {
						dev.add(r, w, d.Count)
						continue
					}
					dir := grantDir(r, d.Kind, p.Exists && p.IsDir && g.Rule != policy.RuleRootItself)
					if dir == "" || dir == "/" {
						sg.Ungrantable = append(sg.Ungrantable, w+": would need the whole file system writable")
						continue
					}
					if stateDir != "" && (under(dir, stateDir) || under(stateDir, dir)) {
						sg.Ungrantable = append(sg.Ungrantable, w+": "+dir+" overlaps the server's state directory "+stateDir+", which a server's --write may not")
						continue
					}
					write.add(dir, w, d.Count)
				}
			case policy.RuleExecNotAllowed:
				for _, p := range d.Paths {
					if p.Resolved != "" {
						exec.add(p.Resolved, w, d.Count)
					}
				}
			case policy.RuleDenyRead:
				for _, p := range d.Paths {
					deniedRead[p.Resolved] = true
				}
				deny.add("", w, d.Count) // reasons only; entries computed below
			case policy.RuleReadNotAllowed:
				for _, p := range d.Paths {
					if p.Resolved != "" {
						read.add(p.Resolved, w, d.Count)
						if p.IsDir || openedAsDir(d, p) {
							readDir[p.Resolved] = true
						}
					}
				}
				readRestricted = true
			case policy.RuleNetDeny, policy.RuleNetLoopback:
				mode := policy.NetAllow
				if a, err := netip.ParseAddr(d.Address); err == nil && a.Unmap().IsLoopback() {
					mode = policy.NetLoopback
				}
				needNet(mode, w)
			case policy.RuleNetFamily, policy.RuleUnixAbstract:
				needNet(policy.NetAllow, w)
			default:
				sg.Ungrantable = append(sg.Ungrantable, fmt.Sprintf("%s: %s (rule %s)", w, cut(d.Reason, 160), g.Rule))
			}
		}
	}
	sg.Write = collapse(write.list())
	if readRestricted {
		sg.Read = read.list()
		if sg.Read == nil {
			sg.Read = []Grant{}
		}
	}
	sg.AllowExec = exec.list()
	// Where the tree can write (and so put a program of its own) under
	// the suggested policy, or could in the recorded run.
	var writable []string
	for _, g := range sg.Write {
		writable = append(writable, g.Value)
	}
	if base != nil {
		writable = append(writable, base.WriteRoots...)
		writable = append(writable, base.Scratch...)
	}
	for _, src := range s.Sources {
		if src.Sandbox != "" {
			writable = append(writable, src.Sandbox)
		}
	}
	if stateDir != "" {
		writable = append(writable, stateDir)
	}
	for _, d := range policy.DefaultScratch() { // the suggestion names no scratch: the default's
		writable = append(writable, d)
		if r, err := filepath.EvalSymlinks(d); err == nil {
			writable = append(writable, r)
		}
	}
	for i := range sg.AllowExec {
		execGrant(&sg.AllowExec[i], writable)
	}
	for i := range sg.Read {
		if g := &sg.Read[i]; !baseRead[g.Value] {
			readGrant(g, readDir[g.Value], writable)
		}
	}
	sg.Devices = dev.list()
	for i := range sg.Devices {
		if g := &sg.Devices[i]; !baseDev[g.Value] {
			deviceGrant(g)
		}
	}
	if base == nil && s.hasTraceSource() {
		sg.Incomplete = append(sg.Incomplete, "no recorded policy among the sources (a trace alone): whether the run's reads were restricted, and its deny_read entries, are not known; the reads it was denied stay denied below; compare with the policy it ran under")
		var denied []string
		for p := range deniedRead {
			if p != "" {
				denied = append(denied, p)
			}
		}
		sort.Strings(denied)
		for _, p := range denied {
			g := Grant{Value: p, Note: "denied by a deny_read entry of the recorded run (a trace does not say which): kept denied"}
			if x := deny.m[""]; x != nil {
				g.Why, g.More = x.Why, x.More
			}
			sg.DenyRead = append(sg.DenyRead, g)
		}
	}
	if base != nil {
		for _, d := range base.DenyRead {
			hit := false
			for p := range deniedRead {
				if under(p, d) {
					hit = true
				}
			}
			if hit {
				// Kept: the program under audit chose what it read, and a
				// suggestion that dropped every deny_read entry it tried
				// (~/.ssh) would hand it the secrets the operator denied.
				g := Grant{Value: d, Note: "the run tried to read here and was denied; the suggestion keeps it denied: remove this entry yourself only if the program must read it"}
				if x := deny.m[""]; x != nil {
					g.Why, g.More = x.Why, x.More
				}
				sg.DenyRead = append(sg.DenyRead, g)
			} else {
				sg.DenyRead = append(sg.DenyRead, Grant{Value: d, Why: []string{"denied in the recorded run and never read"}})
			}
		}
	}
	sg.Net = net.String()
	sg.NetWhy = netWhy
	return sg
}

// execGrant makes g, a program the run executed, an allow_exec value that
// allows that file and nothing else, or leaves it out (NotSuggested).
// config reads an allow_exec value holding one of *?[\\ as a pattern, and
// one naming a directory as every program in it; and allow_exec allows
// whatever is at the path when the tree execs it, so a program in a
// directory the tree can write is the tree's to replace. A program that is
// not on this host (deleted before or since it ran) is left out too: policy
// check rejects an allow_exec entry that names no file.
func execGrant(g *Grant, writable []string) {
	v := g.Value
	if !strings.HasPrefix(v, "/") || path.Clean(v) != v {
		g.NotSuggested = "not an absolute, clean path: allow_exec would look it up elsewhere"
		return
	}
	for _, w := range writable {
		if policy.Under(v, w) {
			g.NotSuggested = fmt.Sprintf("under %s, which the tree can write: it could replace the program with its own", w)
			return
		}
	}
	// The kernel names a program deleted before it ran (a memfd, an
	// unlinked file, exec'd through /proc/self/fd/N) "PATH (deleted)":
	// no file is there to allow, and policy check rejects an allow_exec
	// entry naming none, which makes the whole policy unusable.
	st, err := os.Stat(v)
	switch {
	case strings.HasSuffix(v, " (deleted)"):
		g.NotSuggested = "the program was deleted before it ran (a memfd or an unlinked file, exec'd through /proc/self/fd): no file at this path is the one that ran, and allow_exec cannot name it"
		return
	case errors.Is(err, fs.ErrNotExist):
		g.NotSuggested = "no such file on this host (deleted since the run?): policy check rejects an allow_exec entry that names no file"
		return
	case err != nil:
		why := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			why = pe.Err // the path is the value the comment names
		}
		g.NotSuggested = fmt.Sprintf("cannot be looked up on this host (%v): policy check would reject it", why)
		return
	case st.IsDir():
		g.NotSuggested = "a directory on this host: the kernel cannot exec it, and allow_exec would allow every program in it"
		return
	}
	if policy.IsExecPattern(v) {
		g.Value = escapeMeta(v)
		g.Note = `the name holds one of *?[\, which allow_exec reads as a pattern: each is escaped with \, so the pattern matches this file only`
	}
}

// readGrant leaves g, a path the run read outside the read roots, out of
// the suggestion (NotSuggested) when it is a directory: the run opened it
// (to list it), and a read root would make everything below it readable
// (a run that listed / would lift the read restriction). dir says the run
// saw a directory; the path is checked on this host too.
func readGrant(g *Grant, dir bool, writable []string) {
	// A read root is resolved when the policy is loaded: a file the tree
	// can replace becomes whatever it leaves there (a symlink to /, and
	// every file is readable on the next run).
	for _, w := range writable {
		if policy.Under(g.Value, w) {
			g.NotSuggested = fmt.Sprintf("under %s, which the tree can write: it could put a symlink there, and a read root is resolved when the policy is loaded (a link to / would open every file)", w)
			return
		}
	}
	if !dir {
		st, err := os.Stat(g.Value)
		dir = err == nil && st.IsDir()
	}
	if dir {
		g.NotSuggested = "the run opened this directory (to list it); a read root grants everything below it: add it yourself if the program must list it"
	}
}

// openedAsDir reports whether the run named p as a directory (O_DIRECTORY,
// a trailing slash), which it may do of a path that does not exist.
func openedAsDir(d *Denial, p policy.Path) bool {
	return strings.HasSuffix(p.Given, "/") || slices.Contains(strings.Split(d.Flags, "|"), "O_DIRECTORY")
}

// deviceGrant makes g, a path under /dev/ the run wrote, an allow_device
// value that allows that device and nothing else, or leaves it out
// (NotSuggested). allow_device values are path.Match patterns (a file
// named /dev/mqueue/q* would allow every queue), and a path that is not a
// device (a message queue, a file in /dev/shm) is no device grant.
func deviceGrant(g *Grant) {
	st, err := os.Lstat(g.Value)
	if err != nil || st.Mode()&os.ModeDevice == 0 {
		g.NotSuggested = "not a character or block device on this host: allow_device is for devices"
		return
	}
	if strings.ContainsAny(g.Value, execMeta) {
		g.Value = escapeMeta(g.Value)
		g.Note = `the name holds one of *?[\, which allow_device reads as a pattern: each is escaped with \, so the pattern matches this device only`
	}
}

// execMeta are the characters of a path.Match pattern (and of an exec
// pattern, policy.IsExecPattern), which path.Match lets a backslash escape.
const execMeta = `*?[\`

// escapeMeta escapes each character of execMeta in v with a backslash: as
// a path.Match pattern, the result matches v only.
func escapeMeta(v string) string { return backslashed(v, execMeta) }

func isDefaultDevice(p string) bool {
	for _, pat := range policy.DefaultDevices() {
		if ok, _ := filepath.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// broad names a grant that opens much more than the run used: a top-level
// directory (/etc, /usr, /home, /tmp) or the user's home.
func broad(dir string) bool {
	if dir == "/" || strings.Count(strings.TrimSuffix(dir, "/"), "/") == 1 {
		return true
	}
	home, err := os.UserHomeDir()
	return err == nil && dir == filepath.Clean(home)
}

// grantDir is the writable root an operation on p needs: its directory
// (write roots are directories, and creating, deleting or renaming an entry
// changes its directory), or p itself when p is an existing directory whose
// own attributes or contents were changed.
func grantDir(p, kind string, isDir bool) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	if isDir && (kind == "chmod" || kind == "chown" || kind == "xattr" || kind == "write") {
		return p
	}
	return filepath.Dir(p)
}

// WriteYAML writes the suggestion as a commented policy file.
func (sg *Suggestion) WriteYAML(w io.Writer) error {
	out := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	q := yamlQuote
	p("# tracecell policy suggested by `tracecell policy suggest` from:\n")
	for _, s := range sg.Sources {
		p("#   %s\n", oneLineComment(s))
	}
	p("# It allows what the recorded run did and nothing more. Check each grant:\n")
	p("# the comment under it says which operations needed it.\n")
	for _, i := range sg.Incomplete {
		p("# INCOMPLETE: %s\n", oneLineComment(i))
	}
	p("mode: enforce\n")
	reasons := func(g Grant) {
		for _, y := range g.Why {
			p("    #   needed by %s\n", oneLineComment(y))
		}
		if g.More > 0 {
			p("    #   and %d more operations\n", g.More)
		}
	}
	grantList := func(key string, l []Grant, emptyNote string) {
		var live, left []Grant
		for _, g := range l {
			if g.NotSuggested == "" && !utf8.ValidString(g.Value) {
				// YAML is Unicode text: no escape names a byte that is
				// not UTF-8, so no policy file can name this path.
				g.NotSuggested = "the name is not valid UTF-8, which a policy file cannot spell"
			}
			if g.NotSuggested != "" {
				left = append(left, g)
			} else {
				live = append(live, g)
			}
		}
		switch {
		case len(l) == 0:
			if emptyNote != "" {
				p("# %s: none (%s)\n", key, emptyNote)
			}
			return
		case len(live) == 0:
			p("# %s: none suggested\n", key)
		default:
			p("%s:\n", key)
		}
		for _, g := range live {
			p("  - %s\n", q(g.Value))
			if g.Note != "" {
				p("    #   NOTE: %s\n", oneLineComment(g.Note))
			}
			if key == "write" && broad(g.Value) {
				p("    #   WARNING: all of %s becomes writable; better make the program write elsewhere\n", oneLineComment(g.Value))
			}
			reasons(g)
		}
		for _, g := range left {
			p("  # NOT SUGGESTED: %s: %s\n", q(g.Value), oneLineComment(g.NotSuggested))
			reasons(g)
		}
	}
	if sg.Session {
		grantList("write", sg.Write, "each session writes its own sandbox")
	} else {
		grantList("write", sg.Write, "a fresh sandbox under $TMPDIR per run")
	}
	if sg.Read != nil {
		if len(sg.Read) == 0 {
			p("read: []  # reads restricted to the runtime and the writable roots\n")
		} else {
			grantList("read", sg.Read, "")
		}
	}
	if sg.ScratchKnown {
		if len(sg.Scratch) == 0 {
			p("scratch: []  # as in the recorded run: no scratch directory\n")
		} else {
			p("scratch:  # as in the recorded run\n")
			for _, d := range sg.Scratch {
				p("  - %s\n", q(d))
			}
		}
	}
	grantList("deny_read", sg.DenyRead, "")
	grantList("allow_exec", sg.AllowExec, "the run executed no other program")
	grantList("allow_device", sg.Devices, "")
	p("net: %s\n", sg.Net)
	for _, y := range sg.NetWhy {
		p("#   needed by %s\n", oneLineComment(y))
	}
	switch {
	case sg.Limits == nil:
		p("# limits: not known (no source records them): set timeout, cpu_time, memory, max_file_size, max_procs and max_open_files as the program needs\n")
	case sg.Limits.zero():
		p("# limits: none in the recorded run\n")
	default:
		p("# limits as in the recorded run:\n")
		for _, kv := range sg.Limits.yaml() {
			p("%s: %s", kv[0], kv[1])
			if sg.Session && kv[0] == "timeout" {
				p("  # seconds: the server's time limit of one execution (serve --exec-timeout overrides it)")
			}
			p("\n")
		}
	}
	for _, n := range sg.LimitNotes {
		p("# LIMITS: %s\n", oneLineComment(n))
	}
	if len(sg.Ungrantable) > 0 {
		p("# NOT GRANTABLE: no policy allows these; the program must not do them:\n")
		for _, u := range sg.Ungrantable {
			p("#   %s\n", oneLineComment(u))
		}
	}
	return out.Flush()
}

// oneLineComment keeps recorded text (which the traced program chose) from
// ending the comment: YAML ends a line at \n, \r, U+0085, U+2028 and
// U+2029, and report.Visible leaves none of them, nor any other character that is
// not printable.
func oneLineComment(s string) string {
	return report.Visible(s)
}

// yamlQuote writes v, which must be valid UTF-8, as a YAML double-quoted
// scalar that reads back as v and stays on one line, whatever v holds:
// '"' and '\\' escaped, and every character unicode.IsPrint rejects (the
// line breaks YAML knows, controls, bidi and other format characters) as a
// \u or \U escape, which YAML and a reader both see. (strconv.Quote is not
// YAML: its \x escapes a byte, YAML's a code point.)
func yamlQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
