package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// proxyModule writes module path@v1.0.0 into a file:// GOPROXY tree (the
// go command's own protocol: list, .info, .mod, .zip); what is left out
// stands for what the real proxy refuses.
func proxyModule(t *testing.T, root, path, gomod string, files map[string]string, withMod, withZip bool) {
	t.Helper()
	dir := filepath.Join(root, path, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("list", "v1.0.0\n")
	write("v1.0.0.info", `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`)
	if withMod {
		write("v1.0.0.mod", gomod)
	}
	if !withZip {
		return
	}
	f, err := os.Create(filepath.Join(dir, "v1.0.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	files["go.mod"] = gomod
	for name, body := range files {
		w, err := z.Create(path + "@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// fixture is a module with a tool (example.com/tool/cmd/tool) whose
// library needs example.com/gone, as nfpm v2.48.0 needed a module the
// proxy came to refuse.
func fixture(t *testing.T, goneMod, goneZip bool) (dir string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command: %v", err)
	}
	root := t.TempDir()
	proxy := filepath.Join(root, "proxy")
	proxyModule(t, proxy, "example.com/tool", "module example.com/tool\n\ngo 1.22\n\nrequire example.com/lib v1.0.0\n",
		map[string]string{"cmd/tool/main.go": "package main\n\nimport _ \"example.com/lib\"\n\nfunc main() {}\n"}, true, true)
	proxyModule(t, proxy, "example.com/lib", "module example.com/lib\n\ngo 1.22\n\nrequire example.com/gone v1.0.0\n",
		map[string]string{"lib.go": "package lib\n\nimport _ \"example.com/gone\"\n"}, true, true)
	proxyModule(t, proxy, "example.com/gone", "module example.com/gone\n\ngo 1.22\n",
		map[string]string{"gone.go": "package gone\n"}, goneMod, goneZip)
	proxyModule(t, proxy, "example.com/direct", "module example.com/direct\n\ngo 1.22\n",
		map[string]string{"direct.go": "package direct\n"}, true, true)
	dir = filepath.Join(root, "main")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := `module example.com/main

go 1.24

tool example.com/tool/cmd/tool

require example.com/direct v1.0.0

require (
	example.com/gone v1.0.0 // indirect
	example.com/lib v1.0.0 // indirect
	example.com/tool v1.0.0 // indirect
)
`
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(proxy))
	t.Setenv("GOMODCACHE", filepath.Join(root, "modcache"))
	t.Setenv("GOFLAGS", "-mod=mod -modcacherw")
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GONOSUMDB", "")
	t.Setenv("GOPRIVATE", "")
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOWORK", "off")
	return dir
}

func TestDownloadAll(t *testing.T) {
	dir := fixture(t, true, true)
	var out strings.Builder
	if err := run(dir, &out); err != nil {
		t.Fatal(err)
	}
	if want := "go mod download: 4 modules, tools included\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// The proxy refuses the module outright (no .mod): the graph cannot load.
// The error names the module, the proxy's words and the tool that needs it.
func TestRefusedModule(t *testing.T) {
	for _, tt := range []struct {
		name        string
		mod, zipped bool
	}{
		{"no go.mod", false, false},
		{"go.mod but no zip", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := fixture(t, tt.mod, tt.zipped)
			var out strings.Builder
			err := run(dir, &out)
			if err == nil {
				t.Fatalf("no error; output %q", out.String())
			}
			msg := err.Error()
			t.Logf("%s", msg)
			for _, w := range []string{
				"example.com/gone@v1.0.0: ",
				"needed by example.com/lib@v1.0.0 <- example.com/tool@v1.0.0 (tool example.com/tool/cmd/tool)",
				"go get -tool",
			} {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q", w)
				}
			}
			if strings.Contains(msg, "example.com/direct@v1.0.0:") {
				t.Error("a module the proxy serves is named as refused")
			}
		})
	}
}

func TestEscapePath(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/BurntSushi/toml": "github.com/!burnt!sushi/toml",
		"golang.org/x/mod":           "golang.org/x/mod",
		"v1.2.3-RC1":                 "v1.2.3-!r!c1",
	} {
		if got := escapePath(in); got != want {
			t.Errorf("escapePath(%q) = %q, want %q", in, got, want)
		}
	}
}
