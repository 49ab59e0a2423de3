package apply

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/dmioctl"
)

// DMTables reads and replaces the parameters of single-target
// device-mapper tables by device name.
type DMTables interface {
	// Params returns the target type and parameters of name's only target.
	// The parameters of a crypt target hold its key: the caller wipes them.
	Params(name string) (typ string, params []byte, err error)
	// Replace loads params as name's table (same type, start and length)
	// and makes it live.
	Replace(name string, params []byte) error
}

// LiveDM is DMTables over /dev/mapper/control. The ABI and its encoding
// are in internal/dmioctl, shared with the collector that reads tables.
type LiveDM struct{ Path string }

func (d LiveDM) open() (*os.File, error) {
	p := d.Path
	if p == "" {
		p = "/dev/mapper/control"
	}
	f, err := os.OpenFile(p, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s (load dm-mod, run as root: device-mapper ioctls need CAP_SYS_ADMIN): %w", p, err)
	}
	return f, nil
}

// request names the device of an ioctl: slowpath changes devices by name
// only.
func request(name string, flags uint32) (dmioctl.Request, error) {
	if len(name) == 0 || len(name) >= dmioctl.NameLen {
		return dmioctl.Request{}, fmt.Errorf("dm name %q: want 1 to %d bytes", name, dmioctl.NameLen-1)
	}
	return dmioctl.Request{Name: name, Flags: flags}, nil
}

// table reads name's live table: its targets, whether the device is
// read-only, and the answer buffer the targets' params alias (the caller
// zeroes it).
func table(f *os.File, name string) ([]dmioctl.Target, bool, []byte, error) {
	r, err := request(name, dmioctl.StatusTableFlag|dmioctl.SecureDataFlag)
	if err != nil {
		return nil, false, nil, err
	}
	buf, err := dmioctl.TableStatus(f, r)
	if err != nil {
		return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: %w", name, err)
	}
	ts, err := dmioctl.DecodeTableStatus(buf)
	if err != nil {
		clear(buf)
		return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: %w", name, err)
	}
	return ts, dmioctl.ReplyFlags(buf)&dmioctl.ReadonlyFlag != 0, buf, nil
}

// Params implements DMTables.
func (d LiveDM) Params(name string) (string, []byte, error) {
	f, err := d.open()
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	ts, _, buf, err := table(f, name)
	if err != nil {
		return "", nil, err
	}
	defer clear(buf)
	if len(ts) != 1 {
		return "", nil, fmt.Errorf("%s has %d targets; slowpath changes single-target tables only", name, len(ts))
	}
	return ts[0].Type, slices.Clone(ts[0].Params), nil
}

// Replace implements DMTables: DM_TABLE_LOAD into the inactive slot, then
// DM_DEV_SUSPEND without DM_SUSPEND_FLAG, which suspends the device,
// swaps the tables and resumes (drivers/md/dm-ioctl.c do_resume), as
// `dmsetup reload` + `dmsetup resume` do. A table the kernel refuses
// leaves the live one untouched; a failed swap clears the inactive one.
func (d LiveDM) Replace(name string, params []byte) error {
	f, err := d.open()
	if err != nil {
		return err
	}
	defer f.Close()
	ts, ro, old, err := table(f, name)
	if err != nil {
		return err
	}
	defer clear(old)
	if len(ts) != 1 {
		return fmt.Errorf("%s has %d targets; slowpath changes single-target tables only", name, len(ts))
	}
	t := ts[0]
	flags := uint32(dmioctl.SecureDataFlag)
	if ro {
		flags |= dmioctl.ReadonlyFlag
	}
	load, err := request(name, flags)
	if err != nil {
		return err
	}
	buf, err := dmioctl.EncodeTableLoad(load, []dmioctl.Target{{Start: t.Start, Length: t.Length, Type: t.Type, Params: params}})
	if err != nil {
		return fmt.Errorf("DM_TABLE_LOAD %s: %w", name, err)
	}
	defer clear(buf)
	if err := dmioctl.Ioctl(f, dmioctl.CmdTableLoad, buf); err != nil {
		return fmt.Errorf("DM_TABLE_LOAD %s: the kernel refused the table: %w", name, err)
	}
	plain, err := request(name, 0)
	if err != nil {
		return err
	}
	res := make([]byte, dmioctl.HeaderSize)
	if err := dmioctl.PutHeader(res, plain); err != nil {
		return err
	}
	if err := dmioctl.Ioctl(f, dmioctl.CmdDevSuspend, res); err != nil {
		clr := make([]byte, dmioctl.HeaderSize)
		_ = dmioctl.PutHeader(clr, plain)
		_ = dmioctl.Ioctl(f, dmioctl.CmdTableClear, clr)
		return fmt.Errorf("DM_DEV_SUSPEND (resume) %s: %w", name, err)
	}
	return nil
}

// errCryptTable marks crypt parameters that do not follow the documented
// format: <cipher> <key> <iv_offset> <device> <offset> [<#opt> <opt>...]
// (Documentation/admin-guide/device-mapper/dm-crypt.rst).
var errCryptTable = errors.New("malformed crypt table")

// cryptOptions returns the optional parameters of crypt params.
func cryptOptions(params []byte) ([]string, error) {
	f := bytes.Fields(params)
	if len(f) < 5 {
		return nil, fmt.Errorf("%w: %d fields", errCryptTable, len(f))
	}
	if len(f) == 5 {
		return nil, nil
	}
	n, err := strconv.Atoi(string(f[5]))
	if err != nil || n != len(f)-6 {
		return nil, fmt.Errorf("%w: optional parameter count %q for %d parameters", errCryptTable, f[5], len(f)-6)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]string, n)
	for i := range n {
		out[i] = string(f[6+i])
	}
	return out, nil
}

// withCryptOptions returns params with its optional parameters replaced
// by opts. The key field is copied, never turned into a string.
func withCryptOptions(params []byte, opts []string) ([]byte, error) {
	f := bytes.Fields(params)
	if len(f) < 5 {
		return nil, fmt.Errorf("%w: %d fields", errCryptTable, len(f))
	}
	out := bytes.Join(f[:5], []byte(" "))
	if len(opts) > 0 {
		out = append(out, ' ')
		out = strconv.AppendInt(out, int64(len(opts)), 10)
		for _, o := range opts {
			out = append(out, ' ')
			out = append(out, o...)
		}
	}
	return out, nil
}
