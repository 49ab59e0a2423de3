package hostile_test

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"golang.org/x/tools/txtar"
)

// TestSnapshots runs each hostile snapshot through doctor (every format),
// fix (every format, and --persist into a temporary root), diff and agent.
func TestSnapshots(t *testing.T) {
	slowpath(t)
	root := corpusRoot(t)
	for _, c := range snapCases {
		t.Run(strings.TrimSuffix(c.File, ".json"), func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(root, "snapshots", c.File)
			h := c.value(t)
			hint := fieldHint[c.Role]
			t.Run("doctor", func(t *testing.T) { doctor(t, c, file, h, hint) })
			t.Run("fix", func(t *testing.T) { fixFormats(t, c, file, h, hint) })
			t.Run("persist", func(t *testing.T) { persist(t, c, file, h, hint) })
			t.Run("diff", func(t *testing.T) { diff(t, c, file, h, hint) })
			t.Run("agent", func(t *testing.T) { agent(t, c, file, h, hint) })
		})
	}
}

func doctor(t *testing.T, c snapCase, file, h, hint string) {
	for _, format := range []string{"text", "json", "markdown", "html"} {
		s := newSandbox(t)
		r := s.run(t, []string{"doctor", "--from", file, "--format", format})
		if !outcome(t, r, c.Expect, hint, 0, 1) {
			continue
		}
		what := "doctor --format " + format
		switch format {
		case "tuned":
			tunedProfile(t, what, r.stdout, c.Role, h)
		case "json":
			doc := decodeJSON(t, what, r.stdout)
			// The value reaches the report (a finding's subject, a path).
			if doc != nil && (c.Role == roleIface || c.Role == roleDM || c.Role == roleMount) && !hasValue(doc, h, false) {
				t.Errorf("%s: %q appears in no value of the report", what, h)
			}
		case "html":
			checkHTML(t, what, r.stdout, h)
		default:
			checkNoControl(t, what, r.stdout)
		}
	}
}

func fixFormats(t *testing.T, c snapCase, file, h, hint string) {
	for _, format := range []string{"shell", "files", "kubernetes", "tuned", "json"} {
		s := newSandbox(t)
		r := s.run(t, []string{"fix", "--from", file, "--format", format})
		if !outcome(t, r, c.Expect, hint, 0) {
			continue
		}
		what := "fix --format " + format
		switch format {
		case "shell":
			calls := checkShell(t, what, r.stdout, shellRules{commands: planCommands})
			switch c.Role {
			case roleIface:
				argIs(t, what, calls, "ethtool", "-G", 2, h)
			case roleDM:
				argIs(t, what, calls, "dmsetup", "", 0, h)
				for _, cl := range calls {
					for i, a := range cl.args {
						if cl.args[0] == "awk" && i > 0 && cl.args[i-1] == "-v" && strings.HasPrefix(a, "n=") && a != "n="+h {
							t.Errorf("%s: awk -v %q: want n=%q", what, a, h)
						}
					}
				}
			}
		case "files":
			files(t, what, r.stdout, c.Role, h)
		case "kubernetes":
			calls, ds := checkKubernetes(t, what, r.stdout)
			if c.Role == roleIface {
				if !ds {
					t.Errorf("%s: no DaemonSet: the ring fix of %q is missing", what, h)
				} else {
					argIs(t, what, calls, "ethtool", "-G", 2, h)
				}
			}
		case "json":
			doc := decodeJSON(t, what, r.stdout)
			if doc == nil {
				continue
			}
			switch c.Role {
			case roleIface:
				if !containsExact(fieldValues(doc, "entries", "*", "steps", "*", "ring", "interface"), h) {
					t.Errorf("%s: no ring step names %q", what, h)
				}
			case roleDM:
				if !containsExact(fieldValues(doc, "entries", "*", "steps", "*", "crypt", "name"), h) {
					t.Errorf("%s: no crypt step names %q", what, h)
				}
			case roleKernel:
				if !containsExact(fieldValues(doc, "kernel"), h) {
					t.Errorf("%s: kernel is not %q", what, h)
				}
			}
		}
	}
}

func containsExact(vs []any, want string) bool {
	for _, v := range vs {
		if s, ok := v.(string); ok && s == want {
			return true
		}
	}
	return false
}

// files checks the txtar archive of --format files.
func files(t testing.TB, what, out, role, h string) {
	t.Helper()
	a := txtar.Parse([]byte(out))
	rules := 0
	for _, f := range a.Files {
		checkPersistPath(t, what, f.Name)
		switch {
		case strings.HasSuffix(f.Name, ".rules"):
			rules++
			checkUdevRing(t, what+" "+f.Name, string(f.Data), ifaceOf(role, h))
		case strings.HasPrefix(f.Name, "/etc/sysctl.d/"):
			checkSysctlConf(t, what+" "+f.Name, string(f.Data))
		}
	}
	// A name udev cannot hold literally in a match value may be left to
	// the user, but then the archive's comment must say so and give the
	// runtime command with the name as one quoted word.
	if role == roleIface && rules == 0 {
		c := string(a.Comment)
		if !strings.Contains(c, "no udev rule written") || !strings.Contains(c, "ethtool -G "+quote.Shell(h)+" ") {
			t.Errorf("%s: no udev rule for the ring of %q, and no stated refusal with the quoted runtime command:\n%s", what, h, c)
		}
	}
}

func ifaceOf(role, h string) string {
	if role == roleIface {
		return h
	}
	return ""
}

// thisHost is the identity of the machine running the test, written into
// the snapshot copy given to --persist: the refusal the issue asks for is
// of another host's plan, so the copy claims to be this host.
func thisHost(t *testing.T) (bootID, machineID string) {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	m, _ := os.ReadFile("/etc/machine-id")
	return strings.TrimSpace(string(b)), strings.TrimSpace(string(m))
}

// persist runs fix --persist with --path.rootfs in the sandbox and no
// --apply: it writes files only, never a live setting. Either it refuses
// (exit 2, named), or everything it writes is inside the root.
func persist(t *testing.T, c snapCase, file, h, hint string) {
	s := newSandbox(t)
	root := s.dir(t, "root")
	state := s.dir(t, "state")
	in := file
	if raw, err := os.ReadFile(file); err == nil {
		var doc map[string]any
		if json.Unmarshal(raw, &doc) == nil {
			if host, ok := doc["host"].(map[string]any); ok {
				host["boot_id"], host["machine_id"] = thisHost(t)
				b, _ := json.Marshal(doc)
				in = filepath.Join(s.in, c.File)
				if err := os.WriteFile(in, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	crypttab := ""
	if c.Role == roleDM {
		// An existing crypttab line for the device, so --persist edits it.
		name := h
		if strings.ContainsAny(h, " \t\n\x00#") || h == "" {
			name = "other"
		}
		crypttab = name + " UUID=0a9b8c7d-6e5f-4031-2233-445566778899 none\n"
		if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "crypttab"), []byte(crypttab), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := s.run(t, []string{"fix", "--from", in, "--persist", "--path.rootfs", root, "--state", filepath.Join(state, "state.json"), "--format", "json"}, root, state)
	if r.code == 2 && c.Expect != refused {
		// Refused: for a snapshot that claims this host but whose devices
		// are not here, that is the identity rule; either way named.
		if !strings.Contains(r.stderr, "slowpath: ") {
			t.Errorf("%s: exit 2 without a slowpath error", r)
		}
		return
	}
	if !outcome(t, r, c.Expect, hint, 0) {
		return
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := "/" + strings.TrimPrefix(p, root+"/")
		checkPersistPath(t, "fix --persist", rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".rules"):
			checkUdevRing(t, "fix --persist "+rel, string(b), ifaceOf(c.Role, h))
		case strings.HasPrefix(rel, "/etc/sysctl.d/"):
			checkSysctlConf(t, "fix --persist "+rel, string(b))
		case rel == "/etc/crypttab" && string(b) != crypttab:
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if len(f) > 4 || len(f) > 0 && f[0] != h && f[0] != "other" && !strings.HasPrefix(f[0], "#") {
					t.Errorf("fix --persist: crypttab line %q: want NAME DEVICE KEY OPTIONS for %q", line, h)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// diff compares the hostile snapshot with its base, both ways.
func diff(t *testing.T, c snapCase, file, h, hint string) {
	base := filepath.Join(testenv.ModuleRoot(t), "testdata", "hosts", c.Base)
	for _, pair := range [][2]string{{file, base}, {base, file}} {
		for _, format := range []string{"text", "json"} {
			s := newSandbox(t)
			r := s.run(t, []string{"diff", pair[0], pair[1], "--format", format})
			if !outcome(t, r, c.Expect, hint, 0) {
				continue
			}
			if format == "json" {
				decodeJSON(t, "diff --format json", r.stdout)
			} else {
				checkNoControl(t, "diff", r.stdout)
			}
		}
	}
}

// agent serves the snapshot on loopback and is scraped once.
func agent(t *testing.T, c snapCase, file, h, hint string) {
	s := newSandbox(t)
	run := s.dir(t, "run")
	ready := filepath.Join(run, "addr")
	args := []string{"agent", "--from", file, "--web.listen-address", "127.0.0.1:0", "--ready-file", ready}
	before := s.walk(t)
	tmpBefore := tempMarkers()
	cmd := exec.Command(slowpath(t), args...)
	cmd.Env = s.env()
	cmd.Dir = s.home
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	r := result{args: args}
	finish := func(err error) {
		r.stderr = stderr.String()
		r.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
	}
	addr := ""
	deadline := time.Now().Add(commandTimeout)
	for addr == "" {
		select {
		case err := <-done:
			finish(err)
			if r.code == 0 {
				r.code = -1 // an agent never stops by itself
			}
			s.checkFS(t, r, before, tmpBefore, []string{run})
			outcome(t, r, c.Expect, hint)
			return
		case <-time.After(20 * time.Millisecond):
		}
		if b, err := os.ReadFile(ready); err == nil && strings.HasSuffix(string(b), "\n") {
			addr = strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			finish(<-done)
			t.Fatalf("%s: not ready after %v", r, commandTimeout)
		}
	}
	client := &http.Client{Timeout: commandTimeout}
	resp, err := client.Get("http://" + addr + "/metrics")
	var body strings.Builder
	status := 0
	if err == nil {
		status = resp.StatusCode
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			body.WriteString(sc.Text() + "\n")
		}
		resp.Body.Close()
	}
	cmd.Process.Kill()
	finish(<-done)
	r.code = 0 // served: success
	s.checkFS(t, r, before, tmpBefore, []string{run})
	if err != nil {
		t.Fatalf("%s: scrape: %v", r, err)
	}
	if !outcome(t, r, c.Expect, hint, 0) {
		return
	}
	if status != http.StatusOK {
		t.Errorf("agent --from: /metrics answered %d: %s", status, short(body.String()))
		return
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body.String()))
	if err != nil {
		t.Errorf("agent --from: the scrape does not parse: %v", err)
		return
	}
	if c.Role == roleIface || c.Role == roleDM {
		found := false
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetValue() == h || c.Role == roleDM && strings.HasSuffix(l.GetValue(), "/"+h) {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("agent --from: no label value is %q", h)
		}
	}
}

// tunedProfile: every line of a --format tuned profile is a comment, a
// [unit] or key=value, with no control character; a hostile interface is
// either in devices= exactly (a name tuned reads as itself) or left out
// with a comment saying so.
func tunedProfile(t *testing.T, what, out, role, h string) {
	t.Helper()
	checkNoControl(t, what, out)
	devices := 0
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case l == "", strings.HasPrefix(l, "# "), l == "#":
		case tunedSection.MatchString(l):
		case tunedOption.MatchString(l):
			if v, ok := strings.CutPrefix(l, "devices="); ok {
				devices++
				if role == roleIface && v != h {
					t.Errorf("%s: devices=%q, want the interface %q", what, v, h)
				}
			}
		default:
			t.Errorf("%s: line %q is no comment, [unit] or key=value", what, l)
		}
	}
	if role == roleIface {
		_, err := quote.TunedDevice(h)
		switch {
		case err == nil && devices != 1:
			t.Errorf("%s: %q is a name tuned reads as itself, yet %d devices= lines", what, h, devices)
		case err != nil && (devices != 0 || !strings.Contains(out, "ring of ")):
			t.Errorf("%s: %q cannot be a tuned devices value (%v), yet it was written or not said:\n%s", what, h, err, out)
		}
	}
}

var (
	tunedSection = regexp.MustCompile(`^\[[a-z0-9_]+\]$`)
	tunedOption  = regexp.MustCompile(`^[A-Za-z0-9_.-]+=[^\x00-\x1f]*$`)
)
