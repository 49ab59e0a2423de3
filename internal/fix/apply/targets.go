package apply

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/safchain/ethtool"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/quote"
)

// Rings reads and sets NIC RX ring sizes.
type Rings interface {
	RX(ifname string) (cur, max uint32, err error)
	SetRX(ifname string, n uint32) error
}

// LiveRings is Rings over the SIOCETHTOOL ioctl (ETHTOOL_GRINGPARAM /
// ETHTOOL_SRINGPARAM, include/uapi/linux/ethtool.h).
type LiveRings struct{}

func (LiveRings) RX(ifname string) (uint32, uint32, error) {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	r, err := e.GetRing(ifname)
	if err != nil {
		return 0, 0, fmt.Errorf("ETHTOOL_GRINGPARAM %s: %w", ifname, err)
	}
	return r.RxPending, r.RxMaxPending, nil
}

func (LiveRings) SetRX(ifname string, n uint32) error {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return err
	}
	defer e.Close()
	r, err := e.GetRing(ifname)
	if err != nil {
		return fmt.Errorf("ETHTOOL_GRINGPARAM %s: %w", ifname, err)
	}
	r.RxPending = n
	if _, err := e.SetRing(ifname, r); err != nil {
		return fmt.Errorf("ETHTOOL_SRINGPARAM %s rx %d: the driver refused it: %w", ifname, n, err)
	}
	return nil
}

// Host is where changes are made: the roots and the non-file interfaces.
type Host struct {
	FS    hostfs.FS
	Rings Rings
	DM    DMTables
}

// Live is this machine.
func Live(fs hostfs.FS) Host { return Host{FS: fs, Rings: LiveRings{}, DM: LiveDM{}} }

func (h Host) sysctlPath(key string) string {
	return h.FS.ProcPath(append([]string{"sys"}, strings.Split(key, ".")...)...)
}

// sysctlFile opens the /proc/sys file of key through an os.Root at
// /proc/sys: the key must be a sysctl name (quote.SysctlKey), so it names
// a file under /proc/sys and nothing else.
func (h Host) sysctlFile(key string, flag int) (*os.File, error) {
	if _, err := quote.SysctlKey(key); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(h.FS.ProcPath("sys"))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.OpenFile(strings.ReplaceAll(key, ".", "/"), flag, 0)
}

// read returns the current value of what s changes, in the form the state
// file keeps: a number for sysctls and rings, the optional parameters
// (never the key) for crypt tables.
func (h Host) read(s fix.Step) (string, error) {
	switch s.Kind {
	case fix.KindSysctl:
		f, err := h.sysctlFile(s.Sysctl.Key, os.O_RDONLY)
		if err != nil {
			return "", fmt.Errorf("read sysctl %s: %w", s.Sysctl.Key, err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return "", fmt.Errorf("read sysctl %s: %w", s.Sysctl.Key, err)
		}
		return strings.TrimSpace(string(b)), nil
	case fix.KindRing:
		cur, _, err := h.Rings.RX(s.Ring.Interface)
		if err != nil {
			return "", err
		}
		return strconv.FormatUint(uint64(cur), 10), nil
	case fix.KindCrypt:
		typ, params, err := h.DM.Params(s.Crypt.Name)
		if err != nil {
			return "", err
		}
		defer clear(params)
		if typ != "crypt" {
			return "", fmt.Errorf("%s is a %s target, not crypt", s.Crypt.Name, typ)
		}
		opts, err := cryptOptions(params)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.Crypt.Name, err)
		}
		return strings.Join(opts, " "), nil
	}
	return "", fmt.Errorf("unknown step kind %q", s.Kind)
}

// target is the value s asks for, given the current one.
func target(s fix.Step, cur string) string {
	switch s.Kind {
	case fix.KindSysctl:
		return strconv.FormatInt(s.Sysctl.To, 10)
	case fix.KindRing:
		return strconv.FormatUint(uint64(s.Ring.RX), 10)
	case fix.KindCrypt:
		opts := strings.Fields(cur)
		for _, a := range s.Crypt.Add {
			if !slices.Contains(opts, a) {
				opts = append(opts, a)
			}
		}
		return strings.Join(opts, " ")
	}
	return ""
}

// same compares two values of s's kind: crypt options as sets, since the
// kernel prints them in its own order.
func same(kind, a, b string) bool {
	if kind != fix.KindCrypt {
		return a == b
	}
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// write sets what s changes to value.
func (h Host) write(s fix.Step, value string) error {
	switch s.Kind {
	case fix.KindSysctl:
		p := h.sysctlPath(s.Sysctl.Key)
		f, err := h.sysctlFile(s.Sysctl.Key, os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("write %s: %w (run as root)", p, err)
		}
		_, err = f.WriteString(value + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w (run as root)", p, err)
		}
		return nil
	case fix.KindRing:
		n, err := strconv.ParseUint(value, 10, 32)
		if err != nil {
			return fmt.Errorf("ring size %q: %w", value, err)
		}
		return h.Rings.SetRX(s.Ring.Interface, uint32(n))
	case fix.KindCrypt:
		typ, params, err := h.DM.Params(s.Crypt.Name)
		if err != nil {
			return err
		}
		defer clear(params)
		if typ != "crypt" {
			return fmt.Errorf("%s is a %s target, not crypt", s.Crypt.Name, typ)
		}
		np, err := withCryptOptions(params, strings.Fields(value))
		if err != nil {
			return fmt.Errorf("%s: %w", s.Crypt.Name, err)
		}
		defer clear(np)
		return h.DM.Replace(s.Crypt.Name, np)
	}
	return fmt.Errorf("unknown step kind %q", s.Kind)
}
