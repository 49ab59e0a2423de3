package fix

import (
	"fmt"
	"strconv"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// KindRing is the wire name of Ring.
const KindRing = "ring"

// Ring sets the RX ring size of a NIC (ethtool -G).
type Ring check.RingChange

func init() { registerKind[Ring]() }

func (Ring) Kind() string { return KindRing }

func (c Ring) StateKey() string { return "ring:" + c.Interface + ":rx" }

// Command: ethtool takes the word after -G as the device, whatever it is
// (ethtool.c main(): ctx.devname = *argp++).
func (c Ring) Command() string {
	return check.RingCommand(c.Interface, c.RX)
}

// NodeCommand sets the ring only on a node that has the interface, and
// accepts a driver that refuses a size it already has. Every word from
// data is quote.Shell'd: the script is one YAML string (yaml.Marshal
// quotes it), run by sh.
func (c Ring) NodeCommand() string {
	name := quote.Shell(c.Interface)
	return fmt.Sprintf("if [ -e %[3]s ]; then ethtool -G %[1]s rx %[2]d || [ \"$(ethtool -g %[1]s | awk '/^Current/{c=1} c&&/^RX:/{print $2; exit}')\" = %[2]d ]; fi", name, c.RX, quote.Shell("/sys/class/net/"+c.Interface))
}

func (c Ring) Setting() string { return fmt.Sprintf("%s=%d", c.StateKey(), c.RX) }

func (c Ring) Want(string) string { return strconv.FormatUint(uint64(c.RX), 10) }

func (Ring) Same(a, b string) bool { return a == b }

func (c Ring) Read(s Settings) (string, error) {
	cur, err := s.RingRX(c.Interface)
	if err != nil {
		return "", err
	}
	return strconv.FormatUint(uint64(cur), 10), nil
}

func (c Ring) Write(s Settings, v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("ring size %q: %w", v, err)
	}
	return s.SetRingRX(c.Interface, uint32(n))
}

func (c Ring) NetInterface() string { return c.Interface }

// ApplyTo sets the interface's RX ring in the snapshot.
func (c Ring) ApplyTo(s *snapshot.Snapshot) error {
	if s.Net != nil {
		for i := range s.Net.Interfaces {
			if ifc := &s.Net.Interfaces[i]; ifc.Name == c.Interface && ifc.Ring != nil {
				ifc.Ring.RX = c.RX
				return nil
			}
		}
	}
	return fmt.Errorf("ring of %s: the snapshot has no ring for that interface", c.Interface)
}
