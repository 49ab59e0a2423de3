package fix

import (
	"fmt"
	"strconv"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// KindSysctl is the wire name of Sysctl.
const KindSysctl = "sysctl"

// Sysctl sets a sysctl (/proc/sys) to a number.
type Sysctl check.SysctlChange

func init() { registerKind[Sysctl]() }

func (Sysctl) Kind() string { return KindSysctl }

func (c Sysctl) StateKey() string { return "sysctl:" + c.Key }

// Command is one word: the quoted key, then =N (a number needs no quoting).
func (c Sysctl) Command() string {
	return check.SysctlCommand(c.Key, c.To)
}

func (c Sysctl) NodeCommand() string { return c.Command() }

func (c Sysctl) Setting() string { return fmt.Sprintf("%s=%d", c.StateKey(), c.To) }

func (c Sysctl) Want(string) string { return strconv.FormatInt(c.To, 10) }

func (Sysctl) Same(a, b string) bool { return a == b }

func (c Sysctl) Read(s Settings) (string, error) { return s.ReadSysctl(c.Key) }

func (c Sysctl) Write(s Settings, v string) error { return s.WriteSysctl(c.Key, v) }

// ApplyTo sets the sysctl in the snapshot, as the host would read it after
// the step.
func (c Sysctl) ApplyTo(s *snapshot.Snapshot) error {
	if s.Net == nil {
		return fmt.Errorf("sysctl %s: the snapshot has no net section", c.Key)
	}
	if s.Net.Sysctls == nil {
		s.Net.Sysctls = map[string]int64{}
	}
	s.Net.Sysctls[c.Key] = c.To
	return nil
}
