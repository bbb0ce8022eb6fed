package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/config"
)

// TestPolicyResolve: `policy resolve` prints a file that `--policy` reads
// back to the same settings, with its paths absolute as this process (its
// HOME, its directory) makes them, whatever HOME the run that reads it
// has; an empty read or scratch list stays empty (not the default).
func TestPolicyResolve(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("HOME", home)
	t.Chdir(dir)
	src := filepath.Join(dir, "p.yaml")
	os.WriteFile(src, []byte(`write: [./out, ~/w]
read: []
scratch: []
deny_read: [~/.ssh, /etc/shadow]
allow_exec: [python3, ~/bin/t, bin/rel, "/usr/bin/*"]
net: loopback
mode: audit
timeout: 90
cpu_time: 1m
memory: 2G
max_file_size: 1M
max_procs: 9
max_open_files: 77
env: {A: b}
keep_env: [TOKEN]
allow_device: [/dev/nvidia*]
keep_cap: [net_raw]
cwd: ~/w
report: ~/r.json
trace: t.jsonl
log_level: debug
log_format: json
quiet: true
no_freeze: true
`), 0o600)
	var out bytes.Buffer
	if err := policyResolve(src, &out); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "resolved.json")
	os.WriteFile(res, out.Bytes(), 0o600)
	t.Setenv("HOME", "/somewhere/else")
	got, err := config.LoadFile(res)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := &config.Settings{
		Write: []string{filepath.Join(dir, "out"), filepath.Join(home, "w")}, Read: []string{}, Scratch: []string{},
		DenyRead:  []string{filepath.Join(home, ".ssh"), "/etc/shadow"},
		AllowExec: []string{"python3", filepath.Join(home, "bin/t"), "bin/rel", "/usr/bin/*"},
		Net:       "loopback", Mode: "audit", Timeout: config.Duration(90 * time.Second), CPUTime: config.Duration(time.Minute),
		Memory: 2 << 30, MaxFileSize: 1 << 20, MaxProcs: 9, MaxOpenFiles: 77, Env: map[string]string{"A": "b"},
		KeepEnv: []string{"TOKEN"}, AllowDevice: []string{"/dev/nvidia*"}, KeepCap: []string{"net_raw"},
		Cwd: filepath.Join(home, "w"), Report: filepath.Join(home, "r.json"), Trace: filepath.Join(dir, "t.jsonl"),
		LogLevel: "debug", LogFormat: "json", Quiet: true, NoFreeze: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v\nfrom\n%s", got, want, out.String())
	}
	// Every key of the file format is carried: a key added to Settings
	// must be added to policyResolve.
	if n := strings.Count(out.String(), "\n  \""); n != len(config.Keys()) {
		t.Errorf("%d keys resolved, the format has %d (%v)", n, len(config.Keys()), config.Keys())
	}
	// Empty lists keep their meaning (a red team had "allow_exec: []"
	// come back as the SandboxAgent default, every program in /usr/bin).
	os.WriteFile(src, []byte("allow_exec: []\nread: []\nscratch: []\nkeep_env: []\n"), 0o600)
	out.Reset()
	if err := policyResolve(src, &out); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(res, out.Bytes(), 0o600)
	if got, err := config.LoadFile(res); err != nil || got.AllowExec == nil || got.Read == nil || got.Scratch == nil || got.KeepEnv == nil {
		t.Errorf("empty lists lost: %+v, %v\n%s", got, err, out.String())
	}
	// Bad input names the file and the key.
	os.WriteFile(src, []byte("deny_read: [~tc-no-such-user-42/x]\n"), 0o600)
	if err := policyResolve(src, &out); err == nil || !strings.Contains(err.Error(), "no user named") {
		t.Errorf("a ~user that does not exist: %v", err)
	}
}
