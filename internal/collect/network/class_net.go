package network

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// ListInterfaces returns the names in /sys/class/net, sorted. Entries are
// symlinks into /sys/devices on a live host and plain directories in
// fixture trees; both are accepted. bonding_masters is a file, not a device.
func ListInterfaces(f hostfs.FS) ([]string, error) {
	ents, err := os.ReadDir(f.SysPath("class", "net"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Name() == "bonding_masters" {
			continue
		}
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

// readInterface reads /sys/class/net/NAME (Documentation/ABI/testing/sysfs-class-net).
// Only ifindex is required; other attributes are optional.
func readInterface(f hostfs.FS, name string) (snapshot.NetInterface, error) {
	dir := f.SysPath("class", "net", name)
	ifc := snapshot.NetInterface{Name: name}
	idx, err := readInt(filepath.Join(dir, "ifindex"))
	if err != nil {
		return ifc, err
	}
	ifc.Ifindex = int(idx)
	if v, err := readInt(filepath.Join(dir, "iflink")); err == nil && int(v) != ifc.Ifindex {
		ifc.Iflink = int(v)
	}
	if v, err := readInt(filepath.Join(dir, "mtu")); err == nil {
		ifc.MTU = int(v)
	}
	ifc.OperState, _ = hostfs.ReadValue(filepath.Join(dir, "operstate"))
	// speed is -1 or EINVAL when the link is down or has no speed.
	if v, err := readInt(filepath.Join(dir, "speed")); err == nil && v > 0 {
		ifc.SpeedMbps = &v
	}
	if t, err := os.Readlink(filepath.Join(dir, "master")); err == nil {
		ifc.Master = filepath.Base(t)
	} else if m, err := hostfs.ReadValue(filepath.Join(dir, "master")); err == nil {
		ifc.Master = m // fixture trees may hold the name in a file
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		switch n := e.Name(); {
		case strings.HasPrefix(n, "lower_"):
			ifc.Lower = append(ifc.Lower, strings.TrimPrefix(n, "lower_"))
		case strings.HasPrefix(n, "upper_"):
			ifc.Upper = append(ifc.Upper, strings.TrimPrefix(n, "upper_"))
		}
	}
	ifc.Queues = readQueues(filepath.Join(dir, "queues"))
	return ifc, nil
}

// readQueues reads queues/rx-N/rps_cpus, rps_flow_cnt and queues/tx-N/xps_cpus
// (Documentation/networking/scaling.rst). Absent files mean the kernel has
// no RPS/XPS or the device does not use them.
func readQueues(dir string) []snapshot.NetQueue {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []snapshot.NetQueue
	for _, e := range ents {
		q := snapshot.NetQueue{Name: e.Name()}
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(q.Name, "rx-"):
			q.RPSCPUs, _ = hostfs.ReadValue(filepath.Join(p, "rps_cpus"))
			q.RPSFlowCnt, _ = readInt(filepath.Join(p, "rps_flow_cnt"))
		case strings.HasPrefix(q.Name, "tx-"):
			q.XPSCPUs, _ = hostfs.ReadValue(filepath.Join(p, "xps_cpus"))
		default:
			continue
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return queueLess(out[i].Name, out[j].Name) })
	return out
}

// queueLess orders rx-2 before rx-10.
func queueLess(a, b string) bool {
	ap, an, _ := strings.Cut(a, "-")
	bp, bn, _ := strings.Cut(b, "-")
	if ap != bp {
		return ap < bp
	}
	ai, _ := strconv.Atoi(an)
	bi, _ := strconv.Atoi(bn)
	return ai < bi
}

func readInt(p string) (int64, error) {
	s, err := hostfs.ReadValue(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", p, err)
	}
	return v, nil
}
