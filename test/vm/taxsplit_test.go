package vm

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// splitScript runs lab crypt with the null cipher and the one-sided
// workqueue bypasses beside default: the kernel must take every table
// (cipher_null-ecb with the key "-"), and the result carries the tax in
// parts. One short run a side: this is the kernels' acceptance of the
// tables and the result's shape, not a measurement (TCG).
const splitScript = `set -e
lab() { env PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/slowpath lab "$@"; }
rc=0; lab crypt --profile randrw-4k --backing ram:32M --runs 1 --runtime 1s --neighbour \
	--variants default,no_workqueue,no_read_workqueue,no_write_workqueue,null_cipher,null_cipher_no_workqueue \
	--format json > /results/split.json 2> /results/split.err || rc=$?
echo $rc > /results/split.rc
`

// TestCryptLabSplit: on the lab's oldest kernel (5.10, crypt v1.22.0, the
// first with the one-sided bypasses; crypto_null built in) the null
// cipher and the one-sided bypasses run, the null cipher side counts no encryption layer (no expected
// tax), and the result has the tax in parts with each step lab crypt
// names; with one run a side every step says too few runs. --neighbour
// adds the co-runner's guard row. (The text,
// Markdown and HTML forms of the split are golden files:
// internal/lab/cryptbench TestCryptSplitGolden.)
func TestCryptLabSplit(t *testing.T) {
	t.Parallel()
	// 6.1 has 5.10's case (crypto_null built in) with a crypt target
	// between 5.10's and 6.12's; on 6.12 (crypto_null a module, every
	// flag here taken since 5.9) TestCryptLabOnFilesystem runs the null
	// cipher and the split.
	onKernels(t, oldest, testCryptLabSplit)
}

func testCryptLabSplit(t *testing.T, k *kernelLab) {
	res := boot(t, k, Scenario{Name: "crypt-split", Script: splitScript, Timeout: 5 * time.Minute})
	if rc := strings.TrimSpace(string(res.Files["split.rc"])); rc != "0" && rc != "1" {
		t.Fatalf("lab crypt exited %s:\n%s", rc, res.Files["split.err"])
	}
	t.Logf("lab crypt's progress (TCG):\n%s", res.Files["split.err"])
	type row struct {
		Metric, Role string
		Sides        []struct{ Median float64 }
	}
	var r struct {
		Sides []struct {
			Name string
			Runs int
		}
		NotRun []struct{ Name, Reason string } `json:"not_run"`
		Tax    struct {
			Sides []struct{ Name string }
		} `json:"encryption_tax"`
		Rows  []row
		Split *struct {
			Metric string
			Steps  []struct{ Part, From, To, Verdict string }
		} `json:"tax_split"`
	}
	if err := json.Unmarshal(res.Files["split.json"], &r); err != nil {
		t.Fatalf("lab crypt JSON: %v\n%s\n%s", err, res.Files["split.json"], res.Files["split.err"])
	}
	if len(r.NotRun) != 0 {
		t.Errorf("variants not run on %s: %+v", k.Name, r.NotRun)
	}
	var names []string
	for _, s := range r.Sides {
		names = append(names, s.Name)
		if s.Runs != 1 {
			t.Errorf("side %s: %d runs, want 1", s.Name, s.Runs)
		}
	}
	for _, want := range []string{"plain", "default", "no_workqueue", "no_read_workqueue", "no_write_workqueue", "null_cipher", "null_cipher_no_workqueue"} {
		if !slices.Contains(names, want) {
			t.Errorf("no side %s among %v", want, names)
		}
	}
	for _, s := range r.Tax.Sides {
		if strings.HasPrefix(s.Name, "null_cipher") {
			t.Errorf("an expected tax for %s, which encrypts nothing", s.Name)
		}
	}
	// --neighbour: the co-runner's lateness is a guard row on every side.
	neighbour := slices.IndexFunc(r.Rows, func(w row) bool { return w.Metric == "neighbour wake p99" })
	if neighbour < 0 || r.Rows[neighbour].Role != "guard" || len(r.Rows[neighbour].Sides) != len(r.Sides) {
		t.Errorf("no neighbour guard row on every side: %s", res.Files["split.json"])
	} else {
		t.Logf("neighbour wake p99 per side (s, TCG): %+v", r.Rows[neighbour].Sides)
	}
	if r.Split == nil || r.Split.Metric != "IOPS" {
		t.Fatalf("no tax split on IOPS: %s", res.Files["split.json"])
	}
	var parts []string
	for _, st := range r.Split.Steps {
		parts = append(parts, st.Part)
		if st.Verdict != "too few runs" {
			t.Errorf("step %s with one run a side: %q, want too few runs", st.Part, st.Verdict)
		}
	}
	if want := []string{"queueing", "cipher", "bypass, with AES", "bypass of reads", "bypass of writes", "bypass, no cipher"}; !slices.Equal(parts, want) {
		t.Errorf("steps %v, want %v", parts, want)
	}
}
