package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/config"
)

// TestParseLimits: both forms a report records its limits in, as decoded
// from JSON, and what cannot be carried.
func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		json    string
		want    Limits
		unknown string
		ok      bool
	}{
		{"run report", `{"timeout_seconds": 90, "max_procs": 64, "rlimits": [
			{"name": "cpu_seconds", "cur": 120, "max": 121},
			{"name": "address_space_bytes", "cur": 2147483648, "max": 2147483648},
			{"name": "file_size_bytes", "cur": 1073741824, "max": 1073741824},
			{"name": "open_files", "cur": 512, "max": 512}]}`,
			Limits{Timeout: 90 * time.Second, CPUTime: 120 * time.Second, Memory: 2 << 30, MaxFileSize: 1 << 30, MaxProcs: 64, MaxOpenFiles: 512}, "", true},
		{"run report, timeout only", `{"timeout_seconds": 1.5, "max_procs": 0, "rlimits": null}`,
			Limits{Timeout: 1500 * time.Millisecond}, "", true},
		{"an rlimit this version does not know", `{"rlimits": [{"name": "stack_bytes", "cur": 8388608, "max": 8388608}]}`,
			Limits{}, `rlimit "stack_bytes"`, true},
		{"a soft limit out of range", `{"rlimits": [{"name": "address_space_bytes", "cur": 1e30, "max": 1e30}]}`,
			Limits{}, `rlimit "address_space_bytes" without a soft limit in range`, true},
		{"session report", `{"StateDir": "/s", "ExecTimeout": 60000000000, "Memory": 1073741824, "CPUTime": 30000000000, "MaxFileSize": 0, "MaxProcs": 32, "MaxOpenFiles": 256}`,
			Limits{Timeout: time.Minute, CPUTime: 30 * time.Second, Memory: 1 << 30, MaxProcs: 32, MaxOpenFiles: 256}, "", true},
		{"session report of an older server", `{"StateDir": "/s", "ExecTimeout": 60000000000, "Memory": 1073741824}`,
			Limits{Timeout: time.Minute, Memory: 1 << 30},
			"cpu_time, max_file_size, max_procs, max_open_files (not recorded by the older server that wrote the report)", true},
		{"neither", `{"something": 1}`, Limits{}, "", false},
		{"not an object", `[1, 2]`, Limits{}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tc.json), &v); err != nil {
				t.Fatal(err)
			}
			got, unknown, ok := parseLimits(v)
			if ok != tc.ok || got != tc.want {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			if j := strings.Join(unknown, "; "); j != tc.unknown {
				t.Errorf("unknown %q, want %q", j, tc.unknown)
			}
		})
	}
}

// TestSuggestLimitsRoundTrip: the limits a suggestion writes read back, in
// package config, as the limits recorded.
func TestSuggestLimitsRoundTrip(t *testing.T) {
	want := Limits{Timeout: 90500 * time.Millisecond, CPUTime: 120 * time.Second, Memory: 3 << 29, MaxFileSize: 1 << 40, MaxProcs: 64, MaxOpenFiles: 512}
	var buf bytes.Buffer
	sg := &Suggestion{Net: "deny", Limits: &want}
	if err := sg.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(f, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := config.LoadFile(f)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	got := Limits{Timeout: time.Duration(s.Timeout), CPUTime: time.Duration(s.CPUTime), Memory: uint64(s.Memory),
		MaxFileSize: uint64(s.MaxFileSize), MaxProcs: s.MaxProcs, MaxOpenFiles: s.MaxOpenFiles}
	if got != want {
		t.Errorf("read back %+v, want %+v\n%s", got, want, buf.String())
	}
}

// TestSuggestLimitsSources: the recorded policy's source gives the limits;
// sources that differ are said, and a run report without limits ran
// without any.
func TestSuggestLimitsSources(t *testing.T) {
	run := func(name string, limits any) Source {
		return Source{Name: name, Kind: "report", Limits: limits}
	}
	mem := map[string]any{"rlimits": []any{map[string]any{"name": "address_space_bytes", "cur": float64(1 << 30), "max": float64(1 << 30)}}}
	for _, tc := range []struct {
		name    string
		sources []Source
		want    []string
	}{
		{"one run with a memory limit", []Source{run("a.json", mem)}, []string{"# limits as in the recorded run:\nmemory: 1073741824\n"}},
		{"a run without limits", []Source{run("a.json", nil)}, []string{"# limits: none in the recorded run\n"}},
		{"a trace alone", []Source{{Name: "t.jsonl", Kind: "trace"}}, []string{"# limits: not known"}},
		{"two runs that differ", []Source{run("a.json", mem), run("b.json", nil)},
			[]string{"memory: 1073741824\n", "# LIMITS: the sources ran under different limits: these are a.json's; b.json ran under none\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Suggest(&Summary{Sources: tc.sources}).WriteYAML(&buf); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("lacks %q:\n%s", w, buf.String())
				}
			}
		})
	}
}
