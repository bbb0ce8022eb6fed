package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestReportErrors: bad input to report and policy gets one line naming
// what was wrong and what to do, and status 125.
func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notJSON := write("notjson.txt", "hello\n")
	other := write("other.json", `{"a": 1}`)
	badLine := write("bad.jsonl", `{"time":"2026-01-01T00:00:00Z","decision":"allow","pid":1,"kind":"read"}`+"\n"+`{"decision": "allow", "kind": "no-such-kind"}`+"\n")
	badKey := write("bad.yaml", "write: [/tmp/x]\nnet: allow\nallow_exce: [ls]\n")
	badNet := write("badnet.yaml", "net: sometimes\n")
	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"no-input", []string{"report"}, "no input: give a FILE"},
		{"missing", []string{"report", filepath.Join(dir, "nope.json")}, "no such file"},
		{"not-json", []string{"report", notJSON}, "not JSON"},
		{"other-json", []string{"report", other}, "neither a tracecell report, a trace nor a session report"},
		{"bad-event", []string{"report", badLine}, "event 2"},
		{"bad-format", []string{"report", "--format", "pdf", other}, `--format "pdf": want text, markdown, html or json`},
		{"flag-after-file", []string{"report", other, "--format", "html"}, "put the options first"},
		{"server-without-session", []string{"report", "--server", "unix:/nonexistent.sock"}, "--server and --session go together"},
		{"unreachable-server", []string{"report", "--server", "unix:" + filepath.Join(dir, "no.sock"), "--session", "s1"}, "is the server running?"},
		{"suggest-no-input", []string{"policy", "suggest"}, "no input"},
		{"check-no-file", []string{"policy", "check"}, "give one policy FILE"},
		{"check-unknown-key", []string{"policy", "check", badKey}, `line 3: unknown key "allow_exce"`},
		{"check-bad-value", []string{"policy", "check", badNet}, "net"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != 125 {
				t.Errorf("status %d, want 125 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.errHas) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tc.errHas)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, stderr)
			}
		})
	}
}

// TestPolicyCheck prints the effective policy (paths resolved, defaults
// filled in) and creates nothing: a writable root that does not exist yet
// is named, not made.
func TestPolicyCheck(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir()) // the effective policy's paths are resolved
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "not-yet")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte("write: ["+link+", "+missing+"]\nallow_exec: [ls]\nnet: loopback\n"), 0o644)
	code, out, stderr := runCLI(t, "policy", "check", p)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"is valid", "net: loopback", "- " + dir + "\n", "- " + missing + "\n", "/usr/bin/ls", "mode: enforce",
		"does not exist yet: tracecell run creates it"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Lstat(missing); err == nil {
		t.Errorf("policy check created %s", missing)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".tmp")); err == nil {
		t.Errorf("policy check created %s/.tmp", dir)
	}
}

// TestPolicyCheckGrants: the effective policy policy check prints shows
// everything that grants the tree something: exec patterns and
// directories (as their patterns) next to programs, the variables the
// file sets and passes through, the capabilities kept.
func TestPolicyCheckGrants(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte("allow_exec:\n  - \"/usr/bin/*\"\n  - \"/usr/sbin\"\n  - \"/usr/bin/ls\"\n"+
		"env: {LD_PRELOAD: /tmp/x.so}\nkeep_env: [SECRET_TOKEN]\nkeep_cap: [net_admin]\n"), 0o644)
	code, out, stderr := runCLI(t, "policy", "check", p)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	var eff struct {
		AllowExec []string          `yaml:"allow_exec"`
		Env       map[string]string `yaml:"env"`
		KeepEnv   []string          `yaml:"keep_env"`
		KeepCap   []string          `yaml:"keep_cap"`
	}
	if err := yaml.Unmarshal([]byte(out), &eff); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	bin, _ := filepath.EvalSymlinks("/usr/bin")
	sbin, _ := filepath.EvalSymlinks("/usr/sbin")
	ls, _ := filepath.EvalSymlinks("/usr/bin/ls")
	for _, want := range []string{bin + "/*", sbin + "/*", ls} {
		if !slices.Contains(eff.AllowExec, want) {
			t.Errorf("allow_exec %q lacks %s:\n%s", eff.AllowExec, want, out)
		}
	}
	if eff.Env["LD_PRELOAD"] != "/tmp/x.so" {
		t.Errorf("env %q: no LD_PRELOAD:\n%s", eff.Env, out)
	}
	if !slices.Contains(eff.KeepEnv, "SECRET_TOKEN") || !slices.Contains(eff.KeepEnv, "PATH") {
		t.Errorf("keep_env %q lacks SECRET_TOKEN or the default PATH:\n%s", eff.KeepEnv, out)
	}
	if !slices.Contains(eff.KeepCap, "net_admin") || !slices.Contains(eff.KeepCap, "kill") {
		t.Errorf("keep_cap %q lacks net_admin or the default kill:\n%s", eff.KeepCap, out)
	}
}

// TestReportFormatsCLI: every format renders a recorded report, colour only
// when asked (stdout is no terminal here), html self-contained.
func TestReportFormatsCLI(t *testing.T) {
	in := filepath.Join("..", "..", "testdata", "reports", "enforce.trace.jsonl")
	for _, f := range []string{"text", "markdown", "html", "json"} {
		code, out, stderr := runCLI(t, "report", "--format", f, in)
		if code != 0 || out == "" {
			t.Fatalf("%s: status %d: %s", f, code, stderr)
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("%s: colour on a pipe", f)
		}
		if f == "html" {
			for _, bad := range []string{"<script", "<link", "src=\"http", "@import", "url("} {
				if strings.Contains(out, bad) {
					t.Errorf("html has %q: not self-contained", bad)
				}
			}
		}
	}
	_, out, _ := runCLI(t, "report", "--color", "always", in)
	if !strings.Contains(out, "\x1b[31m") {
		t.Errorf("--color always: no colour")
	}
	o := filepath.Join(t.TempDir(), "r.md")
	if code, _, stderr := runCLI(t, "report", "-f", "markdown", "-o", o, in); code != 0 {
		t.Fatalf("-o: %s", stderr)
	}
	if b, _ := os.ReadFile(o); !strings.HasPrefix(string(b), "## tracecell report") {
		t.Errorf("-o wrote %q", b)
	}
}

// TestReportFromServer: report reads a session report from a URL (with the
// bearer token of --token-file) and from --server unix:SOCK --session ID.
func TestReportFromServer(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "reports", "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gotAuth, gotPath string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		if r.URL.Path != "/v1/sessions/demo/report" {
			http.Error(w, `{"error":{"code":"session_not_found"}}`, 404)
			return
		}
		w.Write(body)
	})
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)

	hs := httptest.NewServer(h)
	defer hs.Close()
	code, out, stderr := runCLI(t, "report", "--token-file", tok, hs.URL+"/v1/sessions/demo/report")
	if code != 0 || !strings.Contains(out, "demo#2 (session-execution)") || !strings.Contains(out, "exec-not-allowed") {
		t.Fatalf("status %d, stderr %q, out:\n%s", code, stderr, out)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization %q", gotAuth)
	}
	code, _, stderr = runCLI(t, "report", hs.URL+"/v1/sessions/nope/report")
	if code != 125 || !strings.Contains(stderr, "404") {
		t.Errorf("missing session: status %d, %q", code, stderr)
	}

	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	us := &http.Server{Handler: h}
	go us.Serve(l)
	defer us.Close()
	code, out, stderr = runCLI(t, "report", "--format", "json", "--server", "unix:"+sock, "--session", "demo")
	if code != 0 || !strings.Contains(out, `"kind": "session-execution"`) || gotPath != "/v1/sessions/demo/report" {
		t.Fatalf("unix: status %d, path %q, stderr %q", code, gotPath, stderr)
	}
	code, out, _ = runCLI(t, "policy", "suggest", "--server", "unix:"+sock, "--session", "demo")
	if code != 0 || !strings.Contains(out, `  - "/usr/bin/curl"`) {
		t.Errorf("policy suggest from the server: status %d:\n%s", code, out)
	}
}
