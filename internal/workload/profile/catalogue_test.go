package profile

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/testing/golden"
)

// TestCatalogue keeps docs/profiles.md, generated from the registry, in
// step with it: a new profile file changes the page
// (SLOWPATH_UPDATE=1 go test ./internal/workload/profile rewrites it).
func TestCatalogue(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`# Profiles

<!-- Generated from the profile registry (internal/workload/profile) by
TestCatalogue: SLOWPATH_UPDATE=1 go test ./internal/workload/profile.
Do not edit; docs/adding-a-profile.md says how to add one. -->

Every workload slowpath runs: ` + "`slowpath bench PROFILE`" + `, ` + "`compare --profile`" + `,
` + "`fix --prove`" + ` and ` + "`lab crypt --profile`" + ` (every one: those that run on a directory
on a filesystem it makes, ` + "`--fs`" + `; lab crypt names a lab job without its ` + "`lab:`" + `). The
primary metrics decide compare's verdict in order, the guards must not get
worse for fix --prove to keep a change (docs/compare.md); a row name is
"PHASE figure" for a figure of one phase. The tax shape is the fixed-size
I/O phase the expected encryption tax is computed on (docs/lab.md).

| profile | runs on | what it runs | primary metrics | guards | tax shape |
|---|---|---|---|---|---|
`)
	for _, p := range All() {
		s := p.Spec()
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", s.usage(), needs(s.Needs), s.Description, rows(s, true), rows(s, false), taxShape(s))
	}
	golden.Compare(t, "../../../docs/profiles.md", b.Bytes())
}

func needs(t Target) string {
	var out []string
	if t&Dir != 0 {
		out = append(out, "a directory")
	}
	if t&Device != 0 {
		out = append(out, "a block device")
	}
	return strings.Join(out, " or ")
}

func rows(s Spec, primary bool) string {
	m := s.Metrics
	switch {
	case m == nil && primary && s.Family == LabFamily:
		return "`IOPS` of lab crypt's table"
	case m == nil:
		return "-"
	}
	ms := m.Guards
	if primary {
		ms = m.Primary
	}
	return "`" + strings.Join(Rows(ms), "`, `") + "`"
}

func taxShape(s Spec) string {
	switch {
	case s.Tax != nil:
		return fmt.Sprintf("%s: %d B per I/O, queue depth %d", s.Tax.Phase, s.Tax.BytesPerIO, s.Tax.QueueDepth)
	case s.IO != nil:
		return fmt.Sprintf("the job: %d B per I/O, queue depth %d", s.IO.BytesPerIO, s.IO.QueueDepth)
	}
	return "-"
}
