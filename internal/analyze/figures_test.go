package analyze_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// A figure is a number someone measured: IOPS in thousands, a slowdown
// factor, a latency, a percentage. Every figure slowpath states about the
// world, in a finding, in a check's comment or in docs/checks.md, must
// cite the page that holds it, next to it. Figures slowpath computes
// itself are listed in derivedFigures with how they are computed.
var figureRE = regexp.MustCompile(`\b\d+(?:\.\d+)?k\b|\b\d+(?:\.\d+)?x\b|\b\d+(?:\.\d+)?\s?(?:ms|µs|%)`)

// figureSources maps each measured figure to the pages that hold it.
var figureSources = map[string][]string{
	// fio 4k read/write on a ramdisk of a PostgreSQL server: plain,
	// through dm-crypt, and with same_cpu_crypt (also on Atlassian's
	// community site under the same title).
	"171k":  {srcLUKSRamdisk, srcLUKSRamdiskCopy},
	"26.6k": {srcLUKSRamdisk, srcLUKSRamdiskCopy},
	"45.3k": {srcLUKSRamdisk, srcLUKSRamdiskCopy},
	// Algolia: index loads on Azure averaged 400 ms where more than
	// 10 ms counts as a slow load on their AWS and bare-metal hosts.
	"400 ms": {srcAlgolia},
	// bpftune caps netdev_budget_usecs growth at 50 ms
	// (NETDEV_BUDGET_USECS_MAX, commit 809f9c3, PR #212).
	"50 ms": {srcBpftuneCap},
}

// derivedFigures are computed by slowpath, not measured by anyone.
var derivedFigures = map[string]string{
	"0.5 ms": "1024 ring entries of 1500-byte frames at 25 Gb/s: 1024*1500*8/25e9 s",
	"10 ms":  "the backlog's burst window: one scheduler tick at HZ=100 (netcheck.burstWindowSeconds)",
	"1 µs":   "dmcrypt.tax: 1 ms of counter resolution over its 1000 I/Os",
	"20 µs":  "dmcrypt.tax's floor (storagecheck.taxMinAdded): 20 times the counters' resolution",
	"4x":     "cryptotax.FarAbove: the ratio the encryption tax model calls far above the cipher's cost",
	"32 µs":  "1/26.6k - 1/171k s: the PostgreSQL ramdisk's IOPS (sourced above) as added latency per I/O",
}

const (
	srcLUKSRamdisk     = "https://blog.gonchik.com/2021/03/yet-another-compliance-request-can.html"
	srcLUKSRamdiskCopy = "https://community.atlassian.com/t5/Data-Center-articles/Yet-another-compliance-request-can-initiate-additional-tests-for/ba-p/1651875"
	srcAlgolia         = "https://www.algolia.com/blog/engineering/unintended-double-encryption"
	srcBpftuneCap      = "https://github.com/oracle/bpftune/pull/212"
)

// checkFigures reports each figure in text whose source is not among
// cited. where names the text for the error.
func checkFigures(t *testing.T, where, text string, cited []string) int {
	t.Helper()
	n := 0
	for _, f := range figureRE.FindAllString(text, -1) {
		f = strings.Join(strings.Fields(f), " ")
		n++
		if _, ok := derivedFigures[f]; ok {
			continue
		}
		srcs, ok := figureSources[f]
		if !ok {
			t.Errorf("%s: figure %q has no known source: cite the page that holds it (and list it in figureSources), or remove it\n%s", where, f, text)
			continue
		}
		if !slices.ContainsFunc(srcs, func(s string) bool { return slices.Contains(cited, s) }) {
			t.Errorf("%s: figure %q does not cite its source %s; it cites %v", where, f, srcs[0], cited)
		}
	}
	return n
}

// TestFindingFiguresCiteSources runs every check on every fixture host and
// requires each figure in a summary or remediation to come with the page
// it is from among the finding's references.
func TestFindingFiguresCiteSources(t *testing.T) {
	hosts, err := filepath.Glob(filepath.Join(hostsDir, "*.json"))
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no fixture hosts in %s: %v", hostsDir, err)
	}
	figures := 0
	for _, h := range hosts {
		s, err := snapshot.Load(h)
		if err != nil {
			t.Fatal(err)
		}
		r, err := analyze.Run(s, loadFixtureConfig(t, strings.TrimSuffix(filepath.Base(h), ".json")))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Findings {
			where := filepath.Base(h) + " " + f.ID + " " + f.Subject
			figures += checkFigures(t, where, f.Summary+"\n"+f.Remediation, f.References)
		}
	}
	// The fixtures must exercise at least the same-cpu-crypt figures.
	if figures < 3 {
		t.Errorf("only %d figures in all findings: the test no longer sees the texts it audits", figures)
	}
}

var urlRE = regexp.MustCompile(`https?://[^\s)\]>"']+`)

// TestCommentAndDocFiguresCiteSources audits the checks' comments and
// docs/checks.md the same way: a figure's source must be linked in the
// same comment block or the same paragraph (bullet) of the doc.
func TestCommentAndDocFiguresCiteSources(t *testing.T) {
	var files []string
	for _, pat := range []string{"../check/*/*.go", "../check/*.go"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	figures := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, b := range blocks(t, f, func(line string) (string, bool) {
			s := strings.TrimSpace(line)
			c, ok := strings.CutPrefix(s, "//")
			return c, ok
		}) {
			figures += checkFigures(t, f+":"+b.line, b.text, urlRE.FindAllString(b.text, -1))
		}
	}
	doc := "../../docs/checks.md"
	for _, b := range blocks(t, doc, func(line string) (string, bool) {
		// A paragraph or one bullet: a new bullet or heading starts a block.
		return line, strings.TrimSpace(line) != ""
	}) {
		figures += checkFigures(t, doc+":"+b.line, b.text, urlRE.FindAllString(b.text, -1))
	}
	if figures < 3 {
		t.Errorf("only %d figures in comments and docs: the test no longer sees the texts it audits", figures)
	}
}

type block struct{ line, text string }

// blocks splits a file into runs of consecutive lines keep accepts; in
// Markdown a line starting a bullet or heading also starts a block.
func blocks(t *testing.T, path string, keep func(string) (string, bool)) []block {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []block
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, block{line: strings.TrimPrefix(filepath.Ext(path), ".") + " line " + strconv.Itoa(start), text: strings.Join(cur, "\n")})
		}
		cur = nil
	}
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		s, ok := keep(line)
		if !ok {
			flush()
			continue
		}
		if strings.HasSuffix(path, ".md") {
			ts := strings.TrimSpace(line)
			if strings.HasPrefix(ts, "- ") || strings.HasPrefix(ts, "#") {
				flush()
			}
		}
		if len(cur) == 0 {
			start = n
		}
		cur = append(cur, s)
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
