// Package fleettax reads the encryption tax of every node from Prometheus
// (the recording rules of deploy/kubernetes/prometheusrule.yaml over the
// agent's series) and summarises it per node group: what `slowpath fleet
// --tax` prints. The figures are the rules' own, so the command, the
// dashboard and the alerts say the same thing.
package fleettax

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/fleet"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/units"
)

// The recorded series read (deploy/kubernetes/prometheusrule.yaml).
const (
	RatioSeries  = "instance_mountpoint:slowpath_dmcrypt_tax_ratio:rate5m"
	AddedSeries  = "instance_mountpoint:slowpath_dmcrypt_added_await_seconds:rate5m"
	CipherSeries = "instance_mountpoint:slowpath_dmcrypt_cipher_seconds_per_io:rate5m"
	IOsSeries    = "instance_mountpoint:slowpath_dmcrypt_ios:increase5m"
)

// Summary is the JSON form of `slowpath fleet --tax` (docs/json.md).
type Summary struct {
	By     string  `json:"by"`
	Groups []Group `json:"groups"`
}

// Group is the tax of the nodes sharing one value of the --by label, over
// the mounts with enough I/O to judge (cryptotax.MinIOs in 5 minutes).
type Group struct {
	Value string `json:"value"` // "" when the nodes lack the label
	Nodes int    `json:"nodes"` // nodes with at least one mount judged
	// Mounts judged, and mounts on dm-crypt with too little I/O to judge.
	Mounts    int `json:"mounts"`
	NotJudged int `json:"not_judged"`
	// Medians over the mounts judged.
	AddedPerIOSeconds  float64 `json:"added_per_io_seconds"`
	CipherPerIOSeconds float64 `json:"cipher_per_io_seconds"`
	Ratio              Spread  `json:"ratio"`
	// Highest and Lowest are the mounts at the extremes of the ratio.
	Highest *Mount `json:"highest,omitempty"`
	Lowest  *Mount `json:"lowest,omitempty"`
}

// Spread is a distribution's extremes and median.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Mount is one node's figures for one encrypted mount.
type Mount struct {
	Job                string  `json:"job"`
	Instance           string  `json:"instance"`
	MountPoint         string  `json:"mountpoint"`
	Device             string  `json:"device"` // the topmost dm-crypt device
	Lower              string  `json:"lower"`  // the device beneath the lowest
	AddedPerIOSeconds  float64 `json:"added_per_io_seconds"`
	CipherPerIOSeconds float64 `json:"cipher_per_io_seconds"`
	Ratio              float64 `json:"ratio"`
	IOs                float64 `json:"ios"` // the fewer of the two devices' I/Os over 5 minutes
	// TableUnread: the node's agent read no dm table (table="unread"), so
	// dm-crypt was inferred from the cryptsetup uuid and the cipher assumed.
	TableUnread bool `json:"table_unread,omitempty"`
}

type mountKey struct{ job, instance, mountpoint, device string }

func keyOf(m model.Metric) mountKey {
	return mountKey{string(m[model.JobLabel]), string(m[model.InstanceLabel]), string(m["mountpoint"]), string(m["device"])}
}

// Query reads the recorded tax series at at and groups them by the label
// by: a label of the series (a target label) or of the node's
// slowpath_node_info.
func Query(ctx context.Context, a v1.API, by string, at time.Time) (*Summary, error) {
	vecs := map[string]model.Vector{}
	for _, q := range []string{RatioSeries, AddedSeries, CipherSeries, IOsSeries, "slowpath_node_info"} {
		v, err := fleet.Vector(ctx, a, q, at)
		if err != nil {
			return nil, err
		}
		vecs[q] = v
	}
	if len(vecs[IOsSeries]) == 0 {
		spans, err := fleet.Vector(ctx, a, "slowpath_dmcrypt_tax_span", at)
		if err != nil {
			return nil, err
		}
		if len(spans) > 0 {
			return nil, fmt.Errorf("%d dm-crypt mounts in Prometheus but no %s: load the recording rules of deploy/kubernetes/prometheusrule.yaml", len(spans), IOsSeries)
		}
		return nil, fmt.Errorf("no slowpath_dmcrypt_tax_span series in Prometheus: no node reports a dm-crypt mount (is it scraping `slowpath agent`, see deploy/kubernetes/?)")
	}
	info := fleet.GroupNodes(vecs["slowpath_node_info"], fleet.NodeOptions{By: by})
	mounts := map[mountKey]*Mount{}
	groups := map[mountKey]string{}
	for _, s := range vecs[IOsSeries] {
		k := keyOf(s.Metric)
		mounts[k] = &Mount{Job: k.job, Instance: k.instance, MountPoint: k.mountpoint, Device: k.device,
			Lower: string(s.Metric["lower"]), IOs: float64(s.Value), Ratio: math.NaN(), TableUnread: s.Metric["table"] == "unread"}
		g := info.Group[info.Node(s.Metric)]
		if g == "" {
			// No info series, or one without the label: the label may
			// be the scrape target's, on the tax series too.
			g = string(s.Metric[model.LabelName(by)])
		}
		groups[k] = g
	}
	set := func(q string, f func(*Mount, float64)) {
		for _, s := range vecs[q] {
			if m := mounts[keyOf(s.Metric)]; m != nil {
				f(m, float64(s.Value))
			}
		}
	}
	set(RatioSeries, func(m *Mount, v float64) { m.Ratio = v })
	set(AddedSeries, func(m *Mount, v float64) { m.AddedPerIOSeconds = v })
	set(CipherSeries, func(m *Mount, v float64) { m.CipherPerIOSeconds = v })

	byGroup := map[string]*Group{}
	members := map[string][]*Mount{}
	nodes := map[string]map[[2]string]bool{}
	for k, m := range mounts {
		g := groups[k]
		if byGroup[g] == nil {
			byGroup[g] = &Group{Value: g}
			nodes[g] = map[[2]string]bool{}
		}
		if m.IOs < cryptotax.MinIOs || math.IsNaN(m.Ratio) || math.IsInf(m.Ratio, 0) {
			byGroup[g].NotJudged++
			continue
		}
		members[g] = append(members[g], m)
		nodes[g][[2]string{m.Job, m.Instance}] = true
	}
	s := &Summary{By: by, Groups: []Group{}}
	for g, grp := range byGroup {
		ms := members[g]
		grp.Mounts, grp.Nodes = len(ms), len(nodes[g])
		if len(ms) > 0 {
			sort.Slice(ms, func(i, j int) bool {
				if ms[i].Ratio != ms[j].Ratio {
					return ms[i].Ratio < ms[j].Ratio
				}
				return ms[i].Instance+ms[i].MountPoint < ms[j].Instance+ms[j].MountPoint
			})
			grp.Lowest, grp.Highest = ms[0], ms[len(ms)-1]
			grp.Ratio = Spread{Min: ms[0].Ratio, Max: ms[len(ms)-1].Ratio, Median: median(ms, func(m *Mount) float64 { return m.Ratio })}
			grp.AddedPerIOSeconds = median(ms, func(m *Mount) float64 { return m.AddedPerIOSeconds })
			grp.CipherPerIOSeconds = median(ms, func(m *Mount) float64 { return m.CipherPerIOSeconds })
		}
		s.Groups = append(s.Groups, *grp)
	}
	// Worst first: the group to look at heads the list.
	sort.Slice(s.Groups, func(i, j int) bool {
		a, b := s.Groups[i], s.Groups[j]
		if (a.Mounts > 0) != (b.Mounts > 0) {
			return a.Mounts > 0
		}
		if a.Ratio.Median != b.Ratio.Median {
			return a.Ratio.Median > b.Ratio.Median
		}
		return a.Value < b.Value
	})
	return s, nil
}

// median of f over ms: stats.Median, which interpolates as PromQL's
// quantile(0.5, ...) and the fleet recording rules do.
func median(ms []*Mount, f func(*Mount) float64) float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	return stats.Median(v)
}

// Ratio renders a ratio: 2678x, 1.1x.
func Ratio(r float64) string {
	if math.Abs(r) >= 10 {
		return fmt.Sprintf("%.0fx", r)
	}
	return fmt.Sprintf("%.1fx", r)
}

func (g Group) name(by string) string {
	if g.Value == "" {
		return "(no " + by + ")"
	}
	return g.Value
}

func (m *Mount) String() string {
	s := fmt.Sprintf("%s %s %s (+%s", m.Instance, m.MountPoint, Ratio(m.Ratio), units.Duration(m.AddedPerIOSeconds))
	if m.TableUnread {
		s += "; dm table unread: dm-crypt inferred from its uuid, cipher assumed"
	}
	return s + ")"
}

// WriteText prints one block per group, worst first:
//
//	Standard_E16d_v5 (12 nodes): encryption adds 17.6 ms per I/O, 2678x the cipher's cost (6.55 µs)
//	  ratio min 2100x, median 2678x, max 2900x over 12 mounts
//	  highest: node-3:9877 /data 2900x (+19 ms); lowest: node-7:9877 /data 2100x (+13.8 ms)
func WriteText(w io.Writer, s *Summary) error {
	var b strings.Builder
	for _, g := range s.Groups {
		if g.Mounts == 0 {
			fmt.Fprintf(&b, "%s: no dm-crypt mount with enough I/O to judge (%s with fewer than %d I/Os in 5 minutes)\n",
				g.name(s.By), units.Plural(g.NotJudged, "mount"), cryptotax.MinIOs)
			continue
		}
		fmt.Fprintf(&b, "%s (%s): encryption adds %s per I/O, %s the cipher's cost (%s)\n",
			g.name(s.By), units.Plural(g.Nodes, "node"), units.Duration(g.AddedPerIOSeconds), Ratio(g.Ratio.Median), units.Duration(g.CipherPerIOSeconds))
		fmt.Fprintf(&b, "  ratio min %s, median %s, max %s over %s", Ratio(g.Ratio.Min), Ratio(g.Ratio.Median), Ratio(g.Ratio.Max), units.Plural(g.Mounts, "mount"))
		if g.NotJudged > 0 {
			fmt.Fprintf(&b, " (%d not judged: too little I/O)", g.NotJudged)
		}
		fmt.Fprintf(&b, "\n  highest: %s; lowest: %s\n", g.Highest, g.Lowest)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown prints the groups as a table; every cell is escaped, the
// label values from Prometheus included.
func WriteMarkdown(w io.Writer, s *Summary) error {
	var b strings.Builder
	t := table.NewMarkdownWith(&b, table.MarkdownOptions{Align: []table.Align{
		table.Left, table.Right, table.Right, table.Right, table.Left, table.Left, table.Left, table.Right}})
	t.Row(s.By, "nodes", "added per I/O", "cipher per I/O", "ratio min / median / max", "highest", "lowest", "not judged")
	for _, g := range s.Groups {
		if g.Mounts == 0 {
			t.Row(g.name(s.By), "0", "", "", "", "", "", strconv.Itoa(g.NotJudged))
			continue
		}
		t.Row(g.name(s.By), strconv.Itoa(g.Nodes), units.Duration(g.AddedPerIOSeconds), units.Duration(g.CipherPerIOSeconds),
			Ratio(g.Ratio.Min)+" / "+Ratio(g.Ratio.Median)+" / "+Ratio(g.Ratio.Max),
			g.Highest.String(), g.Lowest.String(), strconv.Itoa(g.NotJudged))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
