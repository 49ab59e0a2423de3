package netcheck

import (
	"sort"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

// sysctlChange is the structured fix that sets key to value, with the value
// the snapshot saw.
func sysctlChange(m *netmodel.Model, key string, value int64) check.SysctlChange {
	c := check.SysctlChange{Key: key, To: value}
	if cur, ok := m.Sysctls[key]; ok {
		c.From = &cur
	}
	return c
}

// raiseSysctls is the fix that raises each sysctl to at least its target;
// one already at or above it is left alone (lowering it would be no fix).
// Nil when nothing needs to change.
func raiseSysctls(m *netmodel.Model, targets map[string]int64) *check.Fix {
	keys := make([]string, 0, len(targets))
	for k := range targets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var f check.Fix
	for _, k := range keys {
		if cur, ok := m.Sysctls[k]; ok && cur >= targets[k] {
			continue
		}
		f.Sysctls = append(f.Sysctls, sysctlChange(m, k, targets[k]))
	}
	if len(f.Sysctls) == 0 {
		return nil
	}
	return &f
}

// ringFix raises the RX ring to the driver's maximum.
func ringFix(ifc netmodel.Interface) *check.Fix {
	r := ifc.Ring
	return &check.Fix{Rings: []check.RingChange{{
		Interface: ifc.Name, Driver: ifc.Driver, BusInfo: ifc.BusInfo,
		RXFrom: r.RX, RX: r.RXMax, RXMax: r.RXMax,
	}}}
}
