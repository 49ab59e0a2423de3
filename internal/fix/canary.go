package fix

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/quote"
)

// Canary restricts the node-tuning DaemonSet to the nodes labelled
// Key=Value (issue 31): the change runs on canary nodes first, and a
// fleet verdict compares them with the rest of their group before the
// label is widened or removed. Nodes, when above 0, adds the commands that
// label that many nodes of each group of By (a node label, e.g.
// topology.kubernetes.io/zone), chosen at random when they run and
// printed as they are labelled.
type Canary struct {
	Key, Value string
	Nodes      int
	By         string
}

// ParseCanary reads --canary KEY=VALUE.
func ParseCanary(s string) (Canary, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return Canary{}, fmt.Errorf("--canary %q: want LABEL=VALUE", s)
	}
	c := Canary{Key: k, Value: v}
	if err := checkLabelKey(k); err != nil {
		return Canary{}, fmt.Errorf("--canary %q: %w", s, err)
	}
	if err := checkLabelValue(v); err != nil {
		return Canary{}, fmt.Errorf("--canary %q: %w", s, err)
	}
	return c, nil
}

// Validate checks the group flags against the label.
func (c Canary) Validate() error {
	if c.Nodes < 0 {
		return fmt.Errorf("--canary-nodes %d: want 0 or more", c.Nodes)
	}
	if c.Nodes > 0 {
		if c.By == "" {
			return fmt.Errorf("--canary-nodes %d needs --by LABEL: the node label whose values are the groups", c.Nodes)
		}
		if err := checkLabelKey(c.By); err != nil {
			return fmt.Errorf("--by %q: %w", c.By, err)
		}
		if c.By == c.Key {
			return fmt.Errorf("--by %q is the canary label itself", c.By)
		}
	} else if c.By != "" {
		return fmt.Errorf("--by %q needs --canary-nodes N", c.By)
	}
	return nil
}

// labelCommands are the shell lines that label c.Nodes random nodes of
// each group. The label and group keys are checked names (no quote or
// space can occur); they are quoted all the same.
func (c Canary) labelCommands() []string {
	sel := quote.Shell(c.By)
	// kubectl's JSONPath escapes the dots of a label key.
	path := quote.Shell("{range .items[*]}{.metadata.labels." + strings.ReplaceAll(c.By, ".", `\.`) + "}{\"\\n\"}{end}")
	return []string{
		fmt.Sprintf("kubectl get nodes -l %s -o jsonpath=%s | sort -u | while read -r group; do", sel, path),
		fmt.Sprintf("  kubectl get nodes -l %s=\"$group\" -o name | shuf -n %s | tee /dev/stderr | xargs -r -I{} kubectl label --overwrite {} %s",
			sel, strconv.Itoa(c.Nodes), quote.Shell(c.Key+"="+c.Value)),
		"done",
	}
}

// checkLabelKey: a Kubernetes label key, [prefix/]name: name 1-63 of
// [A-Za-z0-9_.-] beginning and ending with an alphanumeric; prefix a DNS
// subdomain of at most 253 (Kubernetes "Labels and Selectors", "Syntax
// and character set").
func checkLabelKey(k string) error {
	prefix, name, ok := strings.Cut(k, "/")
	if !ok {
		prefix, name = "", k
	} else if prefix == "" || len(prefix) > 253 || !dnsSubdomain(prefix) {
		return fmt.Errorf("label prefix %q: want a DNS subdomain of at most 253 characters", prefix)
	}
	if name == "" || len(name) > 63 || !labelWord(name) {
		return fmt.Errorf("label name %q: want 1-63 of letters, digits, '-', '_', '.', beginning and ending with a letter or digit", name)
	}
	return nil
}

// checkLabelValue: empty, or as a label name.
func checkLabelValue(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > 63 || !labelWord(v) {
		return fmt.Errorf("label value %q: want at most 63 of letters, digits, '-', '_', '.', beginning and ending with a letter or digit", v)
	}
	return nil
}

func alnum(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }

func labelWord(s string) bool {
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; !alnum(b) && b != '-' && b != '_' && b != '.' {
			return false
		}
	}
	return true
}

// dnsSubdomain: RFC 1123 labels of lower-case letters, digits and '-',
// joined by dots.
func dnsSubdomain(s string) bool {
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			if b := l[i]; !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-') {
				return false
			}
		}
	}
	return true
}

// NodeName says whether s can be a Kubernetes node's name (a DNS
// subdomain of at most 253 characters), so a label command may name it.
func NodeName(s string) bool { return s != "" && len(s) <= 253 && dnsSubdomain(s) }
