package host

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// profiles is a tuned profile tree for the merge tests: names to tuned.conf.
type profiles map[string]string

func (p profiles) read(name string) ([]byte, string, error) {
	c, ok := p[name]
	if !ok {
		return nil, "", fmt.Errorf("tuned profile %q: not found", name)
	}
	return []byte(c), "usr/lib/tuned/" + name + "/tuned.conf", nil
}

// settings flattens merged units to "unit.key=value" lines.
func settings(units []tunedUnit) []string {
	var out []string
	for _, u := range units {
		for _, o := range u.options {
			out = append(out, u.name+"."+o.key+"="+o.value)
		}
	}
	return out
}

func TestLoadTunedProfiles(t *testing.T) {
	tree := profiles{
		"base":     "[main]\nsummary=base\n[sysctl]\nnet.core.netdev_max_backlog=5000\nnet.core.busy_read=50\n[net]\nring=rx 1024\n",
		"child":    "[main]\ninclude=base\n# comment\n[sysctl]\nnet.core.netdev_max_backlog = 32768\n[net_eth1]\ntype=net\ndevices=eth1\nring=rx 8192 tx 8192\n",
		"replacer": "[main]\ninclude=base\n[sysctl]\nreplace=1\nnet.core.rmem_max=26214400\n",
		"loop-a":   "[main]\ninclude=loop-b\n",
		"loop-b":   "[main]\ninclude=loop-a\n",
		"varinc":   "[main]\ninclude=${f:virt_check:virtual-guest:base}\n[sysctl]\nvm.swappiness=10\n",
		"broken":   "net.core.x=1\n",
	}
	tests := []struct {
		names   []string
		want    []string
		wantErr string
	}{
		{[]string{"base"}, []string{"sysctl.net.core.netdev_max_backlog=5000", "sysctl.net.core.busy_read=50", "net.ring=rx 1024"}, ""},
		// A child's option overrides its include's; units merge by name.
		{[]string{"child"}, []string{"sysctl.net.core.netdev_max_backlog=32768", "sysctl.net.core.busy_read=50", "net.ring=rx 1024",
			"net_eth1.type=net", "net_eth1.devices=eth1", "net_eth1.ring=rx 8192 tx 8192"}, ""},
		// replace=1 drops what the include's unit said.
		{[]string{"replacer"}, []string{"sysctl.replace=1", "sysctl.net.core.rmem_max=26214400", "net.ring=rx 1024"}, ""},
		// Several active profiles merge left to right.
		{[]string{"base", "replacer"}, []string{"sysctl.replace=1", "sysctl.net.core.rmem_max=26214400", "net.ring=rx 1024"}, ""},
		// tuned loads a profile once: a loop ends, it is no error.
		{[]string{"loop-a"}, nil, ""},
		{[]string{"varinc"}, []string{"sysctl.vm.swappiness=10"}, ""},
		{[]string{"missing"}, nil, "not found"},
		{[]string{"broken"}, nil, "before any [section]"},
	}
	for _, tt := range tests {
		units, _, err := loadTunedProfiles(tree.read, tt.names)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want one saying %q", tt.names, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.names, err)
			continue
		}
		if diff := cmp.Diff(tt.want, settings(units), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.names, diff)
		}
	}
}

// FuzzTunedConf: any file parses or is refused with an error, never a
// panic, and a parsed unit has a name.
func FuzzTunedConf(f *testing.F) {
	f.Add([]byte("[main]\ninclude=a,b\n[sysctl]\nnet.core.x=1\n[net_e]\ntype=net\nring=rx 1\n"))
	f.Add([]byte("[\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		units, _, err := parseTunedConf(b)
		if err != nil {
			return
		}
		for _, u := range units {
			if u.name == "" {
				t.Fatalf("unit without a name from %q", b)
			}
		}
	})
}
