package config

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/policy"

	"github.com/tracecell/tracecell/internal/caps"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		bad  bool
	}{
		{"1024", 1024, false}, {"512K", 512 << 10, false}, {"512M", 512 << 20, false},
		{"2G", 2 << 30, false}, {"2GiB", 2 << 30, false}, {"1.5g", 3 << 29, false}, {"2gb", 2 << 30, false},
		{"", 0, true}, {"-1", 0, true}, {"2X", 0, true}, {"G", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("ParseSize(%q) = %d, %v", tc.in, got, err)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"90s", 90 * time.Second, false}, {"5m", 5 * time.Minute, false}, {"60", time.Minute, false},
		{"1.5", 1500 * time.Millisecond, false}, {"-1s", 0, true}, {"-3", 0, true}, {"soon", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("ParseDuration(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, body string
		errHas           []string
		check            func(*testing.T, *Settings)
	}{
		{"yaml", "p.yaml", "write: [/a, /b]\nnet: loopback\ntimeout: 90s\nmemory: 2G\nmax_procs: 8\nenv: {A: b}\n", nil,
			func(t *testing.T, s *Settings) {
				if len(s.Write) != 2 || s.Net != "loopback" || time.Duration(s.Timeout) != 90*time.Second ||
					s.Memory != 2<<30 || s.MaxProcs != 8 || s.Env["A"] != "b" {
					t.Fatalf("%+v", s)
				}
			}},
		{"json", "p.json", `{"write": ["/a"], "deny_read": ["/x"], "timeout": "10s"}`, nil,
			func(t *testing.T, s *Settings) {
				if s.Write[0] != "/a" || s.DenyRead[0] != "/x" || time.Duration(s.Timeout) != 10*time.Second {
					t.Fatalf("%+v", s)
				}
			}},
		{"empty", "e.yaml", "", nil, func(t *testing.T, s *Settings) {}},
		{"no-freeze", "f.yaml", "no_freeze: true\n", nil, func(t *testing.T, s *Settings) {
			if !s.NoFreeze {
				t.Fatalf("%+v", s)
			}
		}},
		{"unknown-yaml", "u.yaml", "write: [/a]\nwirte: [/b]\n", []string{"u.yaml", `unknown key "wirte"`, "line 2"}, nil},
		{"unknown-json", "u.json", `{"wirte": 1}`, []string{"u.json", `unknown key "wirte"`}, nil},
		{"bad-size", "b.yaml", "memory: lots\n", []string{"b.yaml", `invalid size "lots"`}, nil},
		{"bad-duration", "d.yaml", "timeout: soon\n", []string{"d.yaml", `invalid duration "soon"`}, nil},
		{"bad-type", "t.json", `{"max_procs": "many"}`, []string{"t.json", "max_procs"}, nil},
		// Issue 17 item 5: every error names the file, the key and the line.
		{"duration-key-line", "d2.yaml", "net: deny\ntimeout: forever\n", []string{"d2.yaml", "line 2", "key timeout", `invalid duration "forever"`}, nil},
		{"size-key-line", "s2.yaml", "\n\nmemory: [2G]\n", []string{"s2.yaml", "line 3", "key memory", "want a size"}, nil},
		{"int-key-line", "i.yaml", "max_procs: many\n", []string{"i.yaml", "line 1", "key max_procs", `want a whole number, got "many"`}, nil},
		{"bool-key-line", "q.yaml", "quiet: 3\n", []string{"q.yaml", "line 1", "key quiet", "want true or false"}, nil},
		{"string-list", "n.yaml", "net:\n  - deny\n", []string{"n.yaml", "line 2", "key net", "want one value, got a list"}, nil},
		{"env-list", "e2.yaml", "env: [A=b]\n", []string{"e2.yaml", "line 1", "key env", "want NAME: value pairs"}, nil},
		{"nested-list", "w2.yaml", "write:\n  - [/a]\n", []string{"w2.yaml", "line 2", "key write", "want a list of values"}, nil},
		{"duplicate", "dup.yaml", "write: /a\nwrite: /b\n", []string{"dup.yaml", "line 2", "key write", "given twice", "line 1"}, nil},
		{"not-a-mapping", "l.yaml", "- /a\n", []string{"l.yaml", "line 1", "want keys and values"}, nil},
		{"yaml-syntax", "y.yaml", "write: [/a\n", []string{"y.yaml", "line", "not valid YAML"}, nil},
		{"json-key-line", "t2.json", "{\n  \"write\": [\"/a\"],\n  \"timeout\": \"forever\"\n}", []string{"t2.json", "line 3", "key timeout", `invalid duration "forever"`}, nil},
		{"json-unknown-line", "u2.json", "{\n\n  \"wirte\": 1}", []string{"u2.json", "line 3", `unknown key "wirte"`}, nil},
		{"json-syntax", "x.json", "{\n  \"write\": [\"/a\",]\n}", []string{"x.json", "line 2", "not valid JSON"}, nil},
		{"json-trailing", "tr.json", "{}\n{}", []string{"tr.json", "line 2", "not valid JSON"}, nil},
		// A single path where a list is expected is a list of one.
		{"single-write", "w.yaml", "write: ./sbx\nread: /data\n", nil, func(t *testing.T, s *Settings) {
			if len(s.Write) != 1 || s.Write[0] != "./sbx" || len(s.Read) != 1 || s.Read[0] != "/data" {
				t.Fatalf("%+v", s)
			}
		}},
		{"single-write-json", "w.json", `{"write": "./sbx", "allow_exec": "git"}`, nil, func(t *testing.T, s *Settings) {
			if len(s.Write) != 1 || s.Write[0] != "./sbx" || len(s.AllowExec) != 1 || s.AllowExec[0] != "git" {
				t.Fatalf("%+v", s)
			}
		}},
		{"no-scratch", "ns.yaml", "scratch: []\n", nil, func(t *testing.T, s *Settings) {
			if s.Scratch == nil || len(s.Scratch) != 0 {
				t.Fatalf("scratch: [] gave %#v, want an empty list (no scratch directory)", s.Scratch)
			}
		}},
		{"null-scratch", "nn.yaml", "scratch:\n", nil, func(t *testing.T, s *Settings) {
			if s.Scratch != nil {
				t.Fatalf("scratch: (nothing) gave %#v, want the default", s.Scratch)
			}
		}},
		{"comments-only", "c.yaml", "# nothing yet\n", nil, func(t *testing.T, s *Settings) {}},
		{"json-types", "all.json", `{"max_procs": 8, "quiet": true, "env": {"A": "b"}, "memory": 1024, "timeout": 1.5}`, nil, func(t *testing.T, s *Settings) {
			if s.MaxProcs != 8 || !s.Quiet || s.Env["A"] != "b" || s.Memory != 1024 || time.Duration(s.Timeout) != 1500*time.Millisecond {
				t.Fatalf("%+v", s)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.file)
			os.WriteFile(p, []byte(tc.body), 0o644)
			s, err := LoadFile(p)
			if tc.errHas != nil {
				if err == nil {
					t.Fatalf("no error for %q", tc.body)
				}
				for _, h := range tc.errHas {
					if !strings.Contains(err.Error(), h) {
						t.Errorf("error %q lacks %q", err, h)
					}
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// TestLoadFileEmptyPaths: an empty path in any path key, as one value or in
// a list, YAML or JSON, is an error naming the file, the key and the line,
// never the current directory (issue 17 item 2: `write: [""]`, from an
// unset variable, made the cwd writable).
func TestLoadFileEmptyPaths(t *testing.T) {
	dir := t.TempDir()
	for key := range pathKeys {
		for _, form := range []struct{ name, yaml, json string }{
			{"one", `%s: ""`, `{"%s": ""}`},
			{"list", `%s: ["/a", ""]`, `{"%s": ["/a", ""]}`},
		} {
			for _, format := range []string{"yaml", "json"} {
				t.Run(key+"/"+form.name+"/"+format, func(t *testing.T) {
					body := fmt.Sprintf(form.yaml, key)
					if format == "json" {
						body = fmt.Sprintf(form.json, key)
					}
					if form.name == "list" && (key == "cwd" || key == "report" || key == "trace") {
						t.Skip("not a list key")
					}
					p := filepath.Join(dir, key+"-"+form.name+"."+format)
					os.WriteFile(p, []byte("\n"+body+"\n"), 0o644)
					_, err := LoadFile(p)
					if err == nil {
						t.Fatalf("%s: no error", body)
					}
					for _, h := range []string{p, "line 2", "key " + key, "empty value"} {
						if !strings.Contains(err.Error(), h) {
							t.Errorf("error %q lacks %q", err, h)
						}
					}
				})
			}
		}
	}
	// Every path key is a key of Settings.
	keys := settingsKeys()
	for k := range pathKeys {
		if _, ok := keys[k]; !ok {
			t.Errorf("pathKeys has %q, not a policy key", k)
		}
	}
}

func TestBuild(t *testing.T) {
	noexec := filepath.Join(t.TempDir(), "data.txt")
	os.WriteFile(noexec, []byte("x"), 0o644)
	env := []string{"PATH=/usr/bin:/bin", "HOME=/root", "SECRET_TOKEN=x", "LC_ALL=C.UTF-8"}
	sbx := filepath.Join(t.TempDir(), "new", "sbx")
	p, err := Build(&Settings{Write: []string{sbx}, AllowExec: []string{"sh"}, Read: []string{"/etc"}}, []string{"true"}, env)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(sbx)
	if p.Sandbox != real || p.Cwd != real || p.SandboxCreated {
		t.Errorf("sandbox %q cwd %q created %v", p.Sandbox, p.Cwd, p.SandboxCreated)
	}
	joined := strings.Join(p.Env, "\n")
	for _, want := range []string{"HOME=" + real, "TMPDIR=" + real + "/.tmp", "MPLCONFIGDIR=" + real + "/.tmp/matplotlib", "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"} {
		if !strings.Contains(joined, want) {
			t.Errorf("env lacks %s: %v", want, p.Env)
		}
	}
	if strings.Contains(joined, "SECRET_TOKEN") {
		t.Errorf("env leaks SECRET_TOKEN")
	}
	if st, err := os.Stat(real + "/.tmp"); err != nil || !st.IsDir() {
		t.Errorf("TMPDIR not created")
	}
	if len(p.Policy.AllowExec) != 1 || !strings.HasSuffix(p.Policy.AllowExec[0], "/sh") && !strings.HasSuffix(p.Policy.AllowExec[0], "/dash") && !strings.HasSuffix(p.Policy.AllowExec[0], "/bash") {
		t.Errorf("allow exec %v", p.Policy.AllowExec)
	}
	if p.Policy.RuntimeRoots == nil {
		t.Errorf("--read given but no runtime roots")
	}
	if p.NoFreeze || len(p.Warnings) != 0 {
		t.Errorf("no_freeze %v, warnings %q by default", p.NoFreeze, p.Warnings)
	}
	if p.KeepCaps != caps.DefaultKeep {
		t.Errorf("keep caps %s by default", p.KeepCaps)
	}
	if p, err := Build(&Settings{Write: []string{sbx}, KeepCap: []string{"CAP_NET_RAW"}}, []string{"true"}, env); err != nil ||
		p.KeepCaps != caps.DefaultKeep|1<<caps.NetRaw {
		t.Errorf("keep_cap net_raw: %v %+v", err, p)
	}
	if p, err := Build(&Settings{Write: []string{sbx}, NoFreeze: true}, []string{"true"}, env); err != nil ||
		!p.NoFreeze || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "no_freeze") {
		t.Errorf("no_freeze: %v %+v", err, p)
	}

	for _, tc := range []struct {
		name   string
		s      Settings
		argv   []string
		errHas string
		status int
	}{
		{"no-command", Settings{Write: []string{sbx}}, nil, "no command", 0},
		{"not-found", Settings{Write: []string{sbx}}, []string{"tracecell-no-such-cmd"}, "command not found", 127},
		{"not-executable", Settings{Write: []string{sbx}}, []string{noexec}, "not executable", 126},
		{"bad-net", Settings{Write: []string{sbx}, Net: "some"}, []string{"true"}, "--net", 0},
		{"bad-mode", Settings{Write: []string{sbx}, Mode: "strict"}, []string{"true"}, "--mode", 0},
		{"bad-device", Settings{Write: []string{sbx}, AllowDevice: []string{"/etc/*"}}, []string{"true"}, "--allow-device", 0},
		{"bad-cap", Settings{Write: []string{sbx}, KeepCap: []string{"net_raw", "net_rawr"}}, []string{"true"}, `--keep-cap: unknown capability "net_rawr"`, 0},
		{"root-write", Settings{Write: []string{"/"}}, []string{"true"}, "whole file system", 0},
		{"bad-exec", Settings{Write: []string{sbx}, AllowExec: []string{"tracecell-nope"}}, []string{"true"}, "--allow-exec tracecell-nope", 0},
		{"bad-cwd", Settings{Write: []string{sbx}, Cwd: "/nonexistent-dir"}, []string{"true"}, "--cwd", 0},
		{"empty-write", Settings{Write: []string{sbx, ""}}, []string{"true"}, "--write: empty value", 0},
		{"empty-read", Settings{Write: []string{sbx}, Read: []string{""}}, []string{"true"}, "--read: empty value", 0},
		{"empty-deny-read", Settings{Write: []string{sbx}, DenyRead: []string{""}}, []string{"true"}, "--deny-read: empty value", 0},
		{"empty-allow-exec", Settings{Write: []string{sbx}, AllowExec: []string{""}}, []string{"true"}, "--allow-exec: empty value", 0},
		{"empty-allow-device", Settings{Write: []string{sbx}, AllowDevice: []string{""}}, []string{"true"}, "--allow-device: empty value", 0},
		{"empty-scratch", Settings{Write: []string{sbx}, Scratch: []string{""}}, []string{"true"}, "--scratch: empty value", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(&tc.s, tc.argv, env)
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("err = %v, want %q", err, tc.errHas)
			}
			if nf, ok := err.(*NotFoundError); ok != (tc.status != 0) || ok && nf.Status != tc.status {
				t.Errorf("err %T %v, want status %d", err, err, tc.status)
			}
		})
	}
}

func TestStartChain(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	shims := filepath.Join(dir, ".pyenv", "shims")
	for _, d := range []string{bin, shims} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(p, body string) string {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	interp := mk(filepath.Join(bin, "myinterp"), "\x7fELF not really")
	mk(filepath.Join(shims, "python3"), "#!/usr/bin/env bash\nexec pyenv exec python3\n")
	pathVar := shims + ":" + bin
	for _, tc := range []struct {
		name      string
		file      string
		wantChain []string
		wantWarn  string
	}{
		{"env-name", mk(filepath.Join(dir, "a"), "#!/usr/bin/env myinterp\ncode\n"), []string{interp}, ""},
		{"env-options-and-vars", mk(filepath.Join(dir, "b"), "#!/usr/bin/env -S FOO=1 myinterp -u\n"), []string{interp}, ""},
		{"env-missing", mk(filepath.Join(dir, "c"), "#!/usr/bin/env nosuchinterp\n"), nil, "not in the tree's PATH"},
		{"direct-interpreter", mk(filepath.Join(dir, "d"), "#!/usr/bin/python3\n"), nil, ""},
		{"binary", interp, nil, ""},
		{"shim", mk(filepath.Join(shims, "python3"), "#!/usr/bin/env bash\nexec pyenv exec python3\n"), nil, "version-manager shim"},
		{"env-alone", mk(filepath.Join(dir, "e"), "#!/usr/bin/env\n"), nil, ""},
		// A script whose interpreter is a shim: directly, or the first
		// match of env's PATH lookup (issue 17 item 4).
		{"shebang-shim", mk(filepath.Join(dir, "f"), "#!"+filepath.Join(shims, "python3")+"\nprint(1)\n"), nil, "f starts with #!" + filepath.Join(shims, "python3") + ", and " + filepath.Join(shims, "python3") + " is a version-manager shim"},
		{"env-shim", mk(filepath.Join(dir, "g"), "#!/usr/bin/env python3\nprint(1)\n"), nil, "run the script with the interpreter itself, e.g. tracecell run -- $(pyenv which python3) " + filepath.Join(dir, "g")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain, warns := startChain(tc.file, filepath.Base(tc.file), pathVar, dir)
			if strings.Join(chain, ",") != strings.Join(tc.wantChain, ",") {
				t.Errorf("chain %v, want %v", chain, tc.wantChain)
			}
			got := strings.Join(warns, "\n")
			if (tc.wantWarn == "") != (got == "") || !strings.Contains(got, tc.wantWarn) {
				t.Errorf("warnings %q, want one containing %q", got, tc.wantWarn)
			}
		})
	}
}

// TestScriptElsewhere: a relative command or interpreter script that is not
// in the command's working directory (the sandbox by default) but is in
// tracecell's own fails with one line saying where it was looked up and
// what to do (issue 17 item 4: the README's `python3 analysis.py`).
func TestScriptElsewhere(t *testing.T) {
	caller := t.TempDir()
	t.Chdir(caller)
	callerReal, _ := filepath.EvalSymlinks(caller)
	sbx := filepath.Join(t.TempDir(), "sbx")
	for _, f := range []string{"analysis.py", "run.sh"} {
		if err := os.WriteFile(filepath.Join(caller, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inSbx := filepath.Join(sbx, "here.py")
	env := []string{"PATH=/usr/bin:/bin"}
	for _, tc := range []struct {
		name   string
		cwd    string
		argv   []string
		errHas string // "" for no error
	}{
		{"python-script", "", []string{"python3", "analysis.py"}, "analysis.py: not found in the command's working directory"},
		{"python-options", "", []string{"python3", "-u", "-X", "dev", "analysis.py", "arg"}, "pass the absolute path (python3 " + callerReal + "/analysis.py)"},
		{"python-dashdash", "", []string{"python3", "--", "analysis.py"}, "or --cwd " + callerReal},
		{"sh-script", "", []string{"sh", "-e", "run.sh"}, "run.sh: not found"},
		{"relative-command", "", []string{"./run.sh"}, "./run.sh: not found in the command's working directory"},
		{"python-c", "", []string{"python3", "-c", "analysis.py"}, ""},
		{"python-c-attached", "", []string{"python3", "-cprint(1)", "analysis.py"}, ""},
		{"python-m", "", []string{"python3", "-m", "analysis"}, ""},
		{"sh-c", "", []string{"sh", "-c", "run.sh"}, ""},
		{"absolute", "", []string{"python3", filepath.Join(caller, "analysis.py")}, ""},
		{"in-sandbox", "", []string{"python3", "here.py"}, ""},
		{"nowhere", "", []string{"python3", "missing.py"}, ""},
		{"cwd-is-caller", caller, []string{"python3", "analysis.py"}, ""},
		{"not-an-interpreter", "", []string{"cat", "analysis.py"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.MkdirAll(sbx, 0o755)
			os.WriteFile(inSbx, nil, 0o644)
			_, err := Build(&Settings{Write: []string{sbx}, Cwd: tc.cwd}, tc.argv, env)
			if tc.errHas == "" {
				if err != nil {
					t.Fatalf("%v", err)
				}
				return
			}
			var nf *NotFoundError
			if err == nil || !strings.Contains(err.Error(), tc.errHas) || !errors.As(err, &nf) || nf.Status != 127 {
				t.Fatalf("err %v, want status 127 containing %q", err, tc.errHas)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

func TestBuildExecPatterns(t *testing.T) {
	env := []string{"PATH=/usr/bin:/bin"}
	top, _ := filepath.EvalSymlinks(t.TempDir())
	sbx := filepath.Join(top, "sbx")
	real := filepath.Join(top, "real", "bin")
	os.MkdirAll(real, 0o755)
	os.Symlink(filepath.Join(top, "real"), filepath.Join(top, "link"))
	for _, tc := range []struct {
		name     string
		allow    string
		patterns []string
		warn     string
		errHas   string
	}{
		{"glob", real + "/*", []string{real + "/*"}, "", ""},
		{"glob through symlink", top + "/link/bin/py*", []string{real + "/py*"}, "", ""},
		{"directory", top + "/link/bin", []string{real + "/*"}, "", ""},
		{"directory slash", real + "/", []string{real + "/*"}, "", ""},
		{"covers sandbox", sbx + "/*", []string{sbx + "/*"}, "covers the writable root " + sbx, ""},
		{"relative", "bin/*", nil, "", "--allow-exec bin/*: a pattern must be an absolute path"},
		{"no such directory", top + "/nope/*", nil, "", "--allow-exec " + top + "/nope/*: the directory " + top + "/nope"},
		{"unclean", real + "//x*", nil, "", "is not clean"},
		{"bad syntax", real + "/[x", nil, "", "syntax error in pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := buildWant(t, &Settings{Write: []string{sbx}, AllowExec: []string{tc.allow}}, env, tc.errHas)
			if p == nil {
				return
			}
			if fmt.Sprint(p.Policy.AllowExecPatterns) != fmt.Sprint(tc.patterns) || len(p.Policy.AllowExec) != 0 {
				t.Errorf("patterns %q programs %q, want patterns %q", p.Policy.AllowExecPatterns, p.Policy.AllowExec, tc.patterns)
			}
			if got := strings.Join(p.Warnings, "\n"); tc.warn == "" && got != "" || !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}

// TestAllowExecNameNotWhereTreeWrites: a name is looked up in PATH without
// the programs the tree could replace (in a writable or scratch root): a
// PATH with the workspace's .venv/bin first must not make "--allow-exec
// python3" allow the file the tree leaves there. A red team ran a copy of
// id as "python3" this way.
func TestAllowExecNameNotWhereTreeWrites(t *testing.T) {
	top, _ := filepath.EvalSymlinks(t.TempDir())
	sbx, scratch, sys := filepath.Join(top, "sbx"), filepath.Join(top, "scratch"), filepath.Join(top, "sys")
	for _, d := range []string{filepath.Join(sbx, ".venv", "bin"), scratch, sys} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(sbx, ".venv", "bin", "tool"), filepath.Join(scratch, "tool"), filepath.Join(sys, "tool"),
		filepath.Join(sbx, ".venv", "bin", "only-here")} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link in the system directory to the workspace's file resolves
	// into the workspace: skipped as well.
	if err := os.Symlink(filepath.Join(sbx, ".venv", "bin", "tool"), filepath.Join(sys, "linked")); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + filepath.Join(sbx, ".venv", "bin") + ":" + scratch + ":" + sys + ":/usr/bin:/bin"
	for _, tc := range []struct {
		name, allow, want, warn, errHas string
	}{
		{"workspace and scratch skipped", "tool", filepath.Join(sys, "tool"), "--allow-exec tool: " + filepath.Join(sbx, ".venv", "bin", "tool") + " comes first in PATH but is in " + sbx, ""},
		{"only in the workspace", "only-here", "", "", "--allow-exec only-here: the only only-here in PATH is " + filepath.Join(sbx, ".venv", "bin", "only-here") + ", in " + sbx},
		{"a link into the workspace", "linked", "", "", "the only linked in PATH is " + filepath.Join(sbx, ".venv", "bin", "tool")},
		{"a path in the workspace: allowed, warned", filepath.Join(sbx, ".venv", "bin", "tool"), filepath.Join(sbx, ".venv", "bin", "tool"), "is in " + sbx + ", where the tree writes", ""},
		{"a system name", "sh", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := buildWant(t, &Settings{Write: []string{sbx}, Scratch: []string{scratch}, AllowExec: []string{tc.allow}}, []string{path}, tc.errHas)
			if p == nil {
				return
			}
			if len(p.Policy.AllowExec) != 1 || tc.want != "" && p.Policy.AllowExec[0] != tc.want || policy.Under(p.Policy.AllowExec[0], top) && tc.want == "" {
				t.Errorf("allowed %q, want %q", p.Policy.AllowExec, tc.want)
			}
			if got := strings.Join(p.Warnings, "\n"); tc.warn == "" && got != "" || !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}

// TestPrefixRoots: --read keeps an interpreter's prefix readable where the
// interpreter reads it, not the whole directory two levels above the
// program (for ~/tool that was /home, with every user's ~/.ssh).
func TestPrefixRoots(t *testing.T) {
	for _, c := range []struct {
		real string
		want []string
	}{
		{"/opt/python3.11/bin/python3.11", []string{"/opt/python3.11/lib", "/opt/python3.11/lib64", "/opt/python3.11/pyvenv.cfg",
			"/opt/python3.11/bin/pyvenv.cfg", "/opt/python3.11/bin/pybuilddir.txt", "/opt/python3.11/bin/python3.11._pth", "/opt/python3.11/bin/python3._pth"}},
		{"/home/u/tool", []string{"/home/lib", "/home/lib64", "/home/pyvenv.cfg"}},
		{"/home/u/bin/tool", []string{"/home/u/lib", "/home/u/lib64", "/home/u/pyvenv.cfg",
			"/home/u/bin/pyvenv.cfg", "/home/u/bin/pybuilddir.txt", "/home/u/bin/tool._pth"}},
		{"/usr/bin/python3.11", nil},
		{"/bin/sh", nil},
	} {
		t.Run(c.real, func(t *testing.T) {
			got := prefixRoots(c.real)
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("prefixRoots(%s) = %q, want %q", c.real, got, c.want)
			}
			for _, r := range got {
				if strings.HasPrefix("/home/u/.ssh/id_rsa", r+"/") || r == "/home" || r == "/home/u" {
					t.Errorf("%s makes ~/.ssh readable", r)
				}
			}
		})
	}
}

// TestAbsTildeUser: "~user/..." is that user's home, as a shell expands it
// (red team 2, F4: deny_read ["~root/.bashrc"] silently became
// <cwd>/~root/.bashrc); an unknown user is an error that says what to do,
// never a directory of that name under the current one.
func TestAbsTildeUser(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	cwd, _ := os.Getwd()
	t.Setenv("HOME", "/home/tc-test-home")
	for _, c := range []struct {
		in, want, err string
	}{
		{"~" + me.Username + "/.bashrc", filepath.Join(me.HomeDir, ".bashrc"), ""},
		{"~" + me.Username, filepath.Clean(me.HomeDir), ""},
		{"~/.bashrc", "/home/tc-test-home/.bashrc", ""},
		{"~", "/home/tc-test-home", ""},
		{"./~" + me.Username, filepath.Join(cwd, "~"+me.Username), ""},
		{"~tc-no-such-user-42/.bashrc", "", `no user named "tc-no-such-user-42"`},
		{"~tc-no-such-user-42", "", "./~tc-no-such-user-42"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := Abs(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("Abs(%q) = %q, %v; want a one-line error with %q", c.in, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Abs(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

// TestTildeUserInPolicy: a policy file's path key in "~user" form with no
// such user is an error naming the file, the line and the key; one with a
// real user is that user's home in the built policy (deny_read, read,
// scratch, allow_exec), not a path under the working directory.
func TestTildeUserInPolicy(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	dir := t.TempDir()
	for key := range pathKeys {
		for _, form := range []struct{ name, body string }{
			{"one", "%s: \"~tc-no-such-user-42/x\""},
			{"list", "%s: [\"/a\", \"~tc-no-such-user-42/x\"]"},
		} {
			t.Run(key+"/"+form.name, func(t *testing.T) {
				if form.name == "list" && (key == "cwd" || key == "report" || key == "trace") {
					t.Skip("not a list key")
				}
				p := filepath.Join(dir, key+"-"+form.name+".yaml")
				os.WriteFile(p, []byte("\n"+fmt.Sprintf(form.body, key)+"\n"), 0o644)
				_, err := LoadFile(p)
				if err == nil {
					t.Fatal("no error")
				}
				for _, h := range []string{p, "line 2", "key " + key, `no user named "tc-no-such-user-42"`} {
					if !strings.Contains(err.Error(), h) {
						t.Errorf("error %q lacks %q", err, h)
					}
				}
			})
		}
	}
	// Built: the entries are the user's home, not <cwd>/~user.
	home, err := filepath.EvalSymlinks(me.HomeDir)
	if err != nil {
		t.Skipf("the home directory %s of %s: %v", me.HomeDir, me.Username, err)
	}
	t.Chdir(t.TempDir())
	s := &Settings{Write: []string{t.TempDir()}, DenyRead: []string{"~" + me.Username + "/.tc-secret"},
		Read: []string{"~" + me.Username}, Scratch: []string{"~" + me.Username}}
	plan, err := Build(s, []string{"/bin/true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Policy.DenyRead; len(got) != 1 || got[0] != filepath.Join(home, ".tc-secret") {
		t.Errorf("deny_read %v, want [%s]", got, filepath.Join(home, ".tc-secret"))
	}
	if got := plan.Policy.ReadRoots; len(got) != 1 || got[0] != home {
		t.Errorf("read %v, want [%s]", got, home)
	}
	if got := plan.Policy.Scratch; len(got) != 1 || got[0] != home {
		t.Errorf("scratch %v, want [%s]", got, home)
	}
	for _, l := range [][]string{{"--deny-read"}, {"--scratch"}, {"--allow-exec"}} {
		s := &Settings{Write: []string{t.TempDir()}}
		switch l[0] {
		case "--deny-read":
			s.DenyRead = []string{"~tc-no-such-user-42/x"}
		case "--scratch":
			s.Scratch = []string{"~tc-no-such-user-42/x"}
		case "--allow-exec":
			s.AllowExec = []string{"~tc-no-such-user-42/x"}
		}
		_, err := Build(s, []string{"/bin/true"}, nil)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), l[0]+" ~tc-no-such-user-42/x") || !strings.Contains(err.Error(), "no user named") {
			t.Errorf("%s ~tc-no-such-user-42/x: %v, want a usage error naming the flag", l[0], err)
		}
	}
}

// TestEmptyReadRestricts: "read: []" in a policy file, as `policy suggest`
// writes it for a run whose reads were restricted, restricts reads to the
// runtime and the writable roots; it read back as "reads open".
func TestEmptyReadRestricts(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "p.yaml")
	os.WriteFile(f, []byte("write: ["+filepath.Join(dir, "sbx")+"]\nread: []\n"), 0o600)
	s, err := LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, []string{"true"}, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Policy.ReadRoots == nil {
		t.Errorf("read: [] left reads open")
	}
	os.WriteFile(f, []byte("write: ["+filepath.Join(dir, "sbx")+"]\n"), 0o600)
	s, _ = LoadFile(f)
	if p, err := Build(s, []string{"true"}, []string{"PATH=/usr/bin:/bin"}); err != nil || p.Policy.ReadRoots != nil {
		t.Errorf("no read key: read roots %v, %v", p.Policy.ReadRoots, err)
	}
}

// buildWant builds s for `true`: the plan, or nil after checking that the
// error holds errHas when one is wanted.
func buildWant(t *testing.T, s *Settings, env []string, errHas string) *Plan {
	t.Helper()
	p, err := Build(s, []string{"true"}, env)
	if errHas != "" {
		if err == nil || !strings.Contains(err.Error(), errHas) {
			t.Fatalf("err = %v, want %q", err, errHas)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}
