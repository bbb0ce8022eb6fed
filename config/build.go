package config

import (
	"errors"
	"fmt"
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
	p := &Plan{Argv: argv}
	var pc policy.Config
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
				return nil, usagef("%s: empty value (an unset variable?): give a path", l.name)
			}
		}
	}

	// Writable roots.
	if len(s.Write) == 0 {
		d, err := os.MkdirTemp("", "tracecell-")
		if err != nil {
			return nil, fmt.Errorf("create a sandbox directory under %s: %w (set TMPDIR or pass --write DIR)", os.TempDir(), err)
		}
		s.Write = []string{d}
		p.SandboxCreated = true
	}
	for _, w := range s.Write {
		a, err := Abs(w)
		if err != nil {
			return nil, usagef("--write %s: %v", w, err)
		}
		if err := os.MkdirAll(a, 0o755); err != nil {
			return nil, usagef("--write %s: cannot create the directory: %v", w, err)
		}
		r, err := filepath.EvalSymlinks(a)
		if err != nil {
			return nil, usagef("--write %s: %v", w, err)
		}
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			return nil, usagef("--write %s: not a directory", w)
		}
		if r == "/" {
			return nil, usagef("--write %s: the whole file system cannot be a writable root", w)
		}
		pc.WriteRoots = appendUnique(pc.WriteRoots, r)
	}
	p.Sandbox = pc.WriteRoots[0]

	// Reads.
	for _, r := range s.Read {
		a, err := resolveMaybe(r)
		if err != nil {
			return nil, usagef("--read %s: %v", r, err)
		}
		pc.ReadRoots = appendUnique(pc.ReadRoots, a)
	}
	if len(s.Read) > 0 && pc.ReadRoots == nil {
		pc.ReadRoots = []string{}
	}
	for _, r := range s.DenyRead {
		a, err := resolveMaybe(r)
		if err != nil {
			return nil, usagef("--deny-read %s: %v", r, err)
		}
		pc.DenyRead = appendUnique(pc.DenyRead, a)
	}

	// Environment.
	env, pathVar, err := buildEnv(s, environ, p.Sandbox)
	if err != nil {
		return nil, err
	}
	p.Env = env

	// Working directory.
	p.Cwd = p.Sandbox
	if s.Cwd != "" {
		a, err := Abs(s.Cwd)
		if err != nil {
			return nil, usagef("--cwd %s: %v", s.Cwd, err)
		}
		if st, err := os.Stat(a); err != nil || !st.IsDir() {
			return nil, usagef("--cwd %s: not an existing directory", s.Cwd)
		}
		p.Cwd = a
	}

	// The command.
	exe, err := lookPath(argv[0], pathVar, p.Cwd)
	if err != nil {
		return nil, elsewhereHint(err, argv[0], p.Cwd)
	}
	if err := checkScript(argv, p.Cwd); err != nil {
		return nil, err
	}
	p.Path = exe
	p.InitialChain, p.Warnings = startChain(exe, argv[0], pathVar, p.Cwd)
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		pc.RuntimeRoots = append(pc.RuntimeRoots, prefixRoots(real)...)
		pc.RuntimeRoots = appendUnique(pc.RuntimeRoots, real)
	}
	if pc.ReadRoots != nil {
		pc.RuntimeRoots = append(append([]string{}, RuntimeRoots...), pc.RuntimeRoots...)
	} else {
		pc.RuntimeRoots = nil
	}

	for _, e := range s.AllowExec {
		if strings.HasPrefix(e, "~") {
			// ~/bin/tool, ~user/bin/*: a path, never a name in PATH nor
			// a path relative to the working directory.
			a, err := Abs(e)
			if err != nil {
				return nil, usagef("--allow-exec %s: %v", e, err)
			}
			e = a
		}
		if x, ok, err := execPattern(e); ok || err != nil {
			if err != nil {
				return nil, usagef("--allow-exec %s: %v", e, err)
			}
			pc.AllowExecPatterns = appendUnique(pc.AllowExecPatterns, x)
			if w := patternOverWritable(x, pc.WriteRoots); w != "" {
				p.Warnings = append(p.Warnings, fmt.Sprintf("--allow-exec %s covers the writable root %s: the tree may exec programs it wrote there", e, w))
			}
			continue
		}
		x, err := lookPath(e, pathVar, p.Cwd)
		if err != nil {
			return nil, usagef("--allow-exec %s: %v", e, err)
		}
		r, err := filepath.EvalSymlinks(x)
		if err != nil {
			return nil, usagef("--allow-exec %s: %v", e, err)
		}
		pc.AllowExec = appendUnique(pc.AllowExec, r)
	}

	if err := pc.Net.UnmarshalText([]byte(orDefault(s.Net, "deny"))); err != nil {
		return nil, usagef("--net: %v", err)
	}
	if err := pc.Mode.UnmarshalText([]byte(orDefault(s.Mode, "enforce"))); err != nil {
		return nil, usagef("--mode: %v", err)
	}
	pc.Devices = policy.DefaultDevices()
	for _, d := range s.AllowDevice {
		if _, err := path.Match(d, "/dev/x"); err != nil {
			return nil, usagef("--allow-device %s: bad pattern: %v", d, err)
		}
		if !strings.HasPrefix(d, "/dev/") {
			return nil, usagef("--allow-device %s: must be a pattern under /dev/", d)
		}
		pc.Devices = appendUnique(pc.Devices, d)
	}
	kc, err := caps.Parse(s.KeepCap)
	if err != nil {
		return nil, usagef("--keep-cap: %v", err)
	}
	p.KeepCaps = caps.DefaultKeep | kc
	scratch := s.Scratch
	if scratch == nil {
		scratch = policy.DefaultScratch()
	}
	pc.Scratch = []string{}
	for _, d := range scratch {
		a, err := Abs(d)
		if err != nil {
			return nil, usagef("--scratch %s: %v", d, err)
		}
		r, err := filepath.EvalSymlinks(a)
		if err != nil {
			if s.Scratch == nil {
				continue // no /dev/shm on this host
			}
			return nil, usagef("--scratch %s: %v", d, err)
		}
		pc.Scratch = appendUnique(pc.Scratch, r)
	}

	// Limits.
	p.Timeout = time.Duration(s.Timeout)
	if s.MaxProcs < 0 {
		return nil, usagef("--max-procs %d: must be 0 (unlimited) or more", s.MaxProcs)
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
		return nil, usagef("--max-open-files %d: must be 0 (unchanged) or more", s.MaxOpenFiles)
	}
	if s.MaxOpenFiles > 0 {
		p.Rlimits = append(p.Rlimits, tracer.Rlimit{Name: "open_files", Resource: unix.RLIMIT_NOFILE, Cur: uint64(s.MaxOpenFiles), Max: uint64(s.MaxOpenFiles)})
	}
	pc.NetAdmin = p.KeepCaps.Has(caps.NetAdmin)
	if _, err := policy.New(pc); err != nil {
		return nil, usagef("policy: %v", err)
	}
	p.Policy = pc
	return p, nil
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
	return filepath.Clean(a), nil
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
	tmp := filepath.Join(sandbox, ".tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, "", fmt.Errorf("create %s: %w", tmp, err)
	}
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

// lookPath finds name the way the shell would in the tree's PATH; a name
// with a slash is taken relative to dir.
func lookPath(name, pathVar, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return checkExec(p, name)
	}
	var lastErr error
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p, err := checkExec(filepath.Join(d, name), name)
		if err == nil {
			return p, nil
		}
		var nf *NotFoundError
		if errors.As(err, &nf) && nf.Status == 126 {
			lastErr = err
		}
	}
	if lastErr != nil {
		return "", lastErr
	}
	return "", &NotFoundError{127, fmt.Sprintf("%s: command not found in PATH (%s)", name, pathVar)}
}

func checkExec(p, name string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", &NotFoundError{127, fmt.Sprintf("%s: command not found (%s)", name, p)}
	}
	if st.IsDir() {
		return "", &NotFoundError{126, fmt.Sprintf("%s: is a directory", p)}
	}
	if st.Mode()&0o111 == 0 || unix.Access(p, unix.X_OK) != nil {
		return "", &NotFoundError{126, fmt.Sprintf("%s: permission denied (not executable)", p)}
	}
	return p, nil
}

// startChain looks at the command's "#!" line. A "#!/usr/bin/env NAME" script
// makes env exec NAME, a second exec the exec policy would deny: NAME,
// looked up in the tree's PATH as env will, is returned as the chain the
// command may exec once to start. A pyenv or asdf shim (a shell script that
// runs more programs before the interpreter) gets a warning with the fix.
func startChain(exe, name, pathVar, dir string) (chain, warnings []string) {
	f, err := os.Open(exe)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line := string(buf[:n])
	if !strings.HasPrefix(line, "#!") {
		return nil, nil
	}
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(line[2:])
	if isShim(exe) {
		warnings = append(warnings, fmt.Sprintf("%s is a version-manager shim (%s), a script that runs other programs before the interpreter, which the exec policy blocks: run the interpreter itself, e.g. tracecell run -- $(pyenv which %s) ...", name, exe, filepath.Base(exe)))
		return nil, warnings
	}
	// A script whose #! names a shim ("#!/home/u/.pyenv/shims/python3")
	// fails the same way, one exec later.
	if len(fields) > 0 && isShim(fields[0]) {
		return nil, append(warnings, shimScriptWarning(exe, fields, fields[0]))
	}
	if len(fields) < 2 || filepath.Base(fields[0]) != "env" {
		return nil, nil
	}
	// env [-S] [-i] [VAR=value ...] NAME: the first operand is the program.
	for _, a := range fields[1:] {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		x, err := lookPath(a, pathVar, dir)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s starts with #!%s, but %s is not in the tree's PATH (%s): the script will fail to start", exe, strings.Join(fields, " "), a, pathVar))
			return nil, warnings
		}
		if isShim(x) {
			// "#!/usr/bin/env python3" with a pyenv shim first in PATH.
			return nil, append(warnings, shimScriptWarning(exe, fields, x))
		}
		if r, err := filepath.EvalSymlinks(x); err == nil {
			x = r
		}
		return []string{x}, nil
	}
	return nil, nil
}

// isShim: p is a version manager's shim (pyenv, asdf, rbenv, nodenv...), a
// shell script in a "shims" directory that runs the version manager, which
// then execs the interpreter: execs the exec policy blocks.
func isShim(p string) bool { return strings.Contains(p, "/shims/") }

func shimScriptWarning(script string, fields []string, shim string) string {
	return fmt.Sprintf("%s starts with #!%s, and %s is a version-manager shim, a script that runs other programs before the interpreter, which the exec policy blocks: run the script with the interpreter itself, e.g. tracecell run -- $(pyenv which %s) %s", script, strings.Join(fields, " "), shim, filepath.Base(shim), script)
}

// elsewhereHint adds to a "not found" error for a relative command with a
// slash (./analysis.py) the hint that it exists relative to tracecell's own
// working directory: the command runs in dir (the sandbox by default), and
// relative paths are looked up there.
func elsewhereHint(err error, name, dir string) error {
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Status != 127 || !strings.Contains(name, "/") || filepath.IsAbs(name) {
		return err
	}
	if there := callerPath(name, dir); there != "" {
		return &NotFoundError{127, fmt.Sprintf("%s: not found in the command's working directory %s (relative paths are looked up there), but %s exists: pass the absolute path (%s) or --cwd %s", name, dir, there, there, filepath.Dir(there))}
	}
	return err
}

// callerPath is name relative to tracecell's own working directory when it
// exists there and that directory is not dir; "" otherwise.
func callerPath(name, dir string) string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	if wd == dir {
		return ""
	}
	p := filepath.Join(wd, name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// scriptInterpreters are the programs whose first operand is a script file
// they open at start, and their options that take no script (the code is an
// argument, a module or stdin) or take a value (the next argument).
var scriptInterpreters = []struct {
	names    []string // base names, each also with a version suffix (python3.11)
	noScript []string
	withArg  []string
}{
	{[]string{"python", "pypy"}, []string{"-c", "-m", "-"}, []string{"-X", "-W", "-Q"}},
	{[]string{"sh", "bash", "dash", "zsh", "ksh", "mksh"}, []string{"-c", "-s", "-"}, []string{"-o", "+o", "-O", "+O"}},
	{[]string{"node", "nodejs", "deno", "bun"}, []string{"-e", "--eval", "-p", "--print", "-"}, []string{"-r", "--require"}},
	{[]string{"perl", "ruby"}, []string{"-e", "-E", "-"}, []string{"-I", "-M"}},
	{[]string{"Rscript"}, []string{"-e"}, nil},
}

// isNamed: base is one of names, or one followed by a version
// ("python3", "python3.11", "perl5.36"). No regexp: see sizeRe.
func isNamed(base string, names []string) bool {
	for _, n := range names {
		if v, ok := strings.CutPrefix(base, n); ok && strings.Trim(v, "0123456789.") == "" {
			return true
		}
	}
	return false
}

// checkScript fails when argv is an interpreter with a relative script that
// does not exist in the command's working directory dir (where the
// interpreter will look) but does in tracecell's own: the typical
// `tracecell run --write ./sbx -- python3 analysis.py`, whose python3 would
// say only "can't open file '<sandbox>/analysis.py'".
func checkScript(argv []string, dir string) error {
	base := filepath.Base(argv[0])
	for _, in := range scriptInterpreters {
		if !isNamed(base, in.names) {
			continue
		}
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			switch {
			case contains(in.noScript, a) || a != "-" && hasOptPrefix(in.noScript, a):
				return nil // -c CODE, -m MODULE, -cCODE: no script file
			case contains(in.withArg, a):
				i++
				continue
			case a == "--":
				if i+1 < len(argv) {
					return scriptElsewhere(argv[0], argv[i+1], dir)
				}
				return nil
			case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
				continue
			}
			return scriptElsewhere(argv[0], a, dir)
		}
		return nil
	}
	return nil
}

func scriptElsewhere(interp, script, dir string) error {
	if script == "" || filepath.IsAbs(script) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, script)); err == nil {
		return nil
	}
	if there := callerPath(script, dir); there != "" {
		return &NotFoundError{127, fmt.Sprintf("%s: not found in the command's working directory %s, where %s will look for it, but %s exists: pass the absolute path (%s %s) or --cwd %s", script, dir, interp, there, interp, there, filepath.Dir(there))}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hasOptPrefix: a is a short option of opts with its value attached
// ("-cprint(1)"); long options ("--eval") only match whole.
func hasOptPrefix(opts []string, a string) bool {
	for _, o := range opts {
		if len(o) == 2 && o[0] == '-' && strings.HasPrefix(a, o) && !strings.HasPrefix(a, "--") {
			return true
		}
	}
	return false
}
