package host

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// cryptoInteresting are substrings of /proc/crypto algorithm names that
// matter for block and file encryption (dm-crypt, fscrypt): block ciphers
// and their modes.
var cryptoInteresting = []string{"aes", "xts", "cbc", "gcm", "essiv", "adiantum", "hctr2", "chacha", "sm4"}

// collectCrypto reads /proc/crypto through procfs and keeps the entries
// that implement disk or file encryption. The driver with the highest
// priority is what the kernel uses; "aes-generic" winning means no
// hardware acceleration. See https://docs.kernel.org/crypto/api-intro.html
// and crypto/proc.c.
func collectCrypto(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	if all, ok := readProc(fs, s, "host.crypto", "crypto", procfs.FS.Crypto); ok {
		h.Crypto = filterCrypto(all)
	}
}

// readProc reads /proc/NAME with procfs's parser read; a failure is an
// error of the snapshot's section, and ok false.
func readProc[T any](fs hostfs.FS, s *snapshot.Snapshot, section, name string, read func(procfs.FS) (T, error)) (v T, ok bool) {
	p := fs.ProcPath(name)
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		s.AddError(section, p, err)
		return v, false
	}
	if v, err = read(pfs); err != nil {
		s.AddError(section, p, fmt.Errorf("read %s: %w", p, err))
		return v, false
	}
	return v, true
}

func filterCrypto(all []procfs.Crypto) []snapshot.CryptoAlg {
	var out []snapshot.CryptoAlg
	for _, c := range all {
		// By name only: drivers such as drbg_nopr_ctr_aes256 (a random
		// number generator) mention aes without doing disk encryption.
		if !interestingCrypto(c.Name) {
			continue
		}
		a := snapshot.CryptoAlg{Name: c.Name, Driver: c.Driver, Module: c.Module, Type: c.Type}
		if c.Priority != nil {
			a.Priority = int(*c.Priority)
		}
		out = append(out, a)
	}
	// Highest priority first within a name: the one the kernel picks.
	slices.SortStableFunc(out, func(a, b snapshot.CryptoAlg) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Driver, b.Driver))
	})
	return out
}

func interestingCrypto(s string) bool {
	s = strings.ToLower(s)
	for _, w := range cryptoInteresting {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
