package policy

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite api/rules.json and README.md's rule table from the catalogue")

// TestRuleCatalogueWellFormed: ids are unique, kebab-case, and each has a
// one-line meaning.
func TestRuleCatalogueWellFormed(t *testing.T) {
	id := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	seen := map[Rule]bool{}
	for _, r := range Rules() {
		t.Run(r.Rule.String(), func(t *testing.T) {
			if !id.MatchString(string(r.Rule)) {
				t.Errorf("id %q is not kebab-case", r.Rule)
			}
			if seen[r.Rule] {
				t.Errorf("id %q twice", r.Rule)
			}
			seen[r.Rule] = true
			if r.Meaning == "" || strings.Contains(r.Meaning, "\n") || strings.Contains(r.Meaning, "|") {
				t.Errorf("meaning %q: want one line without '|'", r.Meaning)
			}
			if !r.Rule.Known() {
				t.Errorf("Known() false for a catalogued rule")
			}
		})
	}
	if Rule("no-such-rule").Known() {
		t.Error(`Known() true for "no-such-rule"`)
	}
}

// TestRuleCatalogueConstants: every Rule constant of rules.go is in the
// catalogue and every catalogue entry is a constant there, so no rule can
// be added to one list only.
func TestRuleCatalogueConstants(t *testing.T) {
	src, err := os.ReadFile("rules.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[Rule]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\t(Rule[A-Za-z]+)\s+Rule = "([a-z-]+)"`).FindAllStringSubmatch(string(src), -1) {
		consts[Rule(m[2])] = true
	}
	cat := map[Rule]bool{}
	for _, r := range Rules() {
		cat[r.Rule] = true
	}
	compareSets(t, "constants in rules.go", consts, "the catalogue", cat)
}

// TestRuleCatalogueFile: api/rules.json, which the Python client's tests
// read, is the catalogue (go test ./policy -run TestRuleCatalogue -update
// rewrites it).
func TestRuleCatalogueFile(t *testing.T) {
	want, err := json.MarshalIndent(Rules(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	path := filepath.Join("..", "api", "rules.json")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the catalogue; run go test ./policy -run TestRuleCatalogue -update", path)
	}
}

const (
	tableStart = "<!-- rules: generated from policy.Rules (go test ./policy -run TestRuleCatalogue -update) -->\n"
	tableEnd   = "<!-- end of rules -->\n"
)

// ruleTable is README.md's table of rules.
func ruleTable() string {
	var b strings.Builder
	b.WriteString("| rule | decides | meaning |\n|---|---|---|\n")
	for _, r := range Rules() {
		what := "allow"
		if r.Deny {
			what = "deny"
		}
		b.WriteString("| `" + string(r.Rule) + "` | " + what + " | " + r.Meaning + " |\n")
	}
	return b.String()
}

// TestRuleCatalogueDocs: README.md's rule table is the catalogue, and every
// rule the README, docs/ and api/ name ("rule `x`", "rule": "x") is in it.
func TestRuleCatalogueDocs(t *testing.T) {
	readme := filepath.Join("..", "README.md")
	src, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i, j := strings.Index(s, tableStart), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no rule table between %q and %q", tableStart, tableEnd)
	}
	table := ruleTable()
	if *update {
		s = s[:i+len(tableStart)] + table + s[j:]
		if err := os.WriteFile(readme, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if got := s[i+len(tableStart) : j]; got != table {
		t.Errorf("README.md's rule table is not the catalogue; run go test ./policy -run TestRuleCatalogue -update\ngot:\n%s\nwant:\n%s", got, table)
	}

	files := []string{readme, filepath.Join("..", "api", "README.md"), filepath.Join("..", "api", "openapi.yaml")}
	docs, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, docs...)
	named := regexp.MustCompile("rules? `([a-z-]+)`|\"rule\": ?\"([a-z-]+)\"|rule ([a-z]+(?:-[a-z]+)+)\\b")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(b), -1) {
			r := Rule(m[1] + m[2] + m[3])
			if !r.Known() {
				t.Errorf("%s names rule %q, which is not in the catalogue", f, r)
			}
		}
	}
}

func compareSets(t *testing.T, an string, a map[Rule]bool, bn string, b map[Rule]bool) {
	t.Helper()
	var onlyA, onlyB []string
	for r := range a {
		if !b[r] {
			onlyA = append(onlyA, string(r))
		}
	}
	for r := range b {
		if !a[r] {
			onlyB = append(onlyB, string(r))
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	if len(onlyA) > 0 || len(onlyB) > 0 {
		t.Errorf("only in %s: %v; only in %s: %v", an, onlyA, bn, onlyB)
	}
}

// TestNoBareRuleIDs: Go code outside this package names rules by their
// constants, never by a literal id (a typo there would be a new, unknown
// rule in every report). Tests may spell ids out: they pin the wire format.
func TestNoBareRuleIDs(t *testing.T) {
	bare := regexp.MustCompile(`\bRule\s*(?::|==|!=)\s*"([a-z-]+)"`)
	checked := 0
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "testdata", "node_modules", "python":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, m := range bare.FindAllStringSubmatch(string(b), -1) {
			t.Errorf("%s: %s: name the rule by its policy constant", path, m[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d Go files; the walk is stale", checked)
	}
}
