// Package layers holds the test that keeps docs/architecture.md true: the
// product's packages in layers, each importing only its own layer and
// those below, the records importing no model, check or collector.
package layers

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/slowpath/slowpath/"

// layers are docs/architecture.md's, bottom first. A package belongs to
// the layer of the longest prefix that names it.
var layers = []struct {
	name     string
	packages []string
}{
	// Helpers with no knowledge of slowpath's data: quoting, files,
	// statistics, units and plurals, the host's roots, tables and the
	// HTML page every renderer fills.
	{"leaf", []string{"internal/safetext", "internal/quote", "internal/stdfile", "internal/stats", "internal/units",
		"internal/hostfs", "internal/dmioctl", "internal/trialsecret", "internal/report/table", "internal/report/htmlpage"}},
	// The files slowpath writes and reads back.
	{"records", []string{"internal/snapshot", "internal/pathrecord", "internal/benchresult", "internal/capture/capfile",
		"internal/fixstate", "internal/recordkind"}},
	{"collect", []string{"internal/collect"}},
	{"model", []string{"internal/model"}},
	{"check", []string{"internal/check", "internal/analyze"}},
	// What slowpath does with findings and measurements: plans and
	// their application, experiments, the lab, the fleet, the agent, and
	// the privileged probes (eBPF, capture) these run.
	{"domain", []string{"internal/fix", "internal/experiment", "internal/workload", "internal/lab", "internal/capture",
		"internal/bpf", "internal/agent", "internal/comparison", "internal/canary", "internal/nodediff",
		"internal/dropreport", "internal/fleet", "internal/fleettax", "internal/fleetverdict"}},
	{"report", []string{"internal/report"}},
	{"cli", []string{"internal/cli", "cmd"}},
}

// testSupport is for tests only: no product package imports it.
const testSupport = "internal/testing"

// records import only the standard library, leaves and other records.
const records = "records"

func layerOf(pkg string) (int, bool) {
	best, n := -1, -1
	for i, l := range layers {
		for _, p := range l.packages {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > n {
				best, n = i, len(p)
			}
		}
	}
	return best, best >= 0
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// productImports are the module-internal imports of every package under
// internal/ and cmd/, from their non-test files, by package directory.
func productImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "third_party") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			pkg := filepath.ToSlash(rel)
			if _, seen := out[pkg]; !seen {
				out[pkg] = nil
			}
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[pkg], dep) {
					out[pkg] = append(out[pkg], dep)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestLayers: every product package has a layer, imports nothing of a
// higher one and nothing of the test support; the records import only
// leaves and records.
func TestLayers(t *testing.T) {
	imports := productImports(t, "../..")
	if len(imports) < 50 {
		t.Fatalf("only %d packages found: is the test run from test/layers?", len(imports))
	}
	for pkg, deps := range imports {
		if under(pkg, testSupport) {
			continue
		}
		l, ok := layerOf(pkg)
		if !ok {
			t.Errorf("%s is in no layer: add it to docs/architecture.md and to this test's layers", pkg)
			continue
		}
		for _, dep := range deps {
			if under(dep, testSupport) {
				t.Errorf("%s imports the test support %s", pkg, dep)
				continue
			}
			dl, ok := layerOf(dep)
			switch {
			case !ok:
				continue // reported as a package of its own
			case dl > l:
				t.Errorf("%s (%s) imports %s of a higher layer (%s)", pkg, layers[l].name, dep, layers[dl].name)
			case layers[l].name == records && dl != l && layers[dl].name != "leaf":
				t.Errorf("record %s imports %s (%s): records import only leaves and records", pkg, dep, layers[dl].name)
			}
		}
	}
}

// folder is a package's top folder under internal/ (collect, fix, ...).
// A leaf is a folder of its own wherever it lives: it imports only
// leaves, so importing it reaches nothing of its folder's other packages
// (report/table and report/htmlpage are filled by domain packages such as
// dropreport as well as by the report layer's renderers).
func folder(pkg string) string {
	if l, ok := layerOf(pkg); ok && layers[l].name == "leaf" {
		return pkg
	}
	parts := strings.Split(pkg, "/")
	if parts[0] == "internal" && len(parts) > 1 {
		return parts[1]
	}
	return parts[0]
}

// TestNoFolderLoops: no folder imports, through its packages, a folder
// that imports it back (collect/host once imported fix/fixstate while
// fix/apply imported collect/host).
func TestNoFolderLoops(t *testing.T) {
	graph := map[string]map[string]bool{}
	for pkg, deps := range productImports(t, "../..") {
		from := folder(pkg)
		for _, dep := range deps {
			if to := folder(dep); to != from {
				if graph[from] == nil {
					graph[from] = map[string]bool{}
				}
				graph[from][to] = true
			}
		}
	}
	// A loop is an edge a -> b where b reaches a.
	reaches := func(from, to string) []string {
		prev := map[string]string{from: ""}
		queue := []string{from}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for m := range graph[n] {
				if _, seen := prev[m]; seen {
					continue
				}
				prev[m] = n
				if m == to {
					path := []string{m}
					for p := n; p != ""; p = prev[p] {
						path = append([]string{p}, path...)
					}
					return path
				}
				queue = append(queue, m)
			}
		}
		return nil
	}
	for a, tos := range graph {
		for b := range tos {
			if path := reaches(b, a); path != nil {
				t.Errorf("folders loop: %s -> %s", a, strings.Join(path, " -> "))
			}
		}
	}
}

// TestArchitectureDocNamesEveryLayer: the doc and the test say the same.
func TestArchitectureDocNamesEveryLayer(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, l := range layers {
		for _, p := range l.packages {
			if !strings.Contains(doc, p) {
				t.Errorf("docs/architecture.md does not name %s (layer %s)", p, l.name)
			}
		}
		if !strings.Contains(doc, fmt.Sprintf("**%s**", l.name)) {
			t.Errorf("docs/architecture.md has no layer **%s**", l.name)
		}
	}
}
