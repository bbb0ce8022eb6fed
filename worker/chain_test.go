package worker

// A worker's interpreter may be a "#!/usr/bin/env NAME" script (a wrapper
// that a venv, a conda environment or an operator puts in front of the
// interpreter): env's one exec of NAME is the start chain's
// (config.Plan.InitialChain), as for `tracecell run`. The chain is for the
// start only: the session's code is refused every exec after it.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/internal/syncbuf"
	"github.com/tracecell/tracecell/policy"
)

// treePath is the tree's PATH in these tests: env looks NAME up in it, and
// the tester's own PATH may put a version manager's shims first (which
// config.Build warns about and gives no chain).
const treePath = "/usr/bin:/bin"

// wrapperBody runs, in the interpreter env started, the script the worker
// host names last (worker.py), as python3 -I -u -B would; it leaves a mark
// in the environment that the session's code can see.
const wrapperBody = "import os, runpy, sys\n" +
	"os.environ['TC_WRAPPED'] = 'env'\n" +
	"sys.argv = sys.argv[-1:]\n" +
	"runpy.run_path(sys.argv[0], run_name='__main__')\n"

// writeWrapper writes an executable script with the given text in a fresh
// directory and returns its path.
func writeWrapper(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStartChain: a worker whose Python is a "#!/usr/bin/env python3"
// script starts and runs code; every later exec of the session's code (of
// the wrapper, of python3 itself, of env, by the worker or by its child) is
// refused by the exec rule, and the program it names never runs.
func TestStartChain(t *testing.T) {
	wrapper := writeWrapper(t, "envpython", "#!/usr/bin/env python3\n"+wrapperBody)
	p := startProc(t, func(c *HostConfig) {
		c.Python = wrapper
		c.Settings.Env = map[string]string{"PATH": treePath}
	})
	if r := run(t, p, "print(1)", 0); r.Stdout != "1\n" || r.Error != nil || len(r.Denials) != 0 {
		t.Fatalf("print(1) in the wrapper's worker: stdout %q, error %+v, denials %+v", r.Stdout, r.Error, r.Denials)
	}
	if r := run(t, p, "import os; os.environ.get('TC_WRAPPED')", 0); str(r.Result) != "'env'" {
		t.Fatalf("the worker did not start through the wrapper (TC_WRAPPED %s): the test tests nothing", str(r.Result))
	}
	sbx, pid := p.Info().Sandbox, p.Info().WorkerPid
	run(t, p, "x = 41", 0)
	for _, c := range []struct {
		name string
		// exec is Python code that execs a program which would run the
		// Python in the variable code (it creates the file canary); it
		// must raise PermissionError.
		exec string
		// script: the program runs a script file, not -c: code is the
		// path of a script holding the code.
		script bool
	}{
		{"the wrapper", fmt.Sprintf("os.execv(%q, [%q, code])", wrapper, wrapper), true},
		{"NAME", "os.execv('/usr/bin/python3', ['python3', '-c', code])", false},
		{"NAME by PATH", "os.execvp('python3', ['python3', '-c', code])", false},
		{"env NAME", "os.execv('/usr/bin/env', ['env', 'python3', '-c', code])", false},
		{"NAME by a child", "import subprocess\nsubprocess.run(['/usr/bin/python3', '-c', code])", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			canary := filepath.Join(sbx, strings.ReplaceAll(c.name, " ", "-")+".canary")
			code := fmt.Sprintf("import os\ncanary = %q\ncode = f'open({canary!r}, \"w\")'\n", canary)
			if c.script {
				code += fmt.Sprintf("script = %q\nopen(script, 'w').write(code)\ncode = script\n", canary+".py")
			}
			code += "try:\n" + indent(c.exec) + "except PermissionError as e:\n    print('refused', e.errno)\n"
			r := run(t, p, code, 10*time.Second)
			if r.SessionLost || r.Stdout != "refused 13\n" {
				t.Errorf("exec of %s: stdout %q, stderr %q, error %+v, lost %v %s", c.name, r.Stdout, r.Stderr, r.Error, r.SessionLost, r.LostReason)
			}
			if _, err := os.Stat(canary); !os.IsNotExist(err) {
				t.Errorf("the exec'd program ran: %s exists (%v)", canary, err)
			}
			// execvp tries every PATH entry: /bin/python3 is another
			// refusal where /bin is /usr/bin.
			if len(r.Denials) == 0 {
				t.Errorf("no denial, want %s", policy.RuleExecNotAllowed)
			}
			for _, d := range r.Denials {
				if d.Rule != policy.RuleExecNotAllowed || !strings.HasPrefix(d.Syscall, "exec") {
					t.Errorf("denial %s by %s: %s, want %s", d.Syscall, d.Program, d.Rule, policy.RuleExecNotAllowed)
				}
			}
		})
	}
	if r := run(t, p, "x + 1", 0); str(r.Result) != "42" || p.Info().WorkerPid != pid {
		t.Fatalf("the session after the refused execs: result %s, worker %d (was %d)", str(r.Result), p.Info().WorkerPid, pid)
	}
}

// indent indents every line of code by four spaces.
func indent(code string) string {
	var b strings.Builder
	for _, l := range strings.Split(code, "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// TestStartChainIsOneExec: the chain is env's one exec of NAME, no more.
// A wrapper that execs the interpreter itself (a shell script) makes a
// second exec, which the exec policy refuses as it does under `tracecell
// run`, unless AllowExec names the interpreter.
func TestStartChainIsOneExec(t *testing.T) {
	needPython(t)
	const shBody = "exec /usr/bin/python3 \"$@\"\n"
	for _, c := range []struct {
		name, text string
		allow      []string // Settings.AllowExec
		starts     bool
	}{
		{"env python3", "#!/usr/bin/env python3\n" + wrapperBody, nil, true},
		{"env sh, then python3", "#!/usr/bin/env sh\n" + shBody, nil, false},
		{"sh, then python3", "#!/bin/sh\n" + shBody, nil, false},
		{"sh, then an allowed python3", "#!/bin/sh\n" + shBody, []string{python}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			wrapper := writeWrapper(t, "python", c.text)
			logs := &syncbuf.Buffer{}
			cfg := HostConfig{Sandbox: t.TempDir(), Python: wrapper, Grace: time.Second, DefaultTimeout: 30 * time.Second}
			cfg.Settings.Env = map[string]string{"PATH": treePath}
			cfg.Settings.AllowExec = c.allow
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p, err := Start(ctx, cfg, zerolog.New(logs).Level(zerolog.WarnLevel))
			if !c.starts {
				if err == nil {
					p.Close()
					t.Fatal("the worker started: a second exec after the chain was allowed")
				}
				// The shell's own word for the EACCES, and the tracer's denial.
				if !strings.Contains(err.Error(), "Permission denied") {
					t.Errorf("Start: %v, want the worker's refused exec", err)
				}
				if !strings.Contains(logs.String(), string(policy.RuleExecNotAllowed)) {
					t.Errorf("no %s denial logged: %s", policy.RuleExecNotAllowed, logs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v (log: %s)", err, logs)
			}
			defer p.Close()
			if r := run(t, p, "print(1)", 0); r.Stdout != "1\n" {
				t.Errorf("print(1): stdout %q, error %+v, denials %+v", r.Stdout, r.Error, r.Denials)
			}
		})
	}
}
