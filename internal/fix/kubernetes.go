package fix

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/safetext"

	"sigs.k8s.io/yaml"
)

// KubernetesOptions shape the DaemonSet.
type KubernetesOptions struct {
	Namespace string // kube-system unless set
	Image     string // runs sh and chroot; busybox unless set
	// Canary, when set, restricts the DaemonSet to the nodes with its
	// label and adds the commands that label the canaries (canary.go).
	Canary *Canary
}

// The Kubernetes objects are written with these few types rather than
// k8s.io/api, which would pull the whole apimachinery into the binary; the
// tests decode the output strictly into the k8s.io/api types, so a field
// spelt wrong here fails there.
type (
	k8sMeta struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	k8sDaemonSet struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Metadata   k8sMeta          `json:"metadata"`
		Spec       k8sDaemonSetSpec `json:"spec"`
	}
	k8sDaemonSetSpec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata k8sMeta    `json:"metadata"`
			Spec     k8sPodSpec `json:"spec"`
		} `json:"template"`
	}
	k8sPodSpec struct {
		HostNetwork       bool              `json:"hostNetwork"`
		NodeSelector      map[string]string `json:"nodeSelector,omitempty"`
		PriorityClassName string            `json:"priorityClassName,omitempty"`
		Tolerations       []k8sToleration   `json:"tolerations,omitempty"`
		InitContainers    []k8sContainer    `json:"initContainers"`
		Containers        []k8sContainer    `json:"containers"`
		Volumes           []k8sVolume       `json:"volumes,omitempty"`
	}
	k8sToleration struct {
		Operator string `json:"operator"`
	}
	k8sContainer struct {
		Name            string           `json:"name"`
		Image           string           `json:"image"`
		Command         []string         `json:"command,omitempty"`
		SecurityContext *k8sSecurity     `json:"securityContext,omitempty"`
		VolumeMounts    []k8sVolumeMount `json:"volumeMounts,omitempty"`
		Resources       *k8sResources    `json:"resources,omitempty"`
	}
	k8sSecurity struct {
		Privileged bool `json:"privileged"`
	}
	k8sResources struct {
		Requests map[string]string `json:"requests,omitempty"`
	}
	k8sVolumeMount struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	}
	k8sVolume struct {
		Name     string `json:"name"`
		HostPath struct {
			Path string `json:"path"`
			Type string `json:"type,omitempty"`
		} `json:"hostPath"`
	}
	k8sList struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []any  `json:"items"`
	}
)

// Kubernetes renders the node tuning of the plan (sysctls and NIC rings)
// as a DaemonSet whose privileged init container applies it on every node
// at boot and whenever the pod is recreated, then idles in a pause
// container. It enters the node's root with chroot, so the node's own
// sysctl and ethtool run; hostNetwork puts it in the node's network
// namespace, where these sysctls live. A ring is only set on a node that
// has that interface. dm-crypt flags and cloud changes are not node tuning
// that a pod should redo at every start: comments above the objects and
// the annotation list them, each with why. With nothing to apply, the
// output is an empty v1 List, the comments still saying what was left out.
func Kubernetes(p *Plan, o KubernetesOptions) ([]byte, error) {
	if o.Namespace == "" {
		o.Namespace = "kube-system"
	}
	if o.Image == "" {
		o.Image = "docker.io/library/busybox:1.36"
	}
	var script, settings, fixes []string
	node, left := nodeTuning(p)
	for _, s := range node {
		script = append(script, s.Change.NodeCommand())
		setting, fix := markerLines(s)
		settings, fixes = append(settings, setting), append(fixes, fix)
	}
	// What the objects leave out is said in comments above them, so that
	// an empty List never reads as "nothing to fix".
	var head strings.Builder
	if len(left) > 0 {
		head.WriteString("# slowpath fix: not in these Kubernetes objects (use --format shell for the whole plan):\n")
		for _, l := range left {
			comment(&head, "- "+l)
		}
	}
	if len(script) == 0 {
		if len(left) == 0 {
			head.WriteString("# slowpath fix: nothing to fix: no finding has a host-level fix.\n")
		}
		b, err := yaml.Marshal(k8sList{APIVersion: "v1", Kind: "List", Items: []any{}})
		return append([]byte(head.String()), b...), err
	}
	script = append(script, markerCommand(settings, fixes))
	if c := o.Canary; c != nil {
		fmt.Fprintf(&head, "# slowpath fix: canary: this DaemonSet runs only on the nodes labelled %s=%s.\n", c.Key, c.Value)
		if c.Nodes > 0 {
			fmt.Fprintf(&head, "# Label %d nodes of each %s first, chosen at random (each printed as it is labelled):\n", c.Nodes, c.By)
			for _, l := range c.labelCommands() {
				head.WriteString("#   " + l + "\n")
			}
		}
		fmt.Fprintf(&head, "# Then: slowpath fleet verdict --change ID --canary %s=%s per group: promote labels the group's other nodes,\n", c.Key, c.Value)
		head.WriteString("# roll back unlabels the canaries (the pod leaves; the settings it made stay until the node reboots).\n")
	}
	labels := map[string]string{"app.kubernetes.io/name": "slowpath-node-tuning", "app.kubernetes.io/managed-by": "slowpath"}
	ds := k8sDaemonSet{APIVersion: "apps/v1", Kind: "DaemonSet",
		Metadata: k8sMeta{Name: "slowpath-node-tuning", Namespace: o.Namespace, Labels: labels}}
	if len(left) > 0 {
		ds.Metadata.Annotations = map[string]string{"slowpath.dev/not-in-daemonset": strings.Join(left, "\n")}
	}
	ds.Spec.Selector.MatchLabels = labels
	ds.Spec.Template.Metadata = k8sMeta{Name: "slowpath-node-tuning", Labels: labels}
	ps := &ds.Spec.Template.Spec
	ps.HostNetwork = true
	ps.PriorityClassName = "system-node-critical"
	ps.Tolerations = []k8sToleration{{Operator: "Exists"}}
	if c := o.Canary; c != nil {
		ps.NodeSelector = map[string]string{c.Key: c.Value}
	}
	ps.InitContainers = []k8sContainer{{
		Name:            "tune",
		Image:           o.Image,
		Command:         []string{"chroot", "/host", "/bin/sh", "-ec", strings.Join(script, "\n") + "\n"},
		SecurityContext: &k8sSecurity{Privileged: true},
		VolumeMounts:    []k8sVolumeMount{{Name: "host", MountPath: "/host"}},
	}}
	ps.Containers = []k8sContainer{{
		Name:      "pause",
		Image:     "registry.k8s.io/pause:3.10",
		Resources: &k8sResources{Requests: map[string]string{"cpu": "1m", "memory": "8Mi"}},
	}}
	v := k8sVolume{Name: "host"}
	v.HostPath.Path, v.HostPath.Type = "/", "Directory"
	ps.Volumes = []k8sVolume{v}
	b, err := yaml.Marshal(ds)
	return append([]byte(head.String()), b...), err
}

// NodeTuningMarker is the node file the DaemonSet's init container writes
// after tuning: one "sysctl KEY=VALUE" or "ring IFACE rx N" line per
// setting, and per setting "fix UNIX-TIME ID KEY VALUE SUBJECT": the
// finding it fixes and when it was first set to that value on this boot.
// The collector reads it (internal/collect/host tuners.go), so doctor and
// fix know the DaemonSet owns these knobs on that node and the agent
// exports slowpath_fix_applied for a canary verdict. /run is emptied at
// boot, when the init container writes it again.
const NodeTuningMarker = "/run/slowpath/node-tuning"

func markerLine(c Change) string {
	switch c := c.(type) {
	case Sysctl:
		return fmt.Sprintf("sysctl %s=%d", c.Key, c.To)
	case Ring:
		return fmt.Sprintf("ring %s rx %d", c.Interface, c.RX)
	case Scheduler:
		return fmt.Sprintf("scheduler %s %s", c.Device, c.To)
	}
	return "# " + c.Kind()
}

// markerLines are a step's setting line and what its fix line says after
// the time (ID KEY VALUE SUBJECT). Interface names and subjects come from
// the host (a snapshot given to fix --from): a line break or other
// control character in one would start a line of its own, which the
// collector would read as a setting or a fix, so each becomes '?'.
func markerLines(s nodeStep) (setting, fix string) {
	fix = fmt.Sprintf("%s %s %s %s", s.ID, s.Key(), s.Change.Want(""), s.Subject)
	return safetext.Clean(markerLine(s.Change)), strings.TrimSpace(safetext.Clean(fix))
}

// markerCommand writes the marker. Each fix line keeps the time of the
// same line in the marker it replaces (a pod restarted on the same boot:
// the DaemonSet rolled, another setting added), so a canary verdict's
// window before the change does not move past it; a setting new or of
// another value takes the time of now. awk reads the old marker (the
// script already needs it for rings); without it every time is now.
func markerCommand(settings, fixes []string) string {
	q := []string{quote.Shell("# written by the slowpath-node-tuning DaemonSet (slowpath fix --format kubernetes)")}
	for _, l := range settings {
		q = append(q, quote.Shell(l))
	}
	f := make([]string, len(fixes))
	for i, l := range fixes {
		f[i] = quote.Shell(l)
	}
	m := NodeTuningMarker
	old := `F="$f" awk '$1 == "fix" { t = $2; sub(/^fix [0-9]+ /, ""); if ($0 == ENVIRON["F"]) { print t; exit } }' ` + m + ` 2>/dev/null || true`
	return strings.Join([]string{
		"mkdir -p /run/slowpath",
		"now=$(date +%s)",
		fmt.Sprintf(`{ printf '%%s\n' %s && for f in %s; do t=$(%s); printf 'fix %%s %%s\n' "${t:-$now}" "$f"; done; } > %s.new`,
			strings.Join(q, " "), strings.Join(f, " "), old, m),
		fmt.Sprintf("mv %s.new %s", m, m),
	}, " && ")
}

// nodeStep is a node tuning step with the finding it fixes.
type nodeStep struct {
	Step
	ID, Subject string
}

// nodeTuning splits a plan into the steps that are node tuning (sysctls,
// rings: what a DaemonSet or a tuned profile redoes at every start) and,
// for everything else, a line saying what was left out and why.
func nodeTuning(p *Plan) ([]nodeStep, []string) {
	var node []nodeStep
	var left []string
	for _, e := range p.Entries {
		on := fmt.Sprintf("%s on %s", e.ID, e.Subject)
		isNode := len(e.Steps) > 0
		for _, s := range e.Steps {
			if s.Change.NodeCommand() != "" {
				node = append(node, nodeStep{Step: s, ID: e.ID, Subject: e.Subject})
			} else {
				isNode = false
				left = append(left, fmt.Sprintf("%s: %s change, not node tuning redone at every start: %s", on, s.Change.Kind(), StepCommand(s)))
			}
		}
		// The DaemonSet or profile itself is what persists node tuning; a
		// file of an entry it does not carry is left out.
		for _, f := range e.Files {
			if !isNode {
				left = append(left, fmt.Sprintf("%s: persistent file %s, not node tuning: %s", on, f.Path, f.Why))
			}
		}
		for _, m := range e.Manual {
			left = append(left, fmt.Sprintf("%s: run by hand (%s): %s", on, asksOf(e), m))
		}
		for _, c := range e.Cloud {
			left = append(left, fmt.Sprintf("%s: cloud change (%s), not made from a node: %s: %s", on, c.Provider, c.What, strings.Join(c.Commands, "; ")))
		}
		if e.NotApplicable != "" {
			left = append(left, fmt.Sprintf("%s: not applicable here: %s", on, e.NotApplicable))
		}
		if e.ByHand != "" {
			left = append(left, fmt.Sprintf("%s: by hand, not node tuning: %s", on, strings.Join(strings.Fields(e.ByHand), " ")))
		}
		if e.Proof != nil && e.Proof.Result == ProofRemains {
			left = append(left, fmt.Sprintf("%s: %s", on, proofLine(e.Proof)))
		}
	}
	return node, left
}
