package server

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/worker"
)

type openAPIDoc struct {
	OpenAPI    string                               `yaml:"openapi"`
	Paths      map[string]map[string]any            `yaml:"paths"`
	Components struct{ Schemas map[string]schemaY } `yaml:"components"`
}

type schemaY struct {
	Required   []string           `yaml:"required"`
	Properties map[string]schemaY `yaml:"properties"`
	Items      *schemaY           `yaml:"items"`
	Enum       []string           `yaml:"enum"`
}

func loadOpenAPI(t *testing.T) (*openAPIDoc, string) {
	t.Helper()
	b, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d openAPIDoc
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.0") {
		t.Fatalf("openapi version %q", d.OpenAPI)
	}
	return &d, string(b)
}

// TestOpenAPIRoutes: every route the mux serves is documented, and every
// documented operation is served.
func TestOpenAPIRoutes(t *testing.T) {
	d, _ := loadOpenAPI(t)
	served := map[string]bool{}
	for _, r := range routes {
		p := strings.ReplaceAll(r.pattern, "{path...}", "{path}")
		served[strings.ToLower(r.method)+" "+p] = true
	}
	documented := map[string]bool{}
	for p, ops := range d.Paths {
		for m := range ops {
			switch m {
			case "get", "post", "put", "delete", "patch", "head", "options":
				documented[m+" "+p] = true
			}
		}
	}
	var missing, extra []string
	for k := range served {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("api/openapi.yaml out of date: served but not documented %v; documented but not served %v", missing, extra)
	}
}

// TestOpenAPISchemas: the documented schemas have exactly the JSON fields
// of the Go types the server sends, and every $ref resolves.
func TestOpenAPISchemas(t *testing.T) {
	d, text := loadOpenAPI(t)
	check := func(name string, v any) {
		s, ok := d.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s missing", name)
			return
		}
		want := jsonFields(reflect.TypeOf(v))
		var got []string
		for k := range s.Properties {
			got = append(got, k)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("schema %s has properties %v, the Go type has %v", name, got, want)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("schema %s requires %q, which it does not define", name, r)
			}
		}
	}
	check("Result", worker.Result{})
	check("ExecError", worker.ExecError{})
	check("Artifact", worker.Artifact{})
	check("WorkerInfo", worker.Info{})
	check("Event", report.Event{})
	check("Session", SessionInfo{})
	check("CopyRequest", copyRequest{})
	check("CopyReport", copyReport{})
	check("FileList", fileList{})
	check("ResetRequest", resetRequest{})
	check("CreateRequest", createRequest{})
	check("ExecRequest", execRequest{})
	if fe := d.Components.Schemas["FileList"].Properties["files"].Items; fe == nil {
		t.Error("FileList.files has no items schema")
	} else {
		got := keys(fe.Properties)
		if want := jsonFields(reflect.TypeOf(fileEntry{})); !reflect.DeepEqual(got, want) {
			t.Errorf("FileList.files items: %v, want %v", got, want)
		}
	}
	for _, m := range regexp.MustCompile(`\$ref: '#/components/(\w+)/(\w+)'`).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(text, "\n  "+m[1]+":") || !regexp.MustCompile(`\n    `+m[2]+`:`).MatchString(text) {
			t.Errorf("$ref %s/%s does not resolve", m[1], m[2])
		}
	}
}

// TestOpenAPIErrorCodes: every error code the server can send is named in
// the OpenAPI file.
func TestOpenAPIErrorCodes(t *testing.T) {
	_, text := loadOpenAPI(t)
	files, _ := os.ReadDir(".")
	re := regexp.MustCompile(`errf\(\d+, "([a-z_]+)"`)
	seen := 0
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f.Name())
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !strings.Contains(text, m[1]) {
				t.Errorf("error code %q (%s) is not documented in api/openapi.yaml", m[1], f.Name())
			}
		}
	}
	if seen < 20 {
		t.Fatalf("found only %d error codes in the sources; the pattern is stale", seen)
	}
}

// TestOpenAPIErrorCodeEnum: the Error schema's code enum is exactly the
// server's ErrorCodes, each once; every code an errf call of the sources
// names is one of them; and each of them is sent somewhere (by name or by
// its constant), so the enum is exactly what the server can return.
func TestOpenAPIErrorCodeEnum(t *testing.T) {
	d, _ := loadOpenAPI(t)
	enum := d.Components.Schemas["Error"].Properties["error"].Properties["code"].Enum
	if len(enum) == 0 {
		t.Fatal("components.schemas.Error.error.code has no enum")
	}
	known := map[ErrorCode]bool{}
	for _, c := range ErrorCodes() {
		if known[c] {
			t.Errorf("ErrorCodes names %q twice", c)
		}
		known[c] = true
	}
	inEnum := map[ErrorCode]bool{}
	for _, c := range enum {
		if inEnum[ErrorCode(c)] {
			t.Errorf("the enum names %q twice", c)
		}
		inEnum[ErrorCode(c)] = true
	}
	for c := range known {
		if !inEnum[c] {
			t.Errorf("error code %q is not in api/openapi.yaml's enum", c)
		}
	}
	for c := range inEnum {
		if !known[c] {
			t.Errorf("api/openapi.yaml's enum names %q, which is not in ErrorCodes", c)
		}
	}

	// The codes the sources send: errf(status, "code", ...) or
	// errf(status, CodeX, ...), and the constants compared with a code.
	consts := map[string]ErrorCode{}
	src, err := os.ReadFile("errcodes.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\t(Code\w+) ErrorCode = "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		consts[m[1]] = ErrorCode(m[2])
	}
	if len(consts) != len(known) {
		t.Errorf("errcodes.go declares %d codes, ErrorCodes has %d", len(consts), len(known))
	}
	used := map[ErrorCode]bool{}
	files, _ := os.ReadDir(".")
	re := regexp.MustCompile(`errf\([^,]+, (?:"([a-z_]+)"|(Code\w+))`)
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") || f.Name() == "errcodes.go" {
			continue
		}
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			c := ErrorCode(m[1])
			if m[2] != "" {
				c = consts[m[2]]
			}
			if !known[c] {
				t.Errorf("%s sends error code %q, which is not in ErrorCodes", f.Name(), m[0])
			}
			used[c] = true
		}
	}
	for c := range known {
		if !used[c] {
			t.Errorf("error code %q is in ErrorCodes but no errf call sends it", c)
		}
	}
}

func keys(m map[string]schemaY) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
