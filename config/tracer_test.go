package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/caps"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/tracer"
)

// TestTracerConfig: settings, through Build and Plan.TracerConfig, become
// the tracer configuration that `tracecell run` and the session worker
// start (the one assembly of both), with every limit in place.
func TestTracerConfig(t *testing.T) {
	sbx := t.TempDir()
	real, err := filepath.EvalSymlinks(sbx)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	interp := filepath.Join(bin, "myinterp")
	script := filepath.Join(bin, "script")
	for p, body := range map[string]string{interp: "\x7fELF not really", script: "#!/usr/bin/env myinterp\n"} {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	interpReal, _ := filepath.EvalSymlinks(interp)
	truePath, err := lookPath("true", "/usr/bin:/bin", real)
	if err != nil {
		t.Skip("no true in /usr/bin:/bin")
	}
	env := []string{"PATH=/usr/bin:/bin:" + bin}

	for _, tc := range []struct {
		name string
		s    Settings
		argv []string
		want tracer.Config // Path, Argv, Dir and Env are filled in from the plan
	}{
		{"defaults", Settings{Write: []string{sbx}}, []string{"true"},
			tracer.Config{Path: truePath, KeepCaps: caps.DefaultKeep}},
		{"limits", Settings{Write: []string{sbx}, Timeout: Duration(90 * time.Second), MaxProcs: 8,
			CPUTime: Duration(1500 * time.Millisecond), Memory: 2 << 30, MaxFileSize: 1 << 20, MaxOpenFiles: 64},
			[]string{"true"},
			tracer.Config{Path: truePath, KeepCaps: caps.DefaultKeep, Timeout: 90 * time.Second, MaxProcs: 8,
				Rlimits: []tracer.Rlimit{
					// SIGXCPU at the soft limit (rounded up), SIGKILL a second later.
					{Name: "cpu_seconds", Resource: unix.RLIMIT_CPU, Cur: 2, Max: 3},
					{Name: "address_space_bytes", Resource: unix.RLIMIT_AS, Cur: 2 << 30, Max: 2 << 30},
					{Name: "file_size_bytes", Resource: unix.RLIMIT_FSIZE, Cur: 1 << 20, Max: 1 << 20},
					{Name: "open_files", Resource: unix.RLIMIT_NOFILE, Cur: 64, Max: 64},
				}}},
		{"no-freeze-keep-cap", Settings{Write: []string{sbx}, NoFreeze: true, KeepCap: []string{"net_raw"}}, []string{"true"},
			tracer.Config{Path: truePath, NoFreeze: true, KeepCaps: caps.DefaultKeep | 1<<caps.NetRaw}},
		{"env-script", Settings{Write: []string{sbx}}, []string{script, "-x"},
			tracer.Config{Path: script, KeepCaps: caps.DefaultKeep, InitialChain: []string{interpReal}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			plan, err := Build(&s, tc.argv, env)
			if err != nil {
				t.Fatal(err)
			}
			got, err := plan.TracerConfig()
			if err != nil {
				t.Fatal(err)
			}
			if got.Policy == nil {
				t.Fatal("no compiled policy")
			}
			got.Policy = nil
			want := tc.want
			want.Argv, want.Dir, want.Env = tc.argv, real, plan.Env
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("tracer config\n got %+v\nwant %+v", got, &want)
			}
			if len(got.Rlimits) > 0 {
				got.Rlimits[0].Cur++
				if plan.Rlimits[0] == got.Rlimits[0] {
					t.Errorf("the tracer config shares its rlimits with the plan")
				}
			}
		})
	}
}

// TestTracerConfigPolicyError: a plan whose policy does not compile (a
// caller changed it after Build) gives no tracer configuration, and the
// error says it is the policy.
func TestTracerConfigPolicyError(t *testing.T) {
	p := &Plan{Policy: policy.Config{WriteRoots: []string{"/proc/self"}}}
	if _, err := p.TracerConfig(); err == nil || !strings.HasPrefix(err.Error(), "policy: ") || !strings.Contains(err.Error(), "/proc") {
		t.Fatalf("err = %v, want a policy error naming /proc", err)
	}
}

func TestRlimitCur(t *testing.T) {
	p := &Plan{Rlimits: []tracer.Rlimit{{Name: "cpu_seconds", Resource: unix.RLIMIT_CPU, Cur: 2, Max: 3}}}
	for _, tc := range []struct {
		name     string
		resource int
		want     uint64
	}{
		{"set", unix.RLIMIT_CPU, 2},
		{"unset", unix.RLIMIT_AS, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.RlimitCur(tc.resource); got != tc.want {
				t.Errorf("RlimitCur(%d) = %d, want %d", tc.resource, got, tc.want)
			}
		})
	}
}
