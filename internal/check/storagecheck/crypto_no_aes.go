package storagecheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// crypto.no-aes-acceleration: an AES cipher in the kernel (dm-crypt or
// fscrypt) on a CPU whose flags show no AES instructions (x86 "aes" =
// AES-NI, arm64 "aes" = ARMv8 Crypto Extensions) runs the generic table
// implementation, many times slower, and on the CPU that also runs the workload.
func init() {
	check.Register(check.Check{
		ID:       "crypto.no-aes-acceleration",
		Title:    "AES encryption without CPU AES instructions",
		Severity: check.Warning,
		Run:      runNoAES,
	})
}

type aesUser struct {
	subject, cipher, source string
}

func aesUsers(m *storagemodel.Model) []aesUser {
	var out []aesUser
	seen := map[string]bool{}
	if m == nil {
		return nil
	}
	uses, _ := cryptUses(m)
	for _, u := range uses {
		if u.layer.Crypt.IsAES() {
			out = append(out, aesUser{u.Subject(), u.layer.Crypt.CipherSpec, "dm table " + u.layer.Name})
			seen[u.Subject()] = true
		}
	}
	for _, p := range m.Paths {
		for _, l := range p.Layers {
			if l.Kind == storagemodel.LayerFscrypt && strings.Contains(strings.ToUpper(l.Name), "AES") && !seen[p.Subject()] {
				out = append(out, aesUser{p.Subject(), "fscrypt " + l.Name, "FS_IOC_GET_ENCRYPTION_POLICY_EX " + p.Subject()})
				seen[p.Subject()] = true
			}
		}
	}
	return out
}

func runNoAES(in *check.Input) []check.Finding {
	users := aesUsers(in.Storage)
	if len(users) == 0 {
		return nil
	}
	var h *snapshot.Host
	if in.Snapshot != nil {
		h = in.Snapshot.Host
	}
	var out []check.Finding
	if h == nil || len(h.CPUFlags) == 0 {
		for _, u := range users {
			out = append(out, check.Finding{Status: check.Unknown, Severity: check.Info, Subject: u.subject,
				Summary: "CPU flags were not collected, so whether " + u.cipher + " runs with AES instructions is unknown"})
		}
		return out
	}
	has := slices.Contains(h.CPUFlags, "aes")
	for _, u := range users {
		if has {
			out = append(out, check.Finding{Status: check.Pass, Subject: u.subject, Summary: "CPU has AES instructions"})
			continue
		}
		ev := []check.Evidence{
			{Source: "/proc/cpuinfo", Key: "flags", Observed: "no aes", Expected: "aes"},
			{Source: u.source, Key: "cipher", Observed: u.cipher},
		}
		if d := aesDriver(h.Crypto); d != "" {
			ev = append(ev, check.Evidence{Source: "/proc/crypto", Key: "highest-priority aes driver", Observed: d})
		}
		out = append(out, check.Finding{
			Subject: u.subject,
			Summary: fmt.Sprintf("%s uses %s but the CPU (%s) reports no AES instructions: the kernel falls back to "+
				"generic software AES, which is many times slower and runs on the workload's CPUs.", u.subject, u.cipher, cpuName(h.CPUModel)),
			Evidence: ev,
			Remediation: "Run on a CPU with AES instructions: pick a VM type that has them and\n" +
				"check that the hypervisor passes the aes flag through (QEMU: -cpu host,\n" +
				"not qemu64).\n" +
				"On CPUs without them, use a cipher built for that case (new format needed):\n" +
				"  cryptsetup luksFormat --cipher xchacha12,aes-adiantum-plain64 DEVICE",
			References: []string{"https://docs.kernel.org/filesystems/fscrypt.html#encryption-modes-and-usage", refDMCrypt},
		})
	}
	return out
}

func cpuName(m string) string {
	if m == "" {
		return "model unknown"
	}
	return m
}

// aesDriver names the highest-priority "aes" cipher implementation.
func aesDriver(algs []snapshot.CryptoAlg) string {
	best, prio := "", -1
	for _, a := range algs {
		if a.Name == "aes" && a.Priority > prio {
			best, prio = a.Driver, a.Priority
		}
	}
	return best
}
