package collect

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestCollectRunsTheRegistry: every registered collector runs once, in
// the registry's order, and says how it fared; the cipher runs only when
// it is to measure (a figure given is taken as is, off takes none).
func TestCollectRunsTheRegistry(t *testing.T) {
	if got, want := Names(), []string{"host", "storage", "cipher", "cloud", "engine", "net"}; !slices.Equal(got, want) {
		t.Fatalf("registry %v, want %v", got, want)
	}
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		cipher Cipher
		runs   []string
		given  bool
	}{
		{"measure", Cipher{}, []string{"host", "storage", "cipher", "cloud", "engine", "net"}, false},
		{"given", Cipher{BytesPerSec: 2.5e9, What: "given in the test"}, []string{"host", "storage", "cloud", "engine", "net"}, true},
		{"off", Cipher{Off: true}, []string{"host", "storage", "cloud", "engine", "net"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := hostfs.New(t.TempDir()).WithLiveSources(hostfs.LiveOff)
			s, runs := Collect(context.Background(), Options{FS: fs, LiveSources: hostfs.LiveOff, Version: "test",
				Cloud: cloud.Options{Cloud: "none"}, Cipher: tc.cipher, Now: func() time.Time { return at }})
			var names []string
			for _, r := range runs {
				names = append(names, r.Name)
			}
			if !slices.Equal(names, tc.runs) {
				t.Errorf("runs %v, want %v", names, tc.runs)
			}
			if s.Manifest.FormatVersion != snapshot.FormatVersion || s.Manifest.Tool != "slowpath test" || !s.Manifest.CollectedAt.Equal(at) {
				t.Errorf("manifest %+v", s.Manifest)
			}
			if s.Manifest.LiveSources == nil || s.Manifest.LiveSources.Used || s.Manifest.LiveSources.Reason == "" {
				t.Errorf("live sources %+v: off, with why", s.Manifest.LiveSources)
			}
			given := s.Host != nil && s.Host.Cipher != nil && s.Host.Cipher.Method == "given" && s.Host.Cipher.BytesPerSecPerCore == 2.5e9
			if given != tc.given {
				t.Errorf("cipher %+v, given %v", s.Host, tc.given)
			}
		})
	}
}
