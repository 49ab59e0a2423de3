package fleetverdict

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/slowpath/slowpath/internal/canary"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/quote"
)

// Action is one label change on one node.
type Action struct {
	// Verb is "label" (promote: the DaemonSet widens to the node) or
	// "unlabel" (roll back: it leaves the node).
	Verb    string `json:"verb"`
	Node    string `json:"node"`
	Command string `json:"command"`
}

// Plan adds to each group the label changes its outcome calls for, with
// the canary label c of `fix --format kubernetes --canary`: promote labels
// the group's other nodes, roll back unlabels the canaries, hold does
// nothing. A node whose name cannot be a Kubernetes node's (the node label
// is not the node name) gets no action; the error says which.
func Plan(r *Report, c fix.Canary) error {
	for i := range r.Groups {
		g := &r.Groups[i]
		var nodes []string
		verb := ""
		switch g.Outcome {
		case canary.Promote:
			verb, nodes = "label", g.Others
		case canary.Rollback:
			verb, nodes = "unlabel", g.Canaries
		}
		for _, n := range nodes {
			if !fix.NodeName(n) {
				return fmt.Errorf("node %q (label %s) is not a Kubernetes node name: pass --node-label with the label that carries the node's name (docs/fleet.md)", n, r.NodeLabel)
			}
			arg := c.Key + "=" + c.Value
			if verb == "unlabel" {
				arg = c.Key + "-"
			}
			g.Actions = append(g.Actions, Action{Verb: verb, Node: n,
				Command: "kubectl label --overwrite node " + quote.Shell(n) + " " + quote.Shell(arg)})
		}
	}
	return nil
}

// Nodes is the resource the label changes patch.
var Nodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// Apply takes every action of r through the Kubernetes API, each printed
// to w before it is taken; it stops at the first that fails. The dynamic
// client: the typed one (k8s.io/api's types) would add 35 MB to the
// binary for one merge patch.
func Apply(ctx context.Context, w io.Writer, client dynamic.Interface, r *Report, c fix.Canary) error {
	for _, g := range r.Groups {
		for _, a := range g.Actions {
			fmt.Fprintf(w, "%s: %s\n", g.Value, a.Command)
			var value any = c.Value
			if a.Verb == "unlabel" {
				value = nil // a merge patch removes a key set to null
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{c.Key: value}}})
			if err != nil {
				return err
			}
			if _, err := client.Resource(Nodes).Patch(ctx, a.Node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("%s node %s: %w", a.Verb, a.Node, err)
			}
		}
	}
	return nil
}
