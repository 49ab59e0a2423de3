// Package storage collects mounts and block devices, with device-mapper
// tables read through the DM ioctl and key material removed at the source.
//
// Readers are split by kernel source: mountinfo.go (/proc/self/mountinfo),
// sys_class_block.go (/sys/class/block), dm_ioctl.go (DM_TABLE_STATUS),
// dm_table.go (target parameters and their redaction), fscrypt.go
// (FS_IOC_GET_ENCRYPTION_POLICY_EX), luks.go (the LUKS header beneath a
// LUKS mapping: what opens it, never a key).
package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/slowpath/slowpath/internal/dmioctl"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Collector reads storage facts from the roots in FS. The zero values of
// OpenDM and Fscrypt use the live kernel interfaces under FS.Root, and only
// when FS.Live: an ioctl on a path under a foreign tree is answered by this
// host's kernel about this host's devices and filesystems.
type Collector struct {
	FS hostfs.FS
	// OpenDM opens the device-mapper control; it is only called when
	// there are dm devices whose tables are wanted.
	OpenDM func() (DMControl, error)
	// Fscrypt asks for the policy of mount roots.
	Fscrypt FscryptProber
}

// Collect fills s.Storage from the live host roots in fs.
func Collect(ctx context.Context, fs hostfs.FS, s *snapshot.Snapshot) {
	(&Collector{FS: fs}).Collect(ctx, s)
}

// Collect fills s.Storage. Nothing here fails the whole collection:
// each problem is recorded in the manifest with its path.
func (c *Collector) Collect(ctx context.Context, s *snapshot.Snapshot) {
	st := &snapshot.Storage{}
	s.Storage = st

	mounts, lineErrs, err := readMountInfo(c.FS)
	mi := mountInfoPath(c.FS)
	s.AddError("storage.mounts", mi, err)
	for _, e := range lineErrs {
		s.AddError("storage.mounts", mi, e)
	}
	prober := c.Fscrypt
	if prober == nil && c.FS.Live {
		prober = ioctlFscrypt{}
	}
	if prober != nil {
		collectFscrypt(c.FS, prober, mounts, s)
	} else if n := fscryptCandidates(mounts); n > 0 {
		s.AddError("storage.fscrypt", "FS_IOC_GET_ENCRYPTION_POLICY_EX", fmt.Errorf("%d mount(s) not checked: %w", n, c.FS.NotLive()))
	}
	st.Mounts = mounts

	st.BlockDevices = readBlockDevices(c.FS, s)
	if ctx.Err() != nil {
		s.AddError("storage.dm", "", ctx.Err())
		return
	}
	c.collectDMTables(st.BlockDevices, s)
	readLUKSHeaders(c.FS, st.BlockDevices, s)
}

// collectDMTables fills DM.Targets of every dm device.
func (c *Collector) collectDMTables(devs []snapshot.BlockDevice, s *snapshot.Snapshot) {
	var dms []*snapshot.BlockDevice
	for i := range devs {
		if devs[i].Kind == snapshot.KindDM && devs[i].DM != nil {
			dms = append(dms, &devs[i])
		}
	}
	if len(dms) == 0 {
		return // nothing to ask, so a kernel without dm is not an error
	}
	open := c.OpenDM
	ctlPath := c.FS.RootPath("dev", "mapper", "control")
	notRead := func(err error) {
		s.AddError("storage.dm", ctlPath, fmt.Errorf("dm tables of %d device(s) not read: %w", len(dms), err))
		for _, d := range dms {
			d.DM.TableNotRead = err.Error()
		}
	}
	if open == nil {
		if !c.FS.Live {
			notRead(c.FS.NotLive())
			return
		}
		open = func() (DMControl, error) { return OpenDMControl(ctlPath) }
	}
	ctl, err := open()
	if err != nil {
		notRead(err)
		return
	}
	defer ctl.Close()
	for _, d := range dms {
		targets, errs := readDMTable(ctl, d.MajorMinor)
		for _, e := range errs {
			s.AddError("storage.dm", ctlPath+" "+d.Name, e)
		}
		d.DM.Targets = targets
		if len(targets) == 0 && len(errs) > 0 {
			d.DM.TableNotRead = errors.Join(errs...).Error()
		}
	}
}

// readDMTable asks ctl for one device's table, decodes it, removes key
// material and zeroes the raw answer before returning.
func readDMTable(ctl DMControl, mm string) ([]snapshot.DMTarget, []error) {
	var maj, min uint32
	if _, err := fmt.Sscanf(mm, "%d:%d", &maj, &min); err != nil {
		return nil, []error{fmt.Errorf("bad device number %q: %w", mm, err)}
	}
	buf, err := ctl.TableStatus(maj, min)
	if err != nil {
		clear(buf)
		return nil, []error{err}
	}
	defer clear(buf)
	raw, err := dmioctl.DecodeTableStatus(buf)
	if err != nil {
		return nil, []error{fmt.Errorf("device %s: %w", mm, err)}
	}
	return redactTargets(raw)
}
