// Package cryptlab builds a throwaway dm-crypt lab: a brd ramdisk or a loop
// device over a file it creates, and one plain dm-crypt mapping per variant
// (flags, sector size, cipher, crypt on crypt), each with a random key that
// exists only in this process's memory. The key reaches the kernel through
// dmsetup's standard input, never a command line or a file, and the buffers
// holding it are cleared once the table is loaded.
//
// Everything the lab creates is recorded in a state file under StateDir
// before it is created, and undone by Close; a lab killed before Close
// (SIGKILL) is undone by the next Setup, which touches only devices whose
// name, uuid and device number are the recorded ones.
package cryptlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/lab/hostlock"
)

// Options say what to build.
type Options struct {
	Backing  Backing
	Variants []Variant
	// PlainMapping makes the plain side a dm-linear mapping over the
	// backing (Lab.PlainPath): a filesystem can be neither made nor
	// mounted on the backing itself while the crypt mappings hold it.
	PlainMapping bool
	// Sys is the sysfs mountpoint (default /sys); Dev the devtmpfs one
	// (default /dev); Proc the procfs one (default /proc), for the mount
	// tables recovery checks before unloading brd.
	Sys, Dev, Proc string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Mapping is one variant's dm-crypt device.
type Mapping struct {
	Variant Variant
	Name    string // dm name
	Path    string // /dev/mapper/NAME
	// Unsupported says why the kernel cannot run this variant ("" when it
	// can); such a variant has no device.
	Unsupported string
	Lower       string // stacked: the name of the mapping underneath
}

// Lab is a live crypt lab.
type Lab struct {
	ID           string
	CryptVersion Version
	Backing      Backing
	BackingPath  string // /dev/ram0 or /dev/loopN
	// PlainPath is the plain side's device: BackingPath, or with
	// Options.PlainMapping its dm-linear mapping.
	PlainPath string
	Sectors   uint64 // size of the backing device in 512-byte sectors
	Mappings  []Mapping

	opts  Options
	lock  *hostlock.Lock
	state labState
	log   func(string, ...any)
}

// ErrNotRoot, ErrNoDM and ErrNoBacking are the refusals a caller can tell
// apart.
var (
	ErrNotRoot   = errors.New("the crypt lab needs root (CAP_SYS_ADMIN for device-mapper, brd and loop devices)")
	ErrNoDM      = errors.New("no dm-crypt target")
	ErrNoBacking = errors.New("no backing device")
)

// Probe returns the crypt target version, loading dm-crypt if needed. It
// is the refusal point for kernels without device-mapper or dm-crypt.
func Probe(ctx context.Context, dev string) (Version, error) {
	if dev == "" {
		dev = "/dev"
	}
	if _, err := exec.LookPath("dmsetup"); err != nil {
		return Version{}, fmt.Errorf("%w: dmsetup not found (apt-get install dmsetup)", ErrNoDM)
	}
	// Best effort: a module that is built in, or absent, shows in what
	// follows.
	_ = exec.CommandContext(ctx, "modprobe", "dm-crypt").Run()
	if _, err := os.Stat(filepath.Join(dev, "mapper", "control")); err != nil {
		return Version{}, fmt.Errorf("%w: %s/mapper/control: %w (this kernel has no device-mapper: CONFIG_BLK_DEV_DM, modprobe dm-mod)", ErrNoDM, dev, err)
	}
	out, err := exec.CommandContext(ctx, "dmsetup", "targets").CombinedOutput()
	if err != nil {
		return Version{}, fmt.Errorf("%w: dmsetup targets: %w: %s", ErrNoDM, err, bytes.TrimSpace(out))
	}
	v, ok, err := parseTargets(string(out))
	if err != nil {
		return Version{}, fmt.Errorf("%w: %w", ErrNoDM, err)
	}
	if !ok {
		return Version{}, fmt.Errorf("%w: the kernel lists no crypt target (CONFIG_DM_CRYPT, modprobe dm-crypt)", ErrNoDM)
	}
	return v, nil
}

// Setup builds the lab. On any error it undoes what it built.
func Setup(ctx context.Context, opts Options) (l *Lab, err error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if opts.Sys == "" {
		opts.Sys = "/sys"
	}
	if opts.Dev == "" {
		opts.Dev = "/dev"
	}
	if opts.Proc == "" {
		opts.Proc = "/proc"
	}
	if len(opts.Variants) == 0 {
		return nil, errors.New("no variants")
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	lk, err := acquireLock(ctx)
	if err != nil {
		return nil, err
	}
	if err := RecoverStale(ctx, opts.Sys, opts.Proc, logf); err != nil {
		lk.Release()
		return nil, err
	}
	ver, err := Probe(ctx, opts.Dev)
	if err != nil {
		lk.Release()
		return nil, err
	}
	idb := make([]byte, 3)
	rand.Read(idb)
	id := hex.EncodeToString(idb)
	l = &Lab{ID: id, CryptVersion: ver, Backing: opts.Backing, opts: opts, lock: lk, log: logf,
		state: labState{PID: os.Getpid(), ID: id}}
	defer func() {
		if err != nil {
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("undo partial lab: %w", cerr))
			}
		}
	}()
	if err := l.state.save(); err != nil {
		return l, err
	}
	if err := l.makeBacking(ctx); err != nil {
		return l, err
	}
	l.PlainPath = l.BackingPath
	if opts.PlainMapping {
		name := NamePrefix + id + "-plain"
		table := fmt.Appendf(nil, "0 %d linear %s 0\n", l.Sectors, l.BackingPath)
		if err := l.loadTable(ctx, name, table, nil, "linear", "modprobe dm-mod"); err != nil {
			var refused *refusedError
			if errors.As(err, &refused) {
				// Not a variant the kernel lacks: the plain side itself.
				return l, fmt.Errorf("%w: the plain side's dm-linear mapping: %s", ErrNoDM, refused.msg)
			}
			return l, err
		}
		l.PlainPath = filepath.Join(opts.Dev, "mapper", name)
		l.log("cryptlab %s: %s = linear over %s (%s)", l.ID, name, l.BackingPath, l.state.DM[len(l.state.DM)-1].Dev)
	}
	for i, v := range opts.Variants {
		if err := ctx.Err(); err != nil {
			return l, err
		}
		m := Mapping{Variant: v, Name: fmt.Sprintf("%s%s-%d", NamePrefix, id, i)}
		if ok, why := v.Supported(ver); !ok {
			m.Unsupported = why
			l.Mappings = append(l.Mappings, m)
			continue
		}
		lower := l.BackingPath
		if v.Stacked {
			m.Lower = m.Name + "-lower"
			if err := l.createDM(ctx, m.Lower, Variant{Cipher: defaultCipher, KeyBytes: 64}, l.BackingPath); err != nil {
				return l, err
			}
			lower = filepath.Join(opts.Dev, "mapper", m.Lower)
		}
		if err := l.createDM(ctx, m.Name, v, lower); err != nil {
			var refused *refusedError
			if !errors.As(err, &refused) {
				return l, err
			}
			m.Unsupported = refused.Error()
		} else {
			m.Path = filepath.Join(opts.Dev, "mapper", m.Name)
		}
		l.Mappings = append(l.Mappings, m)
	}
	return l, nil
}

func (l *Lab) makeBacking(ctx context.Context) error {
	b := l.Backing
	switch b.Kind {
	case "ram":
		if _, err := os.Stat(filepath.Join(l.opts.Sys, "module", "brd")); err == nil {
			return fmt.Errorf("%w: brd is already loaded, and its ramdisks may be someone else's: use --backing file:PATH:SIZE, or rmmod brd", ErrNoBacking)
		}
		// Recorded to be compared at recovery with what
		// /sys/module/brd/parameters shows. Not max_part: brd turns the
		// 0 given below into 1 (drivers/block/brd.c,
		// brd_check_and_reset_par), so it would never read back equal.
		params := map[string]string{"rd_nr": "1", "rd_size": strconv.FormatInt(b.Size>>10, 10)}
		l.state.Brd, l.state.BrdParams = true, params
		if err := l.state.save(); err != nil {
			return err
		}
		out, err := exec.CommandContext(ctx, "modprobe", "brd", "rd_nr=1", "rd_size="+params["rd_size"], "max_part=0").CombinedOutput()
		if err != nil {
			l.state.Brd = false
			_ = l.state.save()
			return fmt.Errorf("%w: modprobe brd: %w: %s (CONFIG_BLK_DEV_RAM; or use --backing file:PATH:SIZE)", ErrNoBacking, err, bytes.TrimSpace(out))
		}
		l.BackingPath = filepath.Join(l.opts.Dev, "ram0")
		if err := waitFor(func() bool { _, err := os.Stat(l.BackingPath); return err == nil }); err != nil {
			return fmt.Errorf("%w: %s did not appear after modprobe brd", ErrNoBacking, l.BackingPath)
		}
	case "file":
		if _, err := exec.LookPath("losetup"); err != nil {
			return fmt.Errorf("%w: losetup not found (apt-get install mount)", ErrNoBacking)
		}
		// O_EXCL: never reuse (or later delete) a file the lab did not make.
		f, err := os.OpenFile(b.Path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("%w: create %s: %w (the lab makes a new file and removes it afterwards; name one that does not exist)", ErrNoBacking, b.Path, err)
		}
		l.state.File = b.Path
		if err := l.state.save(); err != nil {
			f.Close()
			return err
		}
		// Allocate the blocks, so the first pass does not measure the
		// filesystem's allocator.
		err = unix.Fallocate(int(f.Fd()), 0, 0, b.Size)
		if errors.Is(err, unix.EOPNOTSUPP) {
			err = f.Truncate(b.Size)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("allocate %s: %w", b.Path, err)
		}
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "losetup", "--find", "--show", b.Path)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%w: losetup %s: %w: %s (CONFIG_BLK_DEV_LOOP, modprobe loop)", ErrNoBacking, b.Path, err, bytes.TrimSpace(stderr.Bytes()))
		}
		l.BackingPath = strings.TrimSpace(string(out))
		// Direct I/O from the loop device to the file keeps the page cache
		// out of the measurement; filesystems without O_DIRECT (tmpfs before
		// 6.6) refuse it, and the lab goes on with buffered I/O.
		if out, err := exec.CommandContext(ctx, "losetup", "--direct-io=on", l.BackingPath).CombinedOutput(); err != nil {
			l.log("cryptlab %s: %s stays buffered: losetup --direct-io=on: %s", l.ID, l.BackingPath, bytes.TrimSpace(out))
		}
		dev, err := devNumber(l.BackingPath)
		if err != nil {
			return err
		}
		l.state.Loop = &loopRecord{Device: l.BackingPath, Dev: dev, File: b.Path}
		if err := l.state.save(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("backing kind %q", b.Kind)
	}
	sz := filepath.Join(l.opts.Sys, "class", "block", filepath.Base(l.BackingPath), "size")
	sectors, err := strconv.ParseUint(readTrim(sz), 10, 64)
	if err != nil || sectors == 0 {
		return fmt.Errorf("size of %s from %s: %q", l.BackingPath, sz, readTrim(sz))
	}
	l.Sectors = sectors // always in 512-byte units (Documentation/ABI/stable/sysfs-block)
	size := sectors * 512
	l.log("cryptlab %s: backing %s on %s (%d MiB)", l.ID, b, l.BackingPath, size>>20)
	return nil
}

// refusedError is the kernel refusing a table (an unknown cipher, a key
// size it does not take): the variant is reported unsupported.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// createDM loads a crypt table with a fresh random key. The key is in
// memory only: hex-encoded into a buffer, piped to dmsetup's stdin, and
// the buffers are cleared before returning.
func (l *Lab) createDM(ctx context.Context, name string, v Variant, lower string) error {
	key := make([]byte, v.KeyBytes)
	hexKey := make([]byte, 2*v.KeyBytes)
	defer clear(key)
	defer clear(hexKey)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	hex.Encode(hexKey, key)
	// A stacked variant's upper mapping has its lower mapping's size,
	// which is the backing's.
	table := v.Table(l.Sectors, lower, hexKey)
	defer clear(table)
	hint := "is its module loaded?"
	if !v.Encrypts() {
		hint = "modprobe crypto_null (CONFIG_CRYPTO_NULL)"
	}
	err := l.loadTable(ctx, name, table, hexKey, v.Cipher, hint)
	if err == nil {
		l.log("cryptlab %s: %s = %s %s (%s)", l.ID, name, v.Cipher, strings.Join(v.Flags, " "), l.state.DM[len(l.state.DM)-1].Dev)
	}
	return err
}

// loadTable creates dm device name with table, recorded in the state file
// before (intent) and after (its device number). hexKey, when the table
// holds one, is kept out of any error; what names the target in errors
// (the cipher, or "linear"), hint what to do when the kernel lacks it.
func (l *Lab) loadTable(ctx context.Context, name string, table, hexKey []byte, what, hint string) error {
	uuid := UUIDPrefix + l.ID + "-" + strings.TrimPrefix(name, NamePrefix+l.ID+"-")
	l.state.DM = append(l.state.DM, dmRecord{Name: name, UUID: uuid})
	rec := &l.state.DM[len(l.state.DM)-1]
	if err := l.state.save(); err != nil {
		return err
	}
	// The table goes through a pipe whose read end is dmsetup's stdin: with
	// an *os.File as Stdin, os/exec copies nothing through a buffer of its
	// own. 64 KiB of pipe capacity holds the table, so the write does not
	// wait for dmsetup.
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	_, werr := pw.Write(table)
	pw.Close()
	if werr != nil {
		pr.Close()
		return fmt.Errorf("pipe the table to dmsetup: %w", werr)
	}
	cmd := exec.CommandContext(ctx, "dmsetup", "create", name, "--uuid", uuid)
	cmd.Stdin = pr
	out, err := cmd.CombinedOutput()
	pr.Close()
	// dmsetup does not echo tables, but never let a key into an error.
	if len(hexKey) > 0 {
		out = bytes.ReplaceAll(out, hexKey, []byte("<key>"))
	}
	if err != nil {
		msg := string(bytes.TrimSpace(out))
		switch {
		case strings.Contains(msg, "Invalid argument"):
			return &refusedError{fmt.Sprintf("kernel refused the table (%s): %s", what, msg)}
		case strings.Contains(msg, "No such file or directory"):
			// dm-crypt's "Error allocating crypto tfm (-ENOENT)": the crypto
			// API has no such algorithm and could not load a module for it.
			return &refusedError{fmt.Sprintf("kernel has no %s cipher (%s): %s", what, hint, msg)}
		}
		return fmt.Errorf("dmsetup create %s: %w: %s", name, err, msg)
	}
	dev, err := devNumber(filepath.Join(l.opts.Dev, "mapper", name))
	if err != nil {
		return err
	}
	rec.Dev = dev
	return l.state.save()
}

// Close removes every device the lab created, in reverse order, then the
// backing, its file and the state file, and releases the lock. It is
// idempotent.
func (l *Lab) Close() error {
	if l == nil || l.lock == nil {
		return nil
	}
	skipped, err := teardown(l.state, l.opts.Sys, l.opts.Proc, l.log)
	errs := []error{err}
	for _, s := range skipped {
		errs = append(errs, fmt.Errorf("left %s alone: %s", s.Record, s.Reason))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cryptlab %s teardown: %w", l.ID, err)
	}
	_ = os.Remove(statePath(l.ID))
	l.log("cryptlab %s: torn down", l.ID)
	l.lock.Release()
	l.lock = nil
	return nil
}

// RecoverStale undoes labs whose process died before Close. The caller
// holds the lock, so no state file belongs to a live lab. sys and proc are
// the sysfs and procfs mountpoints.
func RecoverStale(ctx context.Context, sys, proc string, logf func(string, ...any)) error {
	files, err := filepath.Glob(filepath.Join(StateDir, "lab-*.json"))
	if err != nil || len(files) == 0 {
		return err
	}
	var errs []error
	for _, f := range files {
		st, err := readState(f)
		if err != nil {
			// A torn write: nothing in it can be trusted to undo.
			logf("cryptlab: ignoring unreadable state %s: %v", f, err)
			_ = os.Remove(f)
			continue
		}
		logf("cryptlab: cleaning up lab %s left by process %d", st.ID, st.PID)
		skipped, err := teardown(st, sys, proc, logf)
		for _, s := range skipped {
			logf("cryptlab: left %s alone: %s", s.Record, s.Reason)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_ = os.Remove(f)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up a crypt lab that did not close: %w", err)
	}
	return nil
}

// teardown undoes what st records: the mounts first, then, on a fresh look
// at the host, the devices, the backing file and brd. It returns what it
// left alone (Close fails on it; recovery of a dead lab logs it, as the
// record cannot be acted on) and the errors of what it tried. While a
// recorded mount is not undone, no device is touched: a dm device under a
// mount cannot go, and a loop device would only be set to autoclear while
// its backing file was removed under the mounted filesystem.
func teardown(st labState, sys, proc string, logf func(string, ...any)) ([]Skipped, error) {
	var skipped []Skipped
	h, err := observeHost(sys, proc)
	if err != nil {
		return nil, err
	}
	acts, skip := planUnmounts(st, h)
	skipped = append(skipped, skip...)
	// A record it cannot act on (outside the lab's directory, another
	// device mounted there now) holds none of the lab's devices; a failed
	// unmount, or mount tables it cannot read, may.
	uncertain := h.MountErr != nil && len(st.Mounts) > 0
	if err := execute(acts, logf); err != nil || uncertain {
		return skipped, errors.Join(err, errors.New("a mount of the lab may still be there: its devices are left for the next lab to retry"))
	}
	_ = os.Remove(mountRoot(st.ID)) // empty by now; absent when no side had a filesystem
	if h, err = observeHost(sys, proc); err != nil {
		return skipped, err
	}
	acts, skip = planRecovery(st, h)
	return append(skipped, skip...), execute(acts, logf)
}

func execute(acts []Action, logf func(string, ...any)) error {
	var errs []error
	for _, a := range acts {
		var err error
		switch a.Kind {
		case "dm":
			// A workload killed with us may still hold the device for a
			// moment: retry while it is busy.
			err = retryBusy(func() ([]byte, error) {
				return exec.Command("dmsetup", "remove", "--uuid", a.Target).CombinedOutput()
			})
		case "loop":
			err = retryBusy(func() ([]byte, error) { return exec.Command("losetup", "-d", a.Target).CombinedOutput() })
		case "umount":
			err = unmount(a.Target)
		case "file", "dir":
			if e := os.Remove(a.Target); e != nil && !errors.Is(e, os.ErrNotExist) {
				err = e
			}
		case "brd":
			err = retryBusy(func() ([]byte, error) { return exec.Command("rmmod", "brd").CombinedOutput() })
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove %s %s: %w", a.Kind, a.Target, err))
		} else {
			if a.Kind == "umount" {
				logf("cryptlab: unmounted %s", a.Target)
			} else {
				logf("cryptlab: removed %s %s", a.Kind, a.Target)
			}
		}
	}
	return errors.Join(errs...)
}

// retryBusy runs a command (f) until it succeeds or says something other
// than busy or in use, for at most retryWhile's 20 s.
func retryBusy(f func() ([]byte, error)) error {
	var out []byte
	err := retryWhile(func() (err error) { out, err = f(); return err }, func(error) bool {
		return bytes.Contains(out, []byte("busy")) || bytes.Contains(out, []byte("in use"))
	})
	if err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// retryWhile calls f until it succeeds or fails in a way busy does not
// call passing, for at most 20 s: a workload killed with the lab may still
// hold a device or a mount for a moment.
func retryWhile(f func() error, busy func(error) bool) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func readState(path string) (labState, error) {
	var st labState
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, err
	}
	if !validID(st.ID) || filepath.Base(path) != "lab-"+st.ID+".json" {
		return st, fmt.Errorf("lab id %q is not the 6 hex digits of %s", st.ID, filepath.Base(path))
	}
	return st, nil
}

// observeHost reads what recovery decides on: the block devices, brd's
// parameters and the mount tables.
func observeHost(sys, proc string) (hostView, error) {
	devs, err := observe(sys)
	if err != nil {
		return hostView{}, err
	}
	h := hostView{Devs: devs, Brd: readBrdParams(sys)}
	h.Mounted, h.MountPoints, h.MountErr = mountedDevices(proc)
	return h, nil
}

// observe lists block devices with what the ownership checks need.
func observe(sys string) ([]Observed, error) {
	dir := filepath.Join(sys, "block")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []Observed
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "dm-") && !strings.HasPrefix(n, "loop") && !strings.HasPrefix(n, "ram") {
			continue
		}
		o := Observed{Name: n}
		o.Dev = readTrim(filepath.Join(dir, n, "dev"))
		o.DMName = readTrim(filepath.Join(dir, n, "dm", "name"))
		o.DMUUID = readTrim(filepath.Join(dir, n, "dm", "uuid"))
		o.Backing = readTrim(filepath.Join(dir, n, "loop", "backing_file"))
		hs, err := os.ReadDir(filepath.Join(dir, n, "holders"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("list the holders of %s: %w", n, err)
		}
		for _, hd := range hs {
			o.Holders = append(o.Holders, hd.Name())
		}
		out = append(out, o)
	}
	return out, nil
}

// mountedDevices returns the device number of every mount in this
// process's mount table and PID 1's (the host's, when the lab runs in
// another mount namespace). PID 1's table may be absent, as in a test tree.
// Both are read with collect/storage's mountinfo reader; a line that does
// not parse fails the check, as the lab must not guess a device is free.
func mountedDevices(proc string) ([]string, map[string]string, error) {
	var out []string
	points := map[string]string{}
	for _, pid := range []string{"self", "1"} {
		mounts, lineErrs, err := storage.ReadMountInfo(filepath.Join(proc, pid, "mountinfo"))
		if pid == "1" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && len(lineErrs) > 0 {
			err = fmt.Errorf("%s: %w", filepath.Join(proc, pid, "mountinfo"), lineErrs[0])
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read mount tables: %w", err)
		}
		for _, m := range mounts {
			out = append(out, m.MajorMinor)
			if pid == "self" {
				points[m.MountPoint] = m.MajorMinor
			}
		}
	}
	return out, points, nil
}

// readBrdParams returns brd's module parameters, nil when brd is not loaded.
func readBrdParams(sys string) map[string]string {
	dir := filepath.Join(sys, "module", "brd")
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	p := map[string]string{}
	for _, k := range []string{"rd_nr", "rd_size"} {
		p[k] = readTrim(filepath.Join(dir, "parameters", k))
	}
	return p
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func devNumber(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), nil
}

func waitFor(ok func() bool) error {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return nil
		}
	}
	return errors.New("timed out")
}
