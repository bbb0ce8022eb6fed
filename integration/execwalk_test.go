package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathSearchIsOneDenial: a program looked up along PATH (subprocess,
// os.execvp) is tried in every PATH directory that holds it, each try a
// refused execve; that is one blocked action, so one notice and one report
// denial that keeps every path tried (report.ExecWalks), while the trace
// keeps each call. Ground truth: tctool, had any try run, would have
// written a file into the sandbox.
func TestPathSearchIsOneDenial(t *testing.T) {
	tools := realDir(t)
	var dirs []string
	for _, d := range []string{"bin1", "bin2", "bin3"} {
		dirs = append(dirs, filepath.Join(tools, d))
	}
	for _, tc := range []struct {
		name    string
		actions []string
		result  string
		want    []string // the report's denials: kind, and for exec the paths tried
	}{
		{"subprocess", []string{"subprocess"}, "subprocess:EACCES", []string{"exec 1,2,3"}},
		{"two subprocess calls", []string{"subprocess", "subprocess"}, "subprocess:EACCES subprocess:EACCES", []string{"exec 1,2,3", "exec 1,2,3"}},
		{"execvp twice in one process", []string{"execvp", "execvp"}, "execvp:EACCES execvp:EACCES", []string{"exec 1,2,3", "exec 1,2,3"}},
		{"a write between", []string{"execvp", "write", "execvp"}, "execvp:EACCES write:EACCES execvp:EACCES", []string{"exec 1,2,3", "create", "exec 1,2,3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbx := realDir(t)
			mark := filepath.Join(sbx, "ran")
			for _, d := range dirs {
				mkdir(t, d)
				writeFile(t, filepath.Join(d, "tctool"), "#!/bin/sh\necho ran >> "+mark+"\n", 0o755)
			}
			env := append(runEnv(t, sbx), "PATH="+strings.Join(dirs, ":"))
			tr := filepath.Join(t.TempDir(), "trace.jsonl")
			rp := filepath.Join(t.TempDir(), "report.json")
			args := []string{tcBin, "run", "--write", sbx, "--report", rp, "--trace", tr}
			for _, kv := range env {
				args = append(args, "--env", kv)
			}
			r := execute(t, "", os.Environ(), append(append(args, "--", python, pyScript("path_search.py")), tc.actions...))
			if got := resultOf(r.stdout); got != tc.result {
				t.Fatalf("result %q, want %q\nstderr:\n%s", got, tc.result, r.stderr)
			}
			if _, err := os.Stat(mark); !os.IsNotExist(err) {
				t.Fatalf("tctool ran (%s: %v)", mark, err)
			}

			// The report, read with the tried paths.
			var rep struct {
				Counts  struct{ Denied int }
				Denials []struct {
					Kind  string
					Paths []struct{ Given string }
					Tried []struct{ Given string }
				}
			}
			b, err := os.ReadFile(rp)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			var got []string
			calls := 0
			for _, d := range rep.Denials {
				if d.Kind != "exec" {
					got = append(got, d.Kind)
					calls++
					continue
				}
				var ns []string
				for i, p := range d.Tried {
					if want := filepath.Join(dirs[i], "tctool"); p.Given != want {
						t.Errorf("try %d of a search: %s, want %s", i, p.Given, want)
					}
					ns = append(ns, fmt.Sprint(i+1))
				}
				if len(d.Paths) == 0 || len(d.Tried) == 0 || d.Paths[0].Given != d.Tried[0].Given {
					t.Errorf("exec denial: paths %v, tried %v: want the first try in both", d.Paths, d.Tried)
				}
				got = append(got, "exec "+strings.Join(ns, ","))
				calls += len(d.Tried)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("report denials %q, want %q\n%s", got, tc.want, b)
			}
			if rep.Counts.Denied != calls {
				t.Errorf("counts.denied %d, want %d (each refused call)", rep.Counts.Denied, calls)
			}

			// One notice per action, at the first try.
			var notices []string
			for _, l := range noticeLines(r.stderr) {
				if strings.Contains(l, "blocked exec:") {
					notices = append(notices, l)
				}
			}
			execs := 0
			for _, w := range tc.want {
				if strings.HasPrefix(w, "exec") {
					execs++
				}
			}
			if len(notices) != execs {
				t.Fatalf("%d exec notices, want %d:\n%s", len(notices), execs, r.stderr)
			}
			for _, n := range notices {
				if !strings.Contains(n, `execve("`+filepath.Join(dirs[0], "tctool")+`")`) {
					t.Errorf("notice not at the first try: %s", n)
				}
			}

			// The trace keeps every call.
			tb, err := os.ReadFile(tr)
			if err != nil {
				t.Fatal(err)
			}
			traced := 0
			for _, l := range strings.Split(string(tb), "\n") {
				if strings.Contains(l, `"kind":"exec"`) && strings.Contains(l, `"decision":"deny"`) {
					traced++
				}
			}
			if traced != 3*execs {
				t.Errorf("%d refused execs in the trace, want %d", traced, 3*execs)
			}
		})
	}
}
