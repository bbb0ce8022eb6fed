package config

// Finding the command: the PATH lookup, its "#!" line (a start chain, a
// version-manager shim), and the hints for a command or script that exists
// only relative to tracecell's own working directory.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

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
	return searchPath(name, pathVar, dir, func(string) bool { return true })
}

// searchPath looks for name in each directory of pathVar (relative ones
// against dir) and returns the first executable file that take accepts.
// None accepted: the last "not executable" error, or "not found".
func searchPath(name, pathVar, dir string, take func(found string) bool) (string, error) {
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
			if take(p) {
				return p, nil
			}
			continue
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

// lookPathOutside is lookPath for a name (no slash) that skips programs
// whose resolved path is under one of roots (resolved): it returns the
// first other one, resolved, and the first one it skipped ("" for none).
// Only skipped ones found: an error naming the first.
func lookPathOutside(name, pathVar, dir string, roots []string) (string, string, error) {
	skipped, resolved := "", ""
	_, err := searchPath(name, pathVar, dir, func(x string) bool {
		r, err := filepath.EvalSymlinks(x)
		if err != nil {
			return false
		}
		if rootOf(r, roots) != "" {
			if skipped == "" {
				skipped = r
			}
			return false
		}
		resolved = r
		return true
	})
	switch {
	case resolved != "":
		return resolved, skipped, nil
	case skipped != "":
		return "", "", fmt.Errorf("the only %s in PATH is %s, in %s, where the tree writes (it could replace it with any program): give the path of a program outside it", name, skipped, rootOf(skipped, roots))
	}
	return "", "", err
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
