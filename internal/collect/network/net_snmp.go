package network

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// SNMPKeys are the socket-layer counters kept from /proc/net/snmp,
// /proc/net/netstat and /proc/net/snmp6, as "Group.Name". All but the
// InDatagrams count packets or events the kernel dropped or refused;
// InDatagrams (datagrams delivered to a socket) is the traffic a socket
// drop is a share of (netmodel.SNMPTraffic).
var SNMPKeys = []string{
	"Udp.InDatagrams", "Udp6.InDatagrams",
	"Udp.InErrors", "Udp.RcvbufErrors", "Udp.SndbufErrors", "Udp.InCsumErrors", "Udp.MemErrors",
	"Udp6.InErrors", "Udp6.RcvbufErrors", "Udp6.SndbufErrors", "Udp6.MemErrors",
	"TcpExt.ListenOverflows", "TcpExt.ListenDrops", "TcpExt.TCPBacklogDrop", "TcpExt.TCPRcvQDrop",
	"TcpExt.PruneCalled", "TcpExt.RcvPruned", "TcpExt.TCPZeroWindowDrop",
	"IpExt.InNoRoutes",
}

var snmpKeep = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range SNMPKeys {
		m[k] = true
	}
	return m
}()

// readSNMP reads the kept counters of /proc/net/snmp and /proc/net/netstat
// (header line / value line pairs, net/ipv4/proc.c) and /proc/net/snmp6
// (name value lines, net/ipv6/proc.c). They are per network namespace:
// /proc/net is /proc/self/net, the reader's namespace.
func readSNMP(f hostfs.FS) (map[string]int64, []SampleError) {
	out := map[string]int64{}
	var errs []SampleError
	for _, name := range []string{"snmp", "netstat"} {
		p := f.ProcPath("net", name)
		b, err := os.ReadFile(p)
		if err == nil {
			var m map[string]int64
			m, err = parseSNMP(bytes.NewReader(b))
			for k, v := range m {
				if snmpKeep[k] {
					out[k] = v
				}
			}
		}
		if err != nil {
			errs = append(errs, SampleError{"net.snmp", p, err})
		}
	}
	p := f.ProcPath("net", "snmp6")
	if b, err := os.ReadFile(p); err == nil {
		m, err := parseSNMP6(bytes.NewReader(b))
		for k, v := range m {
			if snmpKeep[k] {
				out[k] = v
			}
		}
		if err != nil {
			errs = append(errs, SampleError{"net.snmp", p, err})
		}
	} else if hostfs.Classify(err) != hostfs.KindMissing { // no IPv6: no file
		errs = append(errs, SampleError{"net.snmp", p, err})
	}
	return out, errs
}

// parseSNMP parses the "Group: Name Name ..." / "Group: value value ..."
// line pairs shared by /proc/net/snmp and /proc/net/netstat. Values are
// signed (Tcp MaxConn is -1).
func parseSNMP(r io.Reader) (map[string]int64, error) {
	sc := bufio.NewScanner(r)
	// Lines grow from the Scanner's 4 kB as needed: a 64 kB buffer made
	// up front was a fifth of what an agent scrape allocated.
	sc.Buffer(nil, 1<<20)
	out := map[string]int64{}
	for sc.Scan() {
		header := sc.Text()
		if strings.TrimSpace(header) == "" {
			continue
		}
		group, names, ok := strings.Cut(header, ":")
		if !ok {
			return nil, fmt.Errorf("line %q: no group", header)
		}
		if !sc.Scan() {
			return nil, fmt.Errorf("group %s: header without values", group)
		}
		vgroup, values, ok := strings.Cut(sc.Text(), ":")
		if !ok || vgroup != group {
			return nil, fmt.Errorf("group %s: value line is for %q", group, vgroup)
		}
		nf, vf := strings.Fields(names), strings.Fields(values)
		if len(nf) != len(vf) {
			return nil, fmt.Errorf("group %s: %d names but %d values", group, len(nf), len(vf))
		}
		for i, n := range nf {
			v, err := strconv.ParseInt(vf[i], 10, 64)
			if err != nil {
				// Counters above 2^63 do not occur in practice; refuse rather than guess.
				return nil, fmt.Errorf("group %s %s: %w", group, n, err)
			}
			out[group+"."+n] = v
		}
	}
	return out, sc.Err()
}

// parseSNMP6 parses /proc/net/snmp6 lines "Udp6RcvbufErrors  0" into
// "Udp6.RcvbufErrors" keys (the group is the name's Ip6/Icmp6/Udp6/UdpLite6 prefix).
func parseSNMP6(r io.Reader) (map[string]int64, error) {
	sc := bufio.NewScanner(r)
	out := map[string]int64{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %q: want name and value", sc.Text())
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f[0], err)
		}
		key := f[0]
		for _, g := range []string{"UdpLite6", "Udp6", "Icmp6", "Ip6"} {
			if strings.HasPrefix(key, g) && len(key) > len(g) {
				key = g + "." + key[len(g):]
				break
			}
		}
		out[key] = v
	}
	return out, sc.Err()
}
