package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// CipherDuration is how long the collector encrypts: long enough for a
// figure within a few per cent run to run, short enough that doctor on a
// host with dm-crypt barely waits (it runs while the network collector
// sleeps between its two counter samples).
const CipherDuration = 150 * time.Millisecond

// CipherCollector names the cipher's errors in the manifest.
const CipherCollector = "host.cipher"

// CipherMeasure measures the cipher; cipherlimit.Measure, or a stand-in in
// tests of what the collector does around it.
type CipherMeasure func(context.Context, hostfs.FS, cipherlimit.Options) (*cipherlimit.Result, error)

// CollectCipher measures one core's AES-XTS throughput into s.Host.Cipher
// when something in the collected storage encrypts on this CPU: a dm crypt
// target or an fscrypt mount root. It reads s.Storage, so it runs after the
// storage collector. It is live-only (internal/hostfs live.go): the figure
// is this CPU's, so it never goes into the snapshot of another root.
func CollectCipher(ctx context.Context, fs hostfs.FS, s *snapshot.Snapshot, measure CipherMeasure) {
	why := cipherUser(s.Storage)
	if why == "" {
		return // nothing encrypts on this CPU: no figure needed, none taken
	}
	const collector, source = CipherCollector, "AF_ALG skcipher xts(aes)"
	if err := fs.NotLive(); err != nil {
		s.AddError(collector, source, fmt.Errorf("cipher not measured for %s: %w", why, err))
		return
	}
	if s.Host == nil {
		s.AddError(collector, source, errors.New("cipher not measured: no host section to record it in"))
		return
	}
	if measure == nil {
		measure = cipherlimit.Measure
	}
	start := time.Now()
	r, err := measure(ctx, fs, cipherlimit.Options{Duration: CipherDuration, PerCoreOnly: true})
	if err != nil {
		s.AddError(collector, source, fmt.Errorf("measure the cipher for %s: %w", why, err))
		return
	}
	c := &snapshot.CipherLimit{
		Algorithm: r.Algorithm, KeyBits: r.KeyBits, SectorSize: r.SectorSize, Method: r.Method,
		BytesPerSecPerCore: r.PerCore, What: r.What, Why: why,
		DurationMS: time.Since(start).Milliseconds(),
	}
	if r.Kernel != nil {
		c.Driver = r.Kernel.Driver
	}
	s.Host.Cipher = c
}

// cipherUser names the first thing in st that encrypts on this CPU: a dm
// device whose table has a crypt target (or, with the table unread, whose
// uuid cryptsetup marked CRYPT-), else an fscrypt mount root; "" for none.
func cipherUser(st *snapshot.Storage) string {
	if st == nil {
		return ""
	}
	for _, d := range st.BlockDevices {
		if d.DM == nil {
			continue
		}
		for _, t := range d.DM.Targets {
			if t.Type == "crypt" {
				return fmt.Sprintf("dm crypt target %s (%s)", d.DM.Name, d.Name)
			}
		}
		if len(d.DM.Targets) == 0 && strings.HasPrefix(d.DM.UUID, "CRYPT-") {
			return fmt.Sprintf("dm device %s (%s), uuid %s", d.DM.Name, d.Name, d.DM.UUID)
		}
	}
	for _, m := range st.Mounts {
		if m.Fscrypt != nil {
			return "fscrypt on " + m.MountPoint
		}
	}
	return ""
}
