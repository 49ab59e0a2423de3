package check_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	_ "github.com/slowpath/slowpath/internal/check/netcheck"
	_ "github.com/slowpath/slowpath/internal/check/storagecheck"
)

// TestCheckIDsOnlyInTheirCheck: a check owns its facts (its watched
// counters, fleet series, drop reasons: fields of check.Check), so its id
// is written in its own file and nowhere else. Another package that names
// an id as a literal keeps a fact about the check the check does not
// know; it goes stale when the check changes. Test files are exempt: they
// name the ids they assert on.
func TestCheckIDsOnlyInTheirCheck(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range check.All() {
		ids[c.ID] = true
	}
	if len(ids) == 0 {
		t.Fatal("no check registered: the check packages are not imported")
	}
	const root = "../.."
	files := repoSources(t, root)
	fset := token.NewFileSet()
	registeredIn := map[string]string{} // id -> the file that registers it
	literals := map[string][]string{}   // id -> "file:line" of each literal
	consts := map[string]map[string]string{}
	var registers []registration
	for _, f := range files {
		af, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(f)
		if consts[dir] == nil {
			consts[dir] = map[string]string{}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, ok := stringLit(n); ok && ids[s] {
					p := fset.Position(n.Pos())
					literals[s] = append(literals[s], f+":"+strconv.Itoa(p.Line))
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if i < len(n.Values) {
						if lit, ok := n.Values[i].(*ast.BasicLit); ok {
							if s, ok := stringLit(lit); ok {
								consts[dir][name.Name] = s
							}
						}
					}
				}
			case *ast.CallExpr:
				if id := registeredID(n); id != nil {
					registers = append(registers, registration{f, id})
				}
			}
			return true
		})
	}
	for _, r := range registers {
		id := ""
		switch v := r.id.(type) {
		case *ast.BasicLit:
			id, _ = stringLit(v)
		case *ast.Ident:
			id = consts[filepath.Dir(r.file)][v.Name]
		}
		if id == "" {
			t.Errorf("%s: check.Register with an ID that is neither a string literal nor a constant of its package", r.file)
			continue
		}
		registeredIn[id] = r.file
	}
	for id := range ids {
		file, ok := registeredIn[id]
		if !ok {
			t.Errorf("%s is registered, but no source file registers it as check.Register(check.Check{ID: ...})", id)
			continue
		}
		for _, at := range literals[id] {
			if !strings.HasPrefix(at, file+":") {
				t.Errorf("%s: the check id %q outside its check (%s): declare the fact as a field of check.Check there, or export a constant from that file", at, id, file)
			}
		}
	}
}

type registration struct {
	file string
	id   ast.Expr
}

// registeredID returns the ID field of a check.Register(check.Check{...})
// call, nil for any other call.
func registeredID(call *ast.CallExpr) ast.Expr {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Register" || len(call.Args) != 1 {
		return nil
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "check" {
		return nil
	}
	lit, ok := call.Args[0].(*ast.CompositeLit)
	if !ok {
		return nil
	}
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "ID" {
				return kv.Value
			}
		}
	}
	return nil
}

func stringLit(l *ast.BasicLit) (string, bool) {
	if l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

// repoSources lists the repository's non-test Go files outside testdata
// (and outside hidden directories such as .git), relative to root.
func repoSources(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no Go source under %s", root)
	}
	return out
}
