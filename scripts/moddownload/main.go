// Command moddownload fetches every module go.mod requires, the tools'
// included, before anything builds, and when the module proxy refuses one
// it says which module, why, and what in go.mod needs it:
//
//	go run ./scripts/moddownload [DIR]
//
// `make test` runs it first, so a module the proxy stopped serving fails in
// seconds with its name rather than minutes later inside a build step.
// DIR is the module's root (default: the current directory). It imports
// nothing outside the standard library, so it builds and runs while the
// modules it reports on are missing.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	dir := "."
	switch len(os.Args) {
	case 1:
	case 2:
		dir = os.Args[1]
	default:
		fmt.Fprintln(os.Stderr, "usage: moddownload [DIR]")
		os.Exit(2)
	}
	if err := run(dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "moddownload:", err)
		os.Exit(1)
	}
}

// failure is one module the go command could not fetch.
type failure struct {
	Path, Version, Error string
}

// downloaded is go mod download -json's object per module.
type downloaded struct {
	Path, Version, Error string
}

// goLine is the go command's "go: PATH@VERSION: reason" error.
var goLine = regexp.MustCompile(`^go: ([^@\s]+)@(\S+): (.+)$`)

func run(dir string, out io.Writer) error {
	cmd := exec.Command("go", "mod", "download", "-json")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var fails []failure
	n := 0
	dec := json.NewDecoder(&stdout)
	for {
		var d downloaded
		if err := dec.Decode(&d); err != nil {
			break // the end, or output cut short by a failure
		}
		n++
		if d.Error != "" {
			fails = append(fails, failure{d.Path, d.Version, strings.TrimPrefix(d.Error, d.Path+"@"+d.Version+": ")})
		}
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if m := goLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil && !hasFailure(fails, m[1], m[2]) {
			fails = append(fails, failure{m[1], m[2], m[3]})
		}
	}
	if runErr == nil && len(fails) == 0 {
		fmt.Fprintf(out, "go mod download: %d modules, tools included\n", n)
		return nil
	}
	if len(fails) == 0 {
		return fmt.Errorf("go mod download: %v\n%s", runErr, stderr.Bytes())
	}
	mf, err := readModFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	cache, err := goEnv(dir, "GOMODCACHE")
	if err != nil {
		return err
	}
	proxy, _ := goEnv(dir, "GOPROXY")
	var b strings.Builder
	fmt.Fprintf(&b, "go mod download: the module proxy (GOPROXY=%s) did not give %d module(s):\n", proxy, len(fails))
	for _, f := range fails {
		fmt.Fprintf(&b, "  %s@%s: %s\n", f.Path, f.Version, f.Error)
		for _, chain := range neededBy(mf, cache, f.Path) {
			fmt.Fprintf(&b, "    needed by %s\n", chain)
		}
	}
	b.WriteString("Pin versions the proxy serves (go get MODULE@VERSION, or go get -tool PKG@VERSION for a tool), then run make test again; docs/testing.md, \"Go modules and tools\".")
	return errors.New(b.String())
}

func hasFailure(fs []failure, path, version string) bool {
	for _, f := range fs {
		if f.Path == path && f.Version == version {
			return true
		}
	}
	return false
}

// modVersion is a module path and version.
type modVersion struct {
	Path, Version string
}

// modFile is the part of `go mod edit -json`'s GoMod the reports need.
type modFile struct {
	Require []struct {
		Path, Version string
		Indirect      bool
	}
	Tool []struct{ Path string }
}

// readModFile parses a go.mod file with the go command itself, which knows
// every directive of its version (tool lines included).
func readModFile(path string) (*modFile, error) {
	b, err := exec.Command("go", "mod", "edit", "-json", path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go mod edit -json %s: %w: %s", path, err, ee.Stderr)
		}
		return nil, err
	}
	var f modFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("go mod edit -json %s: %w", path, err)
	}
	return &f, nil
}

// escapePath is the module cache's case-encoding: each upper-case letter
// becomes '!' and its lower-case form (golang.org/x/mod/module.EscapePath),
// so paths that differ in case stay apart on case-insensitive disks.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func goEnv(dir, name string) (string, error) {
	cmd := exec.Command("go", "env", name)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// neededBy says, for a module the proxy did not give, which of go.mod's
// requirements need it, as chains up to a direct requirement or a tool:
// "github.com/google/rpmpack@v0.7.1 <- github.com/goreleaser/nfpm/v2@v2.48.0
// (tool github.com/goreleaser/nfpm/v2/cmd/nfpm)". Since go 1.17 go.mod
// lists every module the build needs, so each parent is one of its
// requirements; their go.mod files are already in the module cache (the go
// command read them to find the failing one).
func neededBy(mf *modFile, cache, path string) []string {
	type req struct {
		mod      modVersion
		indirect bool
	}
	var reqs []req
	for _, r := range mf.Require {
		reqs = append(reqs, req{modVersion{r.Path, r.Version}, r.Indirect})
	}
	parents := map[string][]modVersion{} // module path -> who requires it
	for _, r := range reqs {
		for _, p := range requires(cache, r.mod) {
			parents[p] = append(parents[p], r.mod)
		}
	}
	label := func(m modVersion) string {
		s := m.Path + "@" + m.Version
		var tools []string
		for _, t := range mf.Tool {
			if t.Path == m.Path || strings.HasPrefix(t.Path, m.Path+"/") {
				tools = append(tools, t.Path)
			}
		}
		if len(tools) > 0 {
			return s + " (tool " + strings.Join(tools, ", ") + ")"
		}
		for _, r := range reqs {
			if r.mod == m && !r.indirect {
				return s + " (required by go.mod)"
			}
		}
		return s
	}
	var chains []string
	var walk func(path string, chain []string, seen map[string]bool)
	walk = func(path string, chain []string, seen map[string]bool) {
		ps := parents[path]
		if len(ps) == 0 && len(chain) > 0 {
			chains = append(chains, strings.Join(chain, " <- "))
			return
		}
		for _, p := range ps {
			if seen[p.Path] || len(chains) >= 8 {
				continue
			}
			l := label(p)
			next := append(append([]string(nil), chain...), l)
			if l != p.Path+"@"+p.Version { // a tool or a direct requirement: the top
				chains = append(chains, strings.Join(next, " <- "))
				continue
			}
			seen[p.Path] = true
			walk(p.Path, next, seen)
			delete(seen, p.Path)
		}
	}
	walk(path, nil, map[string]bool{path: true})
	if len(chains) == 0 {
		for _, r := range reqs {
			if r.mod.Path == path {
				return []string{"go.mod itself (" + label(r.mod) + ")"}
			}
		}
		return []string{"nothing go.mod lists (its go.mod files are not in " + cache + "): go mod graph names it once the others download"}
	}
	sort.Strings(chains)
	return chains
}

// requires lists the module paths m's go.mod requires, read from the
// module cache's download directory; nothing when it is not there.
func requires(cache string, m modVersion) []string {
	f, err := readModFile(filepath.Join(cache, "cache", "download", escapePath(m.Path), "@v", escapePath(m.Version)+".mod"))
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range f.Require {
		out = append(out, r.Path)
	}
	return out
}
