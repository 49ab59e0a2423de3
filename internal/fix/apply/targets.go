package apply

import (
	"fmt"
	"io"
	"os"
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

// Steps' changes read and write their settings through a Host.
var _ fix.Settings = Host{}

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

// ReadSysctl returns the value of the sysctl key (fix.Settings).
func (h Host) ReadSysctl(key string) (string, error) {
	f, err := h.sysctlFile(key, os.O_RDONLY)
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", key, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// WriteSysctl sets the sysctl key to value (fix.Settings).
func (h Host) WriteSysctl(key, value string) error {
	p := h.sysctlPath(key)
	f, err := h.sysctlFile(key, os.O_WRONLY|os.O_TRUNC)
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
}

// RingRX returns the RX ring size of ifname (fix.Settings).
func (h Host) RingRX(ifname string) (uint32, error) {
	cur, _, err := h.Rings.RX(ifname)
	return cur, err
}

// SetRingRX sets the RX ring size of ifname (fix.Settings).
func (h Host) SetRingRX(ifname string, n uint32) error { return h.Rings.SetRX(ifname, n) }

// CryptOptions returns the optional parameters of the dm-crypt table of
// name, never the key (fix.Settings).
func (h Host) CryptOptions(name string) ([]string, error) {
	typ, params, err := h.DM.Params(name)
	if err != nil {
		return nil, err
	}
	defer clear(params)
	if typ != "crypt" {
		return nil, fmt.Errorf("%s is a %s target, not crypt", name, typ)
	}
	opts, err := cryptOptions(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return opts, nil
}

// SetCryptOptions reloads the dm-crypt table of name with opts as its
// optional parameters (fix.Settings).
func (h Host) SetCryptOptions(name string, opts []string) error {
	typ, params, err := h.DM.Params(name)
	if err != nil {
		return err
	}
	defer clear(params)
	if typ != "crypt" {
		return fmt.Errorf("%s is a %s target, not crypt", name, typ)
	}
	np, err := withCryptOptions(params, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer clear(np)
	return h.DM.Replace(name, np)
}

// schedulerFile opens /sys/block/DEV/queue/scheduler. dev must be one
// kernel device name (no / and not . or ..), so the path names that
// device's file and nothing else; /sys/block/DEV itself is the kernel's
// symlink into /sys/devices, which an os.Root would refuse.
func (h Host) schedulerFile(dev string, flag int) (*os.File, error) {
	if !component(dev) {
		return nil, fmt.Errorf("%q is not a block device name", dev)
	}
	return os.OpenFile(h.FS.SysPath("block", dev, "queue", "scheduler"), flag, 0)
}

// Scheduler returns the active I/O scheduler of dev: the bracketed word of
// its queue/scheduler ("none [mq-deadline] kyber"), or the only word of a
// queue that offers one (fix.Settings).
func (h Host) Scheduler(dev string) (string, error) {
	f, err := h.schedulerFile(dev, os.O_RDONLY)
	if err != nil {
		return "", fmt.Errorf("read scheduler of %s: %w", dev, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("read scheduler of %s: %w", dev, err)
	}
	return activeScheduler(string(b))
}

// activeScheduler reads the kernel's queue/scheduler line
// (block/elevator.c elv_iosched_show).
func activeScheduler(line string) (string, error) {
	words := strings.Fields(line)
	for _, w := range words {
		if len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' {
			return w[1 : len(w)-1], nil
		}
	}
	if len(words) == 1 && !strings.ContainsAny(words[0], "[]") {
		return words[0], nil
	}
	return "", fmt.Errorf("queue/scheduler %q names no active scheduler", strings.TrimSpace(line))
}

// SetScheduler selects name for dev (fix.Settings).
func (h Host) SetScheduler(dev, name string) error {
	f, err := h.schedulerFile(dev, os.O_WRONLY)
	if err != nil {
		return fmt.Errorf("set scheduler of %s: %w (run as root)", dev, err)
	}
	_, err = f.WriteString(name)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("set scheduler of %s to %s: %w", dev, name, err)
	}
	return nil
}
