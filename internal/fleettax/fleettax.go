// Package fleettax reads the encryption tax of every node from Prometheus
// (the recording rules of deploy/kubernetes/prometheusrule.yaml over the
// agent's series) and summarises it per node group: what `slowpath fleet
// --tax` prints (rendered by internal/report/taxreport). The figures are the rules' own, so the command, the
// dashboard and the alerts say the same thing.
package fleettax

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/fleet"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/stats"
)

// The recorded series read (deploy/kubernetes/prometheusrule.yaml).
const (
	RatioSeries  = "instance_mountpoint:slowpath_dmcrypt_tax_ratio:rate5m"
	AddedSeries  = "instance_mountpoint:slowpath_dmcrypt_added_await_seconds:rate5m"
	CipherSeries = "instance_mountpoint:slowpath_dmcrypt_cipher_seconds_per_io:rate5m"
	IOsSeries    = "instance_mountpoint:slowpath_dmcrypt_ios:increase5m"
)

// FormatVersion is the format_version of Summary's JSON (docs/json.md).
const FormatVersion = 1

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
func Query(ctx context.Context, a v1.API, by string, byGiven bool, at time.Time) (*Summary, error) {
	vecs := map[string]model.Vector{}
	for _, q := range []string{RatioSeries, AddedSeries, CipherSeries, IOsSeries, "slowpath_node_info"} {
		v, err := fleet.Vector(ctx, a, q, at)
		if err != nil {
			return nil, err
		}
		vecs[q] = v
	}
	// A --by given that neither a node's info series nor a tax series
	// has is mistyped (the tax series' own labels group too).
	onTax := slices.ContainsFunc(vecs[IOsSeries], func(s *model.Sample) bool {
		_, ok := s.Metric[model.LabelName(by)]
		return ok
	})
	if byGiven && !onTax && len(vecs["slowpath_node_info"]) > 0 {
		if err := fleet.CheckBy(by, vecs["slowpath_node_info"]); err != nil {
			return nil, err
		}
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
