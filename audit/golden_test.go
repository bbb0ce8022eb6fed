package audit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/config"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/reports/golden")

// The recorded inputs of testdata/reports were made by running real
// commands under bin/tracecell (see testdata/reports/README.md):
// enforce.*: testdata/reports/agent.py enforced (a denied write outside,
// a denied exec, denied network); audit.*: the same in --mode audit;
// tree.*: a shell tree three levels deep with a signal outside the tree;
// session.json: a session server's report of two executions.
var goldenInputs = []struct {
	name  string
	files []string
}{
	{"enforce-trace", []string{"enforce.trace.jsonl"}},
	{"enforce-report", []string{"enforce.report.json"}},
	{"audit-report", []string{"audit.report.json"}},
	{"audit-both", []string{"audit.report.json", "audit.trace.jsonl"}},
	{"tree-trace", []string{"tree.trace.jsonl"}},
	{"session", []string{"session.json"}},
}

func summarise(t *testing.T, files []string) *Summary {
	t.Helper()
	a := NewAggregator()
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join("..", "testdata", "reports", f))
	}
	if err := ReadFiles(a, paths, nil, nil); err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	// The names are the paths given: keep them independent of where the
	// test runs from.
	for i := range s.Sources {
		s.Sources[i].Name = strings.TrimPrefix(s.Sources[i].Name, "../")
	}
	for _, p := range s.Processes {
		p.Source = strings.TrimPrefix(p.Source, "../")
	}
	for _, g := range s.Denials {
		for _, d := range g.Ops {
			d.SourceName = strings.TrimPrefix(d.SourceName, "../")
		}
	}
	return s
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "reports", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./audit -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./audit -run TestGolden -update rewrites it); got:\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	ext := map[string]string{"text": "txt", "markdown": "md", "html": "html", "json": "json"}
	for _, in := range goldenInputs {
		for _, format := range Formats {
			t.Run(in.name+"/"+format, func(t *testing.T) {
				s := summarise(t, in.files)
				var b bytes.Buffer
				if err := Render(&b, s, format, Options{}); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, in.name+"."+ext[format], b.Bytes())
			})
		}
	}
}

func TestGoldenColor(t *testing.T) {
	s := summarise(t, []string{"enforce.trace.jsonl"})
	var b bytes.Buffer
	if err := Render(&b, s, "text", Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(ansiRed+"denied"+ansiReset)) {
		t.Errorf("no red 'denied' in the coloured text")
	}
	checkGolden(t, "enforce-trace.color.txt", b.Bytes())
}

func TestGoldenSuggest(t *testing.T) {
	// The goldens allow these programs the recorded runs executed, which
	// suggest allows only when they are on this host (execGrant).
	for _, prog := range []string{"/usr/bin/cat", "/usr/bin/curl", "/usr/bin/dash", "/usr/bin/ls", "/usr/bin/mv", "/usr/bin/rm"} {
		if _, err := os.Stat(prog); err != nil {
			t.Skipf("%s is not on this host: the goldens allow it", prog)
		}
	}
	for _, in := range []struct{ name, file string }{
		{"audit-report", "audit.report.json"},
		{"audit-trace", "audit.trace.jsonl"},
		{"tree-trace", "tree.trace.jsonl"},
		{"session", "session.json"},
	} {
		t.Run(in.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Suggest(summarise(t, []string{in.file})).WriteYAML(&b); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, in.name+".policy.yaml", b.Bytes())
			// What suggest prints is a policy file run --policy accepts.
			f := filepath.Join(t.TempDir(), "p.yaml")
			os.WriteFile(f, b.Bytes(), 0o644)
			st, err := config.LoadFile(f)
			if err != nil {
				t.Fatalf("the suggested policy does not load: %v", err)
			}
			if st.Mode != "enforce" || st.Net == "" {
				t.Errorf("loaded mode %q, net %q", st.Mode, st.Net)
			}
		})
	}
}
