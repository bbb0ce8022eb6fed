package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	for _, want := range []string{"HOME=" + real, "TMPDIR=" + real + "/.tmp", "MPLCONFIGDIR=" + real + "/.config/matplotlib", "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"} {
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
	pathVar := bin
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
