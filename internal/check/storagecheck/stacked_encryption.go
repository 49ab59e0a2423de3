package storagecheck

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storage"
)

// stacked-encryption: every block of the path is encrypted more than once.
// Each layer costs CPU (kernel-cpu) or latency (host, drive); only one adds
// protection against the threat it was chosen for. The search-engine
// incident behind this tool: hardware-encrypted temp disks plus Azure
// encryption at host made index loads 40x slower, unseen for months.
func init() {
	check.Register(check.Check{
		ID:       "storage.stacked-encryption",
		Title:    "Two or more encryption layers on one storage path",
		Severity: check.Warning,
		Run:      runStackedEncryption,
	})
}

func runStackedEncryption(in *check.Input) []check.Finding {
	if in.Storage == nil {
		return []check.Finding{{Status: check.Unknown, Severity: check.Info, Subject: "storage",
			Summary: "no storage model: the snapshot has no storage section, so encryption layers cannot be counted"}}
	}
	var out []check.Finding
	for _, p := range in.Storage.Paths {
		subject := p.Subject()
		required := in.Config.IsRequiredStack(subject) || (p.Device != "" && in.Config.IsRequiredStack(p.Device))
		switch {
		case p.EncryptionLayers >= 2:
			out = append(out, stackedFinding(p, subject, required))
		case p.EncryptionLayers == 1 && p.UnknownEncryptionLayers > 0:
			out = append(out, possibleStackFinding(p, subject))
		default:
			out = append(out, check.Finding{Status: check.Pass, Subject: subject,
				Summary: fmt.Sprintf("%d encryption layer(s)", p.EncryptionLayers)})
		}
	}
	return out
}

func layerEvidence(l storage.Layer) check.Evidence {
	e := check.Evidence{Observed: fmt.Sprintf("%s %s encrypts on %s", l.Kind, l.Name, l.EncryptedBy)}
	switch l.Kind {
	case storage.LayerDMCrypt:
		e.Source, e.Key = "dm table "+l.Name, "crypt"
		if l.Crypt != nil {
			e.Observed += fmt.Sprintf(" (%s, %d-bit key)", l.Crypt.CipherSpec, l.Crypt.KeyBits)
		}
	case storage.LayerFscrypt:
		e.Source, e.Key = "FS_IOC_GET_ENCRYPTION_POLICY_EX", "contents mode"
	case storage.LayerCloud:
		e.Source, e.Key = l.Cloud.Source, l.Cloud.Fact
		if l.Cloud.Provider == "azure" {
			e.Key += " (IMDS securityProfile.encryptionAtHost)"
		}
		if l.Cloud.Algorithm != "" {
			e.Observed += " (" + l.Cloud.Algorithm + ")"
		}
	default:
		e.Source = l.Kind + " " + l.Name
	}
	return e
}

func stackedFinding(p storage.Path, subject string, required bool) check.Finding {
	chain := p.EncryptionChain()
	var where []string
	ev := make([]check.Evidence, 0, len(chain)+1)
	for _, l := range chain {
		where = append(where, l.Kind+" ("+l.EncryptedBy+")")
		ev = append(ev, layerEvidence(l))
	}
	ev[len(ev)-1].Expected = "one encryption layer per path"
	cost := "Every block is encrypted and decrypted once per layer: the kernel-cpu layers cost CPU time " +
		"and queueing on this VM, host and drive layers add latency; only one layer is needed against a given threat."
	f := check.Finding{
		Subject:    subject,
		Summary:    fmt.Sprintf("%d encryption layers on %s: %s. %s", p.EncryptionLayers, subject, strings.Join(where, " over "), cost),
		Evidence:   ev,
		References: []string{refDMCrypt},
	}
	for _, l := range chain {
		if l.Cloud != nil {
			f.References = append(f.References, l.Cloud.Source)
		}
	}
	f.Remediation = stackedRemediation(chain, subject)
	if required {
		f.Severity = check.Info
		f.Summary = "Required by policy (required_stacks): " + f.Summary
	}
	return f
}

// stackedRemediation suggests removing the layer that costs most and adds
// least: a kernel-cpu layer over a platform layer that already encrypts.
func stackedRemediation(chain []storage.Layer, subject string) string {
	var kernel, platform []storage.Layer
	for _, l := range chain {
		if l.EncryptedBy == storage.ByKernelCPU {
			kernel = append(kernel, l)
		} else {
			platform = append(platform, l)
		}
	}
	var b strings.Builder
	switch {
	case len(platform) > 0 && len(kernel) > 0:
		fmt.Fprintf(&b, "The platform already encrypts this storage (%s).\n", platform[0].Name)
		fmt.Fprintf(&b, "If the in-guest layer is not required (e.g. customer-held keys), move the data\n")
		fmt.Fprintf(&b, "to a plain filesystem on the same device and remove %s %s.\n", kernel[0].Kind, kernel[0].Name)
		if platform[0].Cloud != nil && platform[0].Cloud.Fact != "" && strings.HasPrefix(platform[0].Cloud.Fact, "azure-eah") {
			fmt.Fprintf(&b, "Or, if the in-guest layer is required, turn encryption at host off for this VM:\n")
			fmt.Fprintf(&b, "  az vm update -g RG -n VM --set securityProfile.encryptionAtHost=false (VM deallocated)")
		} else {
			fmt.Fprintf(&b, "If the in-guest layer is required, mark it so: {\"required_stacks\": [%q]}", subject)
		}
	case len(kernel) >= 2:
		fmt.Fprintf(&b, "Keep one in-guest layer: copy the data off, remove %s %s (the upper one),\n", kernel[0].Kind, kernel[0].Name)
		fmt.Fprintf(&b, "and restore onto the remaining encrypted device.\n")
		fmt.Fprintf(&b, "If both are required, mark it so: {\"required_stacks\": [%q]}", subject)
	default:
		fmt.Fprintf(&b, "Both layers are outside this VM; choose one at the platform.\n")
		fmt.Fprintf(&b, "If both are required, mark it so: {\"required_stacks\": [%q]}", subject)
	}
	return b.String()
}

func possibleStackFinding(p storage.Path, subject string) check.Finding {
	var ev []check.Evidence
	var note string
	for _, l := range p.Layers {
		if l.Encrypted {
			ev = append(ev, layerEvidence(l))
		}
		if l.EncryptionUnknown {
			e := check.Evidence{Source: l.Name, Key: "encryption", Observed: "cannot be seen from inside this machine", Expected: "known"}
			if l.Cloud != nil {
				e.Source, e.Key = l.Cloud.Source, l.Cloud.Fact
			}
			ev = append(ev, e)
			note = l.Note
		}
	}
	return check.Finding{
		Status:   check.Unknown,
		Severity: check.Info,
		Subject:  subject,
		Summary: fmt.Sprintf("%s has 1 encryption layer in this machine and %d below it whose encryption cannot be seen from inside; "+
			"if that one encrypts too, every block is encrypted twice.", subject, p.UnknownEncryptionLayers),
		Evidence:    ev,
		Remediation: note,
		References:  []string{refDMCrypt},
	}
}
