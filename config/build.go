package config

import (
	"errors"
	"fmt"
	"github.com/tracecell/tracecell/internal/fsview"
	"github.com/tracecell/tracecell/pathres"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/caps"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/tracer"
)

// KeptEnv are the variables passed through from tracecell's environment by
// default (plus every LC_*). Everything else is dropped unless --keep-env
// names it.
var KeptEnv = []string{"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR", "COLUMNS", "LINES"}

// DefaultPath is used when tracecell's own environment has no PATH.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// RuntimeRoots are readable even when --read restricts reads: what a program
// (a Python interpreter above all) needs to start and import its standard
// library. What the interpreter's prefix holds for it (prefixRoots: e.g.
// /opt/python3.11/lib for /opt/python3.11/bin/python3) is added at run time.
var RuntimeRoots = []string{
	"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/timezone", "/etc/locale.alias", "/etc/nsswitch.conf",
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/mime.types", "/etc/ssl", "/etc/pki", "/etc/fonts", "/etc/matplotlibrc",
	"/etc/python3", "/etc/python3.6", "/etc/python3.8", "/etc/python3.9", "/etc/python3.10",
	"/etc/python3.11", "/etc/python3.12", "/etc/python3.13",
	"/proc", "/sys/devices/system/cpu", "/sys/fs/cgroup", "/dev",
}

// Plan is a run, ready for the tracer.
type Plan struct {
	Policy  policy.Config
	Path    string   // the resolved executable
	Argv    []string // as given
	Env     []string
	Cwd     string
	Sandbox string // first writable root
	// SandboxCreated is set when tracecell made the sandbox itself
	// (no --write): the CLI prints its path.
	SandboxCreated bool
	Timeout        time.Duration
	MaxProcs       int
	Rlimits        []tracer.Rlimit
	// InitialChain are programs the command itself must exec once to
	// start: the NAME of a "#!/usr/bin/env NAME" script, looked up in the
	// tree's PATH. The tracer lets the root process exec one of them right
	// after the initial exec, as part of starting the command.
	InitialChain []string
	// NoFreeze: see Settings.NoFreeze.
	NoFreeze bool
	// KeepCaps are the capabilities the tree may keep of tracecell's own:
	// caps.DefaultKeep plus Settings.KeepCap.
	KeepCaps caps.Set
	// Warnings are one-line hints for the operator (a pyenv shim as the
	// command, say); the CLI prints them unless --quiet.
	Warnings []string
}

// UsageError is bad operator input (exit status 125, message names it).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// NotFoundError is a command that cannot be found (127) or run (126).
type NotFoundError struct {
	Status int
	Msg    string
}

func (e *NotFoundError) Error() string { return e.Msg }

// Build checks s, creates the sandbox if needed and resolves every path once.
func Build(s *Settings, argv []string, environ []string) (*Plan, error) {
	if len(argv) == 0 {
		return nil, usagef("no command given: usage: tracecell run [options] -- COMMAND [ARGS...]")
	}
	if err := checkEmptyPaths(s); err != nil {
		return nil, err
	}
	b := &planBuilder{s: s, p: &Plan{Argv: argv}}
	for _, phase := range []func() error{
		b.writeRoots,
		b.reads,
		func() error { return b.env(environ) },
		b.cwd,
		b.command,
		b.scratch, // before allowExec: a name in PATH is not looked up where the tree writes
		b.allowExec,
		b.netAndMode,
		b.devices,
		b.keepCaps,
		b.limits,
		b.checkPolicy,
	} {
		if err := phase(); err != nil {
			return nil, err
		}
	}
	return b.p, nil
}

// planBuilder is one Build in progress: each phase reads the settings and
// fills in the plan and its policy.
type planBuilder struct {
	s       *Settings     // the settings (Build fills in s.Write when it makes the sandbox)
	p       *Plan         // the plan being filled in
	pc      policy.Config // becomes p.Policy once it compiles
	pathVar string        // the tree's PATH (env), where the command and --allow-exec names are looked up
}

// checkEmptyPaths fails on a path setting given as "".
func checkEmptyPaths(s *Settings) error {
	// An empty path would be the current directory (filepath.Abs("")):
	// `--write "$SBX"` with SBX unset must not make the cwd writable.
	// The CLI and LoadFile say which flag or line; this catches every
	// other caller (the session server's settings, say).
	for _, l := range []struct {
		name string
		list []string
	}{{"--write", s.Write}, {"--read", s.Read}, {"--deny-read", s.DenyRead}, {"--allow-exec", s.AllowExec},
		{"--allow-device", s.AllowDevice}, {"--scratch", s.Scratch}} {
		for _, v := range l.list {
			if v == "" {
				return usagef("%s: empty value (an unset variable?): give a path", l.name)
			}
		}
	}
	return nil
}

// writeRoots resolves (and creates) the writable roots, or makes a fresh
// sandbox when none is given; the first is the sandbox.
func (b *planBuilder) writeRoots() error {
	s, p := b.s, b.p
	if len(s.Write) == 0 {
		d, err := os.MkdirTemp("", "tracecell-")
		if err != nil {
			return fmt.Errorf("create a sandbox directory under %s: %w (set TMPDIR or pass --write DIR)", os.TempDir(), err)
		}
		s.Write = []string{d}
		p.SandboxCreated = true
	}
	abs := make([]string, len(s.Write))
	for i, w := range s.Write {
		a, err := Abs(w)
		if err != nil {
			return usagef("--write %s: %v", w, err)
		}
		abs[i] = a
	}
	// A root nested in another (a SandboxAgent workspace inside a path
	// grant, under a policy file's write root) can be swapped by the tree
	// for a symlink to anywhere: resolved through descriptors, a link in a
	// writable place is refused, never followed (walkRoot).
	inArea := rootAreas(s, abs)
	for i, w := range s.Write {
		r, err := walkRoot(abs[i], func(dir string) bool { return inArea(i, dir) }, true, 0o755)
		if err != nil {
			return usagef("--write %s: %v", w, err)
		}
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			return usagef("--write %s: not a directory", w)
		}
		if r == "/" {
			return usagef("--write %s: the whole file system cannot be a writable root", w)
		}
		b.pc.WriteRoots = appendUnique(b.pc.WriteRoots, r)
	}
	p.Sandbox = b.pc.WriteRoots[0]
	return nil
}

// underWritable says whether dir is in one of the resolved writable roots.
func (b *planBuilder) underWritable(dir string) bool {
	for _, w := range b.pc.WriteRoots {
		if policy.Under(dir, w) {
			return true
		}
	}
	return false
}

// rootAreas are, for each writable root, the places the tree may write
// besides it: the other writable roots and the scratch roots, resolved.
func rootAreas(s *Settings, abs []string) func(i int, dir string) bool {
	type area struct {
		root int // the index in abs, -1 for a scratch root
		path string
	}
	var areas []area
	add := func(i int, a string) {
		if r, err := filepath.EvalSymlinks(a); err == nil {
			areas = append(areas, area{i, r})
		}
	}
	for i, a := range abs {
		add(i, a)
	}
	scratch := s.Scratch
	if scratch == nil {
		scratch = policy.DefaultScratch()
	}
	for _, d := range scratch {
		if a, err := Abs(d); err == nil {
			add(-1, a)
		}
	}
	return func(i int, dir string) bool {
		for _, w := range areas {
			if w.root != i && policy.Under(dir, w.path) {
				return true
			}
		}
		return false
	}
}

// reads resolves --read (the read roots) and --deny-read.
func (b *planBuilder) reads() error {
	for _, r := range b.s.Read {
		a, err := resolveMaybe(r)
		if err != nil {
			return usagef("--read %s: %v", r, err)
		}
		b.pc.ReadRoots = appendUnique(b.pc.ReadRoots, a)
	}
	// "read: []" in a policy file (as `policy suggest` writes it) restricts
	// reads to the runtime and the writable roots: it must not mean "open".
	if b.s.Read != nil && b.pc.ReadRoots == nil {
		b.pc.ReadRoots = []string{}
	}
	for _, r := range b.s.DenyRead {
		a, err := resolveMaybe(r)
		if err != nil {
			return usagef("--deny-read %s: %v", r, err)
		}
		b.pc.DenyRead = appendUnique(b.pc.DenyRead, a)
		// Through a symlink, the entry may lead elsewhere later (a
		// Kubernetes secret's ..data swapped at a rotation): the tracer
		// follows it again at every checked read.
		if g, err := Abs(r); err == nil && throughLink(g) {
			b.pc.DenyReadLinks = appendUnique(b.pc.DenyReadLinks, g)
			vs, err := atomicVersions(a)
			if err != nil {
				return usagef("--deny-read %s: %v: tracecell cannot deny all of them; deny a smaller tree", r, err)
			}
			for _, v := range vs {
				b.pc.DenyReadVersions = append(b.pc.DenyReadVersions, policy.View{Path: v, Of: g})
			}
		}
	}
	// The same files under other paths (a bind mount of a denied
	// directory, an overlay's layer): denied by those paths too; and a
	// denied file by its identity, which its hard links share.
	for _, d := range b.pc.DenyRead {
		views, err := fsview.Views(d)
		if err != nil {
			return usagef("--deny-read %s: %v: tracecell cannot deny all of them; deny a smaller tree", d, err)
		}
		for _, v := range views {
			b.pc.DenyReadViews = append(b.pc.DenyReadViews, policy.View{Path: v.Path, Of: d, Inside: v.Inside})
		}
		var st unix.Stat_t
		if unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			b.pc.DenyReadFiles = append(b.pc.DenyReadFiles, policy.FileID{Dev: uint64(st.Dev), Ino: st.Ino, Of: d})
		}
	}
	return nil
}

// env makes the tree's environment from tracecell's own (environ).
func (b *planBuilder) env(environ []string) error {
	// The sandbox's .tmp, made through descriptors like the roots: by its
	// path name, a tree swapping the sandbox (nested in another root) for a
	// link could have tracecell make it anywhere (red-team round 6).
	tmp := filepath.Join(b.p.Sandbox, ".tmp")
	inRoots := func(dir string) bool { return b.underWritable(dir) }
	if _, err := walkRoot(tmp, inRoots, true, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	env, pathVar, err := buildEnv(b.s, environ, b.p.Sandbox)
	if err != nil {
		return err
	}
	b.p.Env, b.pathVar = env, pathVar
	return nil
}

// cwd is the command's working directory: --cwd, or the sandbox.
func (b *planBuilder) cwd() error {
	b.p.Cwd = b.p.Sandbox
	if b.s.Cwd != "" {
		a, err := Abs(b.s.Cwd)
		if err != nil {
			return usagef("--cwd %s: %v", b.s.Cwd, err)
		}
		if st, err := os.Stat(a); err != nil || !st.IsDir() {
			return usagef("--cwd %s: not an existing directory", b.s.Cwd)
		}
		b.p.Cwd = a
	}
	return nil
}

// command finds the command, its start chain and the runtime roots it
// needs under --read.
func (b *planBuilder) command() error {
	p, pc, argv := b.p, &b.pc, b.p.Argv
	exe, err := lookPath(argv[0], b.pathVar, p.Cwd)
	if err != nil {
		return elsewhereHint(err, argv[0], p.Cwd)
	}
	if err := checkScript(argv, p.Cwd); err != nil {
		return err
	}
	p.Path = exe
	p.InitialChain, p.Warnings = startChain(exe, argv[0], b.pathVar, p.Cwd)
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		pc.RuntimeRoots = append(pc.RuntimeRoots, prefixRoots(real)...)
		pc.RuntimeRoots = appendUnique(pc.RuntimeRoots, real)
	}
	if pc.ReadRoots != nil {
		pc.RuntimeRoots = append(append([]string{}, RuntimeRoots...), pc.RuntimeRoots...)
	} else {
		pc.RuntimeRoots = nil
	}
	return nil
}

// allowExec resolves --allow-exec: programs, directories and patterns.
func (b *planBuilder) allowExec() error {
	p, pc := b.p, &b.pc
	for _, e := range b.s.AllowExec {
		if strings.HasPrefix(e, "~") {
			// ~/bin/tool, ~user/bin/*: a path, never a name in PATH nor
			// a path relative to the working directory.
			a, err := Abs(e)
			if err != nil {
				return usagef("--allow-exec %s: %v", e, err)
			}
			e = a
		}
		if x, ok, err := execPattern(e); ok || err != nil {
			if err != nil {
				return usagef("--allow-exec %s: %v", e, err)
			}
			pc.AllowExecPatterns = appendUnique(pc.AllowExecPatterns, x)
			if w := patternOverWritable(x, pc.WriteRoots); w != "" {
				p.Warnings = append(p.Warnings, fmt.Sprintf("--allow-exec %s covers the writable root %s: the tree may exec programs it wrote there", e, w))
			}
			continue
		}
		writable := append(append([]string{}, pc.WriteRoots...), pc.Scratch...)
		if !strings.Contains(e, "/") {
			// A name: the program of that name in PATH that the tree
			// cannot replace. A PATH with a directory of the workspace
			// first (a manifest's ".venv/bin") must not turn "python3"
			// into whatever the tree leaves there.
			r, skipped, err := lookPathOutside(e, b.pathVar, p.Cwd, writable)
			if err != nil {
				return usagef("--allow-exec %s: %v", e, err)
			}
			if skipped != "" {
				p.Warnings = append(p.Warnings, fmt.Sprintf("--allow-exec %s: %s comes first in PATH but is in %s, where the tree writes; allowed %s instead", e, skipped, rootOf(skipped, writable), r))
			}
			pc.AllowExec = appendUnique(pc.AllowExec, r)
			continue
		}
		x, err := lookPath(e, b.pathVar, p.Cwd)
		if err != nil {
			return usagef("--allow-exec %s: %v", e, err)
		}
		r, err := filepath.EvalSymlinks(x)
		if err != nil {
			return usagef("--allow-exec %s: %v", e, err)
		}
		if w := rootOf(r, writable); w != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("--allow-exec %s is in %s, where the tree writes: the tree may replace it with any program", e, w))
		}
		pc.AllowExec = appendUnique(pc.AllowExec, r)
	}
	return nil
}

// rootOf is the root of roots that p is or is below, or "".
func rootOf(p string, roots []string) string {
	for _, r := range roots {
		if policy.Under(p, r) {
			return r
		}
	}
	return ""
}

// netAndMode parses --net (default deny) and --mode (default enforce).
func (b *planBuilder) netAndMode() error {
	if err := b.pc.Net.UnmarshalText([]byte(orDefault(b.s.Net, "deny"))); err != nil {
		return usagef("--net: %v", err)
	}
	if err := b.pc.Mode.UnmarshalText([]byte(orDefault(b.s.Mode, "enforce"))); err != nil {
		return usagef("--mode: %v", err)
	}
	return nil
}

// devices are the default writable devices plus --allow-device.
func (b *planBuilder) devices() error {
	b.pc.Devices = policy.DefaultDevices()
	for _, d := range b.s.AllowDevice {
		if _, err := path.Match(d, "/dev/x"); err != nil {
			return usagef("--allow-device %s: bad pattern: %v", d, err)
		}
		if !strings.HasPrefix(d, "/dev/") {
			return usagef("--allow-device %s: must be a pattern under /dev/", d)
		}
		b.pc.Devices = appendUnique(b.pc.Devices, d)
	}
	return nil
}

// keepCaps are the default capabilities plus --keep-cap.
func (b *planBuilder) keepCaps() error {
	kc, err := caps.Parse(b.s.KeepCap)
	if err != nil {
		return usagef("--keep-cap: %v", err)
	}
	b.p.KeepCaps = caps.DefaultKeep | kc
	return nil
}

// scratch resolves the scratch directories (default /dev/shm, where it
// exists).
func (b *planBuilder) scratch() error {
	scratch := b.s.Scratch
	if scratch == nil {
		scratch = policy.DefaultScratch()
	}
	b.pc.Scratch = []string{}
	for _, d := range scratch {
		a, err := Abs(d)
		if err != nil {
			return usagef("--scratch %s: %v", d, err)
		}
		// Resolved like the writable roots: a link in a writable root (a
		// tree's) is refused, never followed.
		r, err := walkRoot(a, b.underWritable, false, 0)
		if err != nil {
			if b.s.Scratch == nil {
				continue // no /dev/shm on this host
			}
			return usagef("--scratch %s: %v", d, err)
		}
		b.pc.Scratch = appendUnique(b.pc.Scratch, r)
	}
	return nil
}

// limits are the timeout, --max-procs, --no-freeze and the rlimits.
func (b *planBuilder) limits() error {
	s, p := b.s, b.p
	p.Timeout = time.Duration(s.Timeout)
	if s.MaxProcs < 0 {
		return usagef("--max-procs %d: must be 0 (unlimited) or more", s.MaxProcs)
	}
	p.MaxProcs = s.MaxProcs
	p.NoFreeze = s.NoFreeze
	if s.NoFreeze {
		p.Warnings = append(p.Warnings, "no_freeze is set: checked calls of threaded or multi-process programs are not protected against races (a hostile program could rewrite a checked path between the check and its use); use it only for trusted code")
	}
	if s.CPUTime > 0 {
		sec := uint64((time.Duration(s.CPUTime) + time.Second - 1) / time.Second)
		// SIGXCPU at the soft limit, SIGKILL one second later.
		p.Rlimits = append(p.Rlimits, tracer.Rlimit{Name: "cpu_seconds", Resource: unix.RLIMIT_CPU, Cur: sec, Max: sec + 1})
	}
	if s.Memory > 0 {
		p.Rlimits = append(p.Rlimits, tracer.Rlimit{Name: "address_space_bytes", Resource: unix.RLIMIT_AS, Cur: uint64(s.Memory), Max: uint64(s.Memory)})
	}
	if s.MaxFileSize > 0 {
		p.Rlimits = append(p.Rlimits, tracer.Rlimit{Name: "file_size_bytes", Resource: unix.RLIMIT_FSIZE, Cur: uint64(s.MaxFileSize), Max: uint64(s.MaxFileSize)})
	}
	if s.MaxOpenFiles < 0 {
		return usagef("--max-open-files %d: must be 0 (unchanged) or more", s.MaxOpenFiles)
	}
	if s.MaxOpenFiles > 0 {
		p.Rlimits = append(p.Rlimits, tracer.Rlimit{Name: "open_files", Resource: unix.RLIMIT_NOFILE, Cur: uint64(s.MaxOpenFiles), Max: uint64(s.MaxOpenFiles)})
	}
	return nil
}

// checkPolicy checks that the policy compiles and puts it in the plan.
func (b *planBuilder) checkPolicy() error {
	b.pc.NetAdmin = b.p.KeepCaps.Has(caps.NetAdmin)
	if _, err := policy.New(b.pc); err != nil {
		return usagef("policy: %v", err)
	}
	b.p.Policy = b.pc
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// prefixRoots are the parts of the prefix of the resolved executable real
// (the directory two levels above it: /opt/python3.11 for
// /opt/python3.11/bin/python3) that an interpreter installed there reads
// when it starts: PREFIX/lib and PREFIX/lib64 (its shared libraries and
// standard library), PREFIX/pyvenv.cfg, and, when real lies in PREFIX/bin,
// the files Python looks for next to itself (pyvenv.cfg, pybuilddir.txt,
// python3.X._pth, measured with CPython 3.6 to 3.13 from pyenv). Not the
// whole prefix: for a program in the user's home (~/tool, or ~/bin/tool)
// the prefix is /home or the home itself, and ~/.ssh would be readable
// under --read. Nothing for a program in /, /usr or /usr/local's bin,
// whose prefixes are runtime roots already or would open too much.
func prefixRoots(real string) []string {
	bin := filepath.Dir(real)
	prefix := filepath.Dir(bin)
	if prefix == "/" || prefix == "/usr" {
		return nil
	}
	roots := []string{filepath.Join(prefix, "lib"), filepath.Join(prefix, "lib64"), filepath.Join(prefix, "pyvenv.cfg")}
	if filepath.Base(bin) == "bin" {
		base := filepath.Base(real)
		roots = append(roots, filepath.Join(bin, "pyvenv.cfg"), filepath.Join(bin, "pybuilddir.txt"), filepath.Join(bin, base+"._pth"))
		// python3.X._pth and python3._pth: the version-less name too.
		if i := strings.IndexByte(base, '.'); i > 0 {
			roots = appendUnique(roots, filepath.Join(bin, base[:i]+"._pth"))
		}
	}
	return roots
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// resolveMaybe makes p absolute and expands its symlinks where it exists.
func resolveMaybe(p string) (string, error) {
	a, err := Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r, nil
	}
	// Missing: its directories' symlinks are still followed, as the
	// kernel will when the tree names it (--deny-read ~/.env, not there
	// yet, with /home a link to /data/home).
	if r, err := pathres.Resolve(pathres.Task{Tgid: os.Getpid()}, "/", []byte(a), true); err == nil {
		return r.Path, nil
	}
	return filepath.Clean(a), nil
}

// atomicVersions are the patterns of the other versions of a deny-read
// entry, now at resolved, that lies in a volume laid out as Kubernetes'
// atomic writer lays out secrets and configmaps: a directory D holding
// "..data", a symlink to the current "..<time>" directory, and the
// entry at D/..<time>/rest. kubelet writes the next version's
// D/..<new time>/rest before it swaps ..data, and swaps ..data while the
// tree runs: every D/..*/rest is the entry. D is found in the resolved
// path (round 60 of the red team: from the path as given, through
// /var/run -> /run or a nested key's own link, no pattern was made), and
// the pattern is made for every other mount that shows D too (a volume's
// tmpfs is also mounted under /var/lib/kubelet on a node).
func atomicVersions(resolved string) ([]string, error) {
	comps := strings.Split(strings.TrimPrefix(resolved, "/"), "/")
	for i := len(comps) - 2; i >= 0; i-- {
		c := comps[i]
		if !strings.HasPrefix(c, "..") || c == ".." {
			continue
		}
		dir := "/" + strings.Join(comps[:i], "/")
		if fi, err := os.Lstat(filepath.Join(dir, "..data")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		rest := strings.Join(comps[i+1:], "/")
		dirs := []string{dir}
		views, err := fsview.Views(dir)
		if err != nil {
			return nil, err
		}
		for _, v := range views {
			if !v.Inside {
				dirs = append(dirs, v.Path)
			}
		}
		var out []string
		for _, d := range dirs {
			base := globQuote(d)
			if d == "/" {
				base = ""
			}
			out = append(out, base+"/..*/"+globQuote(rest))
		}
		return out, nil
	}
	return nil, nil
}

// globQuote escapes path.Match's special characters in s.
func globQuote(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// throughLink reports whether the absolute path p goes through a symlink:
// one of its components that exist is one.
func throughLink(p string) bool {
	cur := "/"
	for _, c := range strings.Split(strings.Trim(p, "/"), "/") {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err != nil {
			return false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// buildEnv makes the tree's environment: the kept variables, --keep-env,
// --env, then HOME and the cache/config/temp variables inside the sandbox.
func buildEnv(s *Settings, environ []string, sandbox string) ([]string, string, error) {
	m := map[string]string{}
	keep := map[string]bool{}
	for _, k := range KeptEnv {
		keep[k] = true
	}
	for _, k := range s.KeepEnv {
		if k == "" || strings.Contains(k, "=") {
			return nil, "", usagef("--keep-env %q: want a variable name", k)
		}
		keep[k] = true
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if keep[k] || strings.HasPrefix(k, "LC_") {
			m[k] = v
		}
	}
	if m["PATH"] == "" {
		m["PATH"] = DefaultPath
	}
	tmp := filepath.Join(sandbox, ".tmp") // made by planBuilder.env
	m["HOME"] = sandbox
	m["TMPDIR"] = tmp
	m["XDG_CACHE_HOME"] = filepath.Join(sandbox, ".cache")
	m["XDG_CONFIG_HOME"] = filepath.Join(sandbox, ".config")
	// matplotlib's font cache (fontlist-v*.json) is tracecell's doing, not
	// the program's: under .tmp it stays out of the files a program lists.
	m["MPLCONFIGDIR"] = filepath.Join(tmp, "matplotlib")
	for k, v := range s.Env {
		if k == "" || strings.Contains(k, "=") {
			return nil, "", usagef("--env %q: want KEY=VALUE", k+"="+v)
		}
		m[k] = v
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+m[k])
	}
	return env, m["PATH"], nil
}

// execPattern turns an --allow-exec value that is a pattern ("/usr/bin/*")
// or a directory ("/usr/local/bin", "/usr/local/bin/") into an exec pattern
// over resolved programs; ok is false for a program name or path. The
// pattern's fixed leading directory has its symlinks expanded, since the
// policy compares resolved programs: "/bin/*" becomes "/usr/bin/*" on a
// merged-/usr system.
func execPattern(e string) (x string, ok bool, err error) {
	if !policy.IsExecPattern(e) {
		if !strings.Contains(e, "/") {
			return "", false, nil
		}
		st, err := os.Stat(e)
		if err != nil || !st.IsDir() {
			return "", false, nil
		}
		e = strings.TrimRight(e, "/") + "/*"
	}
	if !strings.HasPrefix(e, "/") {
		return "", true, errors.New("a pattern must be an absolute path, e.g. '/usr/bin/*'")
	}
	if c := path.Clean(e); c != e {
		return "", true, fmt.Errorf("the pattern is not clean: write %q", c)
	}
	base := policy.ExecPatternBase(e)
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", true, fmt.Errorf("the directory %s: %w", base, err)
	}
	if base != "/" {
		e = real + e[len(base):]
	}
	if err := policy.CheckExecPattern(e); err != nil {
		return "", true, err
	}
	return e, true, nil
}

// patternOverWritable returns a writable root where the exec pattern x could
// match a program, or "".
func patternOverWritable(x string, writeRoots []string) string {
	base := policy.ExecPatternBase(x)
	for _, w := range writeRoots {
		if policy.Under(w, base) || policy.Under(base, w) {
			return w
		}
	}
	return ""
}
