package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func cryptStorage() *snapshot.Storage {
	return &snapshot.Storage{BlockDevices: []snapshot.BlockDevice{
		{Name: "nvme1n1", Kind: snapshot.KindDisk},
		{Name: "dm-0", Kind: snapshot.KindDM, DM: &snapshot.DM{Name: "scratch",
			Targets: []snapshot.DMTarget{{Type: "crypt", Params: "aes-xts-plain64 redacted:512 0 259:4 32768"}}}},
	}}
}

// TestCollectCipherLive measures for real on this host (AF_ALG where the
// kernel has it, else the labelled user-space bound) when the storage has a
// crypt target.
func TestCollectCipherLive(t *testing.T) {
	fs := hostfs.Default().WithLiveSources(hostfs.LiveAuto)
	if err := fs.NotLive(); err != nil {
		t.Fatalf("this host's own roots not live: %v", err)
	}
	s := &snapshot.Snapshot{Host: &snapshot.Host{}, Storage: cryptStorage()}
	CollectCipher(context.Background(), fs, s, nil)
	c := s.Host.Cipher
	if c == nil {
		t.Fatalf("no cipher figure; errors %+v", s.Manifest.Errors)
	}
	t.Logf("%+v", *c)
	if !(c.BytesPerSecPerCore > 0) || c.Algorithm != "xts(aes)" || c.What == "" || c.Why != "dm crypt target scratch (dm-0)" {
		t.Errorf("figure %+v", *c)
	}
	if c.Method != cipherlimit.MethodAFALG && !strings.Contains(c.What, "user-space bound") {
		t.Errorf("user-space figure not labelled: %+v", *c)
	}
	if c.DurationMS < CipherDuration.Milliseconds() {
		t.Errorf("duration %d ms, shorter than the measurement (%v)", c.DurationMS, CipherDuration)
	}
	if len(s.Manifest.Errors) > 0 {
		t.Errorf("errors: %+v", s.Manifest.Errors)
	}
}

// TestCollectCipherWhen: no measurement without something that encrypts
// on this CPU, none for a foreign tree (live-only), and a failed
// measurement is an error in the manifest, not a figure.
func TestCollectCipherWhen(t *testing.T) {
	calls := 0
	fake := func(context.Context, hostfs.FS, cipherlimit.Options) (*cipherlimit.Result, error) {
		calls++
		return nil, errors.New("AF_ALG bind skcipher xts(aes): no such file")
	}
	live := hostfs.Default().WithLiveSources(hostfs.LiveAuto)
	foreign := hostfs.New(t.TempDir()).WithLiveSources(hostfs.LiveAuto)

	plain := &snapshot.Snapshot{Host: &snapshot.Host{}, Storage: &snapshot.Storage{BlockDevices: []snapshot.BlockDevice{
		{Name: "dm-1", Kind: snapshot.KindDM, DM: &snapshot.DM{Name: "vg-root", Targets: []snapshot.DMTarget{{Type: "linear"}}}}}}}
	CollectCipher(context.Background(), live, plain, fake)
	if calls != 0 || plain.Host.Cipher != nil || len(plain.Manifest.Errors) != 0 {
		t.Errorf("plain storage: %d measurements, %+v, errors %+v", calls, plain.Host.Cipher, plain.Manifest.Errors)
	}

	other := &snapshot.Snapshot{Host: &snapshot.Host{}, Storage: cryptStorage()}
	CollectCipher(context.Background(), foreign, other, fake)
	if calls != 0 || other.Host.Cipher != nil {
		t.Errorf("foreign root measured: %d calls, %+v", calls, other.Host.Cipher)
	}
	if len(other.Manifest.Errors) != 1 || other.Manifest.Errors[0].Kind != hostfs.KindSkipped ||
		!strings.Contains(other.Manifest.Errors[0].Message, "scratch") {
		t.Errorf("foreign root: errors %+v, want one skipped naming the crypt device", other.Manifest.Errors)
	}

	fscrypt := &snapshot.Snapshot{Host: &snapshot.Host{}, Storage: &snapshot.Storage{Mounts: []snapshot.Mount{
		{MountPoint: "/home", Fscrypt: &snapshot.Fscrypt{Version: 2, ContentsMode: "AES-256-XTS"}}}}}
	CollectCipher(context.Background(), live, fscrypt, fake)
	if calls != 1 || fscrypt.Host.Cipher != nil || len(fscrypt.Manifest.Errors) != 1 ||
		!strings.Contains(fscrypt.Manifest.Errors[0].Message, "fscrypt on /home") {
		t.Errorf("failed measurement: %d calls, %+v, errors %+v", calls, fscrypt.Host.Cipher, fscrypt.Manifest.Errors)
	}

	unread := &snapshot.Snapshot{Host: &snapshot.Host{}, Storage: &snapshot.Storage{BlockDevices: []snapshot.BlockDevice{
		{Name: "dm-2", Kind: snapshot.KindDM, DM: &snapshot.DM{Name: "data", UUID: "CRYPT-LUKS2-0123-data", TableNotRead: "permission denied"}}}}}
	if got := cipherUser(unread.Storage); !strings.Contains(got, "CRYPT-LUKS2") {
		t.Errorf("crypt device with an unread table not recognised: %q", got)
	}
}
