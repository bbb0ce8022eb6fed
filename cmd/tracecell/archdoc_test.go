package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestArchitectureDoc keeps docs/ARCHITECTURE.md true (issue 18): every
// repository path it writes in backticks exists, and every Go name it
// writes in backticks is declared where it says (docChecker), so a rename
// that leaves the map behind fails here. README.md and docs/DESIGN.md link
// to it.
func TestArchitectureDoc(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := newDocChecker(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, checked := dc.check(string(doc))
	t.Logf("docs/ARCHITECTURE.md: %d paths and names checked", checked)
	for _, p := range problems {
		t.Errorf("docs/ARCHITECTURE.md: %s", p)
	}
	// The map names a file and its functions at every stage: far fewer
	// checked names means the backticks, and the check, were lost.
	if checked < 150 {
		t.Errorf("docs/ARCHITECTURE.md: only %d paths and names checked, want at least 150", checked)
	}
	for _, l := range []struct{ file, link string }{
		{"README.md", "](docs/ARCHITECTURE.md)"},
		{"docs/DESIGN.md", "](ARCHITECTURE.md)"},
	} {
		b, err := os.ReadFile(filepath.Join(root, l.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), l.link) {
			t.Errorf("%s has no link %q to the architecture map", l.file, l.link)
		}
	}
}

// TestDocChecker shows that the check fails on a wrong path or name, on a
// small repository of its own.
func TestDocChecker(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"pkga/a.go": `package pkga

// T is a type with a field and a method.
type T struct{ F int }

func (t *T) M() {}

// I is an interface.
type I interface{ Read() }

type g[X any] struct{}

func (g[X]) Gen() {}

func Fn() {}

const C, D = 1, 2

var V = 0
`,
		"pkga/a_test.go":     "package pkga\n\nfunc OnlyInTest() {}\n",
		"cmd/tool/main.go":   "package main\n\nfunc run() {}\n",
		"py/mod/format.py":   "class Denial:\n    summary: str = \"\"\n\n    def text(self) -> str:\n        return ''\n\n\ndef describe_denial(d):\n    pass\n",
		"docs/README.md":     "# docs\n",
		"internal/deep/d.go": "package deep\n\ntype Deep struct{}\n\nfunc (Deep) Walk() {}\n",
	}
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		doc  string
		bad  []string // tokens reported, in order
	}{
		{"file", "`pkga/a.go`", nil},
		{"missing file", "`pkga/b.go`", []string{"pkga/b.go"}},
		{"directory", "`pkga/` and `docs/README.md`", nil},
		{"missing directory", "`pkgb/`", []string{"pkgb/"}},
		{"top-level names", "`pkga.T`, `pkga.Fn`, `pkga.C`, `pkga.D`, `pkga.V`, `pkga.Fn()`", nil},
		{"missing name", "`pkga.Missing`", []string{"pkga.Missing"}},
		{"test-only name", "`pkga.OnlyInTest`", []string{"pkga.OnlyInTest"}},
		{"members", "`pkga.T.M`, `pkga.T.F`, `pkga.I.Read`, `pkga.g.Gen`", nil},
		{"missing member", "`pkga.T.N`", []string{"pkga.T.N"}},
		{"member of another type", "`pkga.I.M`", []string{"pkga.I.M"}},
		{"package by directory", "`cmd/tool.run`, `internal/deep.Deep.Walk`, `deep.Deep`", nil},
		{"main by name", "`main.run`", []string{"main.run"}},
		{"Type.Member after a file", "`pkga/a.go`: `T.M`, then `internal/deep.Deep`: `Deep.Walk`", nil},
		{"Type.Member, wrong context", "`internal/deep/d.go`: `T.M`", []string{"T.M"}},
		{"Type.Member without context", "`T.M`", []string{"T.M"}},
		{"unknown package", "`pkgz.Fn`", []string{"pkgz.Fn"}},
		{"python names", "`py/mod/format.py`: `format.describe_denial`, `Denial.summary`, `Denial.text`", nil},
		{"missing python name", "`py/mod/format.py`: `format.describe`", []string{"format.describe"}},
		{"not checked", "`PTRACE_SEIZE`, `/etc/x`, `open(\"/etc/x\", \"w\")`, `--trace`, `tracecell run`, `worker.py`, `0x80`", nil},
		{"fenced block skipped", "```\n`pkga.Missing`\n```\n`pkga.Fn`", nil},
	}
	dc, err := newDocChecker(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, _ := dc.check(tt.doc)
			var got []string
			for _, p := range problems {
				got = append(got, p[strings.Index(p, "`")+1:strings.LastIndex(p, "`")])
			}
			if strings.Join(got, "|") != strings.Join(tt.bad, "|") {
				t.Errorf("check(%q) reported %q, want %q\n%s", tt.doc, got, tt.bad, strings.Join(problems, "\n"))
			}
		})
	}
}

// docChecker checks the backticked spans of a Markdown document against a
// Go repository. Outside fenced blocks:
//   - a relative path with a file extension (`tracer/seccomp.go`) must be a
//     file of the repository, and one ending in "/" (`decode/`) a
//     directory; a name without a directory (`seccomp.go`) is looked for in
//     the directory of the last path written;
//   - `pkg.Name` must be a top-level declaration of the package, and
//     `pkg.Type.Member` a method or field of the type (of an interface: a
//     method); pkg is a package name or a directory (`cmd/tracecell`,
//     `internal/procfs`), and test files do not count;
//   - `Type.Member` is a member of a type of the package last written (a
//     path or a qualified name); after a Python file (`.py`), `module.name`
//     and `Class.member` are a def, class or annotated field of that file;
//   - anything else (`PTRACE_SEIZE`, `/etc/x`, `--trace`) is prose.
type docChecker struct {
	// root is the repository's directory.
	root string
	// byName lists the directories (relative, slash-separated) of each
	// package name, main excluded.
	byName map[string][]string
	// pkgs caches the parsed declarations of a directory, nil for one
	// without Go files.
	pkgs map[string]*declSet
}

// declSet is what a package declares outside its test files.
type declSet struct {
	// top are its top-level functions, types, variables and constants.
	top map[string]bool
	// members are the methods, struct fields and interface methods of
	// each type.
	members map[string]map[string]bool
}

var (
	codeSpan  = regexp.MustCompile("`([^`\n]+)`")
	qualified = regexp.MustCompile(`^([A-Za-z_][\w/]*)\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?$`)
	pathLike  = regexp.MustCompile(`^[\w.-]+(?:/[\w.-]+)*/?$`)
)

// fileExts are the extensions that make a span a file path.
var fileExts = map[string]bool{".go": true, ".py": true, ".md": true, ".yaml": true, ".yml": true,
	".json": true, ".sh": true, ".txt": true, ".toml": true, ".png": true, ".c": true}

// newDocChecker indexes the package names of the repository at root.
func newDocChecker(root string) (*docChecker, error) {
	dc := &docChecker{root: root, byName: map[string][]string{}, pkgs: map[string]*declSet{}}
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil || seen[dir] {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		seen[dir] = true
		if n := f.Name.Name; n != "main" {
			dc.byName[n] = append(dc.byName[n], filepath.ToSlash(dir))
		}
		return nil
	})
	return dc, err
}

// decls parses the non-test Go files of dir (relative), nil when it has
// none.
func (dc *docChecker) decls(dir string) (*declSet, error) {
	if ds, ok := dc.pkgs[dir]; ok {
		return ds, nil
	}
	ents, err := os.ReadDir(filepath.Join(dc.root, filepath.FromSlash(dir)))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var ds *declSet
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dc.root, filepath.FromSlash(dir), n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if ds == nil {
			ds = &declSet{top: map[string]bool{}, members: map[string]map[string]bool{}}
		}
		ds.add(f)
	}
	dc.pkgs[dir] = ds
	return ds, nil
}

// add records the declarations of f.
func (ds *declSet) add(f *ast.File) {
	member := func(typ, name string) {
		if ds.members[typ] == nil {
			ds.members[typ] = map[string]bool{}
		}
		ds.members[typ][name] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				ds.top[d.Name.Name] = true
				continue
			}
			if typ := recvType(d.Recv.List[0].Type); typ != "" {
				member(typ, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						ds.top[n.Name] = true
					}
				case *ast.TypeSpec:
					ds.top[s.Name.Name] = true
					var fields *ast.FieldList
					switch tt := s.Type.(type) {
					case *ast.StructType:
						fields = tt.Fields
					case *ast.InterfaceType:
						fields = tt.Methods
					}
					if fields == nil {
						continue
					}
					for _, fl := range fields.List {
						for _, n := range fl.Names {
							member(s.Name.Name, n.Name)
						}
						if len(fl.Names) == 0 { // embedded: named by its type
							if n := recvType(fl.Type); n != "" {
								member(s.Name.Name, n)
							}
						}
					}
				}
			}
		}
	}
}

// recvType is the type name of a receiver or embedded field: T, *T, T[X],
// pkg.T.
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// check returns the problems of doc, each naming its span in backticks,
// and how many spans it checked.
func (dc *docChecker) check(doc string) (problems []string, checked int) {
	ctxDir, ctxPy := "", "" // the package directory, or Python file, last written
	fenced := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			tok := m[1]
			bad := func(why string) { problems = append(problems, "line "+strconv.Itoa(i+1)+": `"+tok+"` "+why) }
			t := strings.TrimSuffix(tok, "()")
			ext := path.Ext(t)
			switch {
			case strings.HasPrefix(t, "/") || !pathLike.MatchString(t):
				continue // prose: an absolute path, a call, a command
			case fileExts[ext]:
				checked++
				p := t
				if !strings.Contains(tok, "/") {
					if ctxDir == "" {
						if ext == ".go" {
							bad("names no directory, and no package came before it")
						}
						continue
					}
					p = ctxDir + "/" + tok
				}
				st, err := os.Stat(filepath.Join(dc.root, filepath.FromSlash(p)))
				if err != nil || st.IsDir() {
					bad("is no file of the repository")
					continue
				}
				ctxDir, ctxPy = "", ""
				if ext == ".py" {
					ctxPy = p
				} else if ds, _ := dc.decls(path.Dir(p)); ds != nil {
					ctxDir = path.Dir(p)
				}
				continue
			case strings.HasSuffix(tok, "/"):
				checked++
				dir := strings.TrimSuffix(tok, "/")
				if st, err := os.Stat(filepath.Join(dc.root, filepath.FromSlash(dir))); err != nil || !st.IsDir() {
					bad("is no directory of the repository")
					continue
				}
				ctxDir, ctxPy = "", ""
				if ds, _ := dc.decls(dir); ds != nil {
					ctxDir = dir
				}
				continue
			}
			q := qualified.FindStringSubmatch(t)
			if q == nil {
				continue
			}
			checked++
			if why := dc.resolve(q[1], q[2], q[3], &ctxDir, &ctxPy); why != "" {
				bad(why)
			}
		}
	}
	return problems, checked
}

// resolve checks a.b or a.b.c (c empty for two parts) and moves the
// context to the package it found them in. It returns why not, "" when
// declared.
func (dc *docChecker) resolve(a, b, c string, ctxDir, ctxPy *string) string {
	var dirs []string
	if strings.Contains(a, "/") {
		dirs = []string{a}
	} else {
		dirs = dc.byName[a]
	}
	for _, dir := range dirs {
		ds, err := dc.decls(dir)
		if err != nil {
			return "cannot be checked: " + err.Error()
		}
		if ds == nil {
			continue
		}
		if (c == "" && ds.top[b]) || (c != "" && ds.members[b][c]) {
			*ctxDir, *ctxPy = dir, ""
			return ""
		}
	}
	if c == "" && *ctxDir != "" {
		if ds, _ := dc.decls(*ctxDir); ds != nil && ds.members[a][b] {
			return ""
		}
	}
	if *ctxPy != "" {
		if dc.pyDeclares(*ctxPy, a, b, c) {
			return ""
		}
		return "is not declared in " + *ctxPy
	}
	switch {
	case len(dirs) > 0:
		return "is not declared in package " + strings.Join(dirs, ", ")
	case *ctxDir != "":
		return "names no package, and no type of package " + *ctxDir
	}
	return "names no package (and no file or package came before it)"
}

// pyDeclares reports whether the Python file p declares a.b (a its module
// or a class) or a.b.c: a def, a class or an annotated field.
func (dc *docChecker) pyDeclares(p, a, b, c string) bool {
	src, err := os.ReadFile(filepath.Join(dc.root, filepath.FromSlash(p)))
	if err != nil {
		return false
	}
	names := []string{a, b, c}
	if a == strings.TrimSuffix(path.Base(p), ".py") {
		names = names[1:]
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		re := regexp.MustCompile(`(?m)^\s*(?:(?:async\s+)?def|class)\s+` + n + `\b|^\s+` + n + `\s*:`)
		if !re.Match(src) {
			return false
		}
	}
	return true
}
