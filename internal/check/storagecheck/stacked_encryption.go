package storagecheck

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/quote"
)

// stacked-encryption: every block of the path is encrypted more than once.
// Each layer costs CPU (kernel-cpu) or latency (host, drive); only one adds
// protection against the threat it was chosen for. The search-engine
// incident behind this tool: on Azure VMs whose local storage was already
// encrypted in hardware, encryption at host encrypted it again, and index
// loads averaged 400 ms where more than 10 ms counts as slow on the same
// engine's AWS and bare-metal hosts
// (https://www.algolia.com/blog/engineering/unintended-double-encryption).
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
			out = append(out, stackedFinding(in, p, subject, required))
		case p.EncryptionLayers+p.UnknownEncryptionLayers >= 2:
			// Known layers plus layers that cannot be seen from inside
			// could make two: unknown, never pass.
			out = append(out, possibleStackFinding(p, subject))
		default:
			out = append(out, check.Finding{Status: check.Pass, Subject: subject, Summary: layerCount(p)})
		}
	}
	return out
}

func layerEvidence(l storagemodel.Layer) check.Evidence {
	e := check.Evidence{Observed: "encrypts on " + l.EncryptedBy}
	switch l.Kind {
	case storagemodel.LayerDMCrypt:
		e.Source, e.Key = "dm table "+l.Name, "crypt"
		if l.Crypt != nil {
			e.Observed = fmt.Sprintf("%s, %d-bit key, %s", l.Crypt.CipherSpec, l.Crypt.KeyBits, e.Observed)
		}
	case storagemodel.LayerFscrypt:
		e.Source, e.Key = "FS_IOC_GET_ENCRYPTION_POLICY_EX", "contents mode"
		e.Observed = l.Name + ", " + e.Observed
	case storagemodel.LayerCloud:
		e.Source, e.Key = "cloud fact "+l.Cloud.Fact, l.Cloud.Provider+" "+l.Cloud.Role
		if strings.HasPrefix(l.Cloud.Fact, "azure-eah") {
			e.Source, e.Key = "IMDS compute.securityProfile", "encryptionAtHost"
			e.Observed = "true: " + l.Cloud.Role + " " + e.Observed
		}
	default:
		e.Source = l.Kind + " " + l.Name
	}
	return e
}

func stackedFinding(in *check.Input, p storagemodel.Path, subject string, required bool) check.Finding {
	chain := p.EncryptionChain()
	var where []string
	ev := make([]check.Evidence, 0, len(chain)+1)
	var lastID storagemodel.DiskIdentity
	lastLayer := 0
	for _, l := range chain {
		where = append(where, layerWhere(l))
		lastLayer = len(ev)
		ev = append(ev, layerEvidences(l)...)
		if e, ok := identityEvidence(l, &lastID); ok {
			ev = append(ev, e)
		}
	}
	ev[lastLayer].Expected = "one encryption layer per path"
	cost := stackCost(chain)
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
	f.References = append(f.References, engineRefs(chain)...)
	f.Remediation = stackedRemediation(chain, subject)
	if platformOf(in) == check.PlatformBottlerocket && len(serviceLayers(chain)) == 0 {
		if k := kernelLayers(chain); len(k) > 0 && len(k) < len(chain) {
			f.Remediation = reflow(bottlerocketStack(k, subject), 72)
			f.References = append(f.References, refBottlerocketStorage, refBottlerocketEph)
		}
	}
	f.Fix = stackedFix(chain)
	if required {
		f.Severity = check.Info
		f.Summary = "Required by policy (required_stacks): " + f.Summary
	}
	return f
}

// identityEvidence says how a cloud disk was recognised (the cloud's own
// rule and the sysfs values it matched), once per disk.
func identityEvidence(l storagemodel.Layer, last *storagemodel.DiskIdentity) (check.Evidence, bool) {
	if l.Cloud == nil || l.Cloud.Identity == nil || *l.Cloud.Identity == *last {
		return check.Evidence{}, false
	}
	*last = *l.Cloud.Identity
	return check.Evidence{Source: "sysfs, rule " + last.Rule, Key: last.Role, Observed: last.Evidence}, true
}

// stackCost says what the layers of a stack cost, by where they run.
func stackCost(chain []storagemodel.Layer) string {
	k := 0
	for _, l := range chain {
		if l.EncryptedBy == storagemodel.ByKernelCPU {
			k++
		}
	}
	s := "Every block is encrypted and decrypted once per layer."
	if svc := len(serviceLayers(chain)); svc > 0 {
		return s + serviceCost(k, len(chain)-svc-k)
	}
	switch {
	case k == len(chain):
		s += fmt.Sprintf(" All %d run on this machine's CPUs: each costs CPU time and dm-crypt queueing "+
			"on every read and write.", k)
	case k == 1 && len(chain) == 2:
		s += " One runs on this machine's CPUs (CPU time and dm-crypt queueing on every I/O); " +
			"the other adds latency on the host or drive."
	case k > 0:
		s += fmt.Sprintf(" %d run on this machine's CPUs (CPU time and dm-crypt queueing on every I/O); "+
			"the other %d add latency on the host or drive.", k, len(chain)-k)
	default:
		s += " The layers run outside this machine and add latency on every I/O."
	}
	return s + " One layer protects against a given threat; more only add cost."
}

// stackedRemediation suggests removing the layer that costs most and adds
// least: a kernel-cpu layer over a platform layer that already encrypts.
func stackedRemediation(chain []storagemodel.Layer, subject string) string {
	var kernel, platform []storagemodel.Layer
	for _, l := range chain {
		if l.EncryptedBy == storagemodel.ByKernelCPU {
			kernel = append(kernel, l)
		} else {
			platform = append(platform, l)
		}
	}
	if len(serviceLayers(chain)) > 0 {
		return engineRemediation(chain, subject)
	}
	var b strings.Builder
	switch {
	case len(platform) > 0 && len(kernel) > 0:
		fmt.Fprintf(&b, "The platform already encrypts this storage (%s).\n", platform[0].Name)
		fmt.Fprintf(&b, "If the in-guest layer is not required (e.g. for customer-held keys),\n")
		fmt.Fprintf(&b, "move the data to a plain filesystem and remove %s %s.\n", kernel[0].Kind, kernel[0].Name)
		if platform[0].Cloud != nil && platform[0].Cloud.Fact != "" && strings.HasPrefix(platform[0].Cloud.Fact, "azure-eah") {
			fmt.Fprintf(&b, "Or, if the in-guest layer is required, deallocate the VM and turn\n")
			fmt.Fprintf(&b, "encryption at host off:\n")
			fmt.Fprintf(&b, "  az vm update -g RG -n VM --set securityProfile.encryptionAtHost=false")
		} else {
			fmt.Fprintf(&b, "If the in-guest layer is required, mark it so in the config:\n  {\"required_stacks\": [%q]}", subject)
		}
	case len(kernel) >= 2:
		fmt.Fprintf(&b, "Keep one in-guest layer: copy the data off, remove %s %s\n", kernel[0].Kind, kernel[0].Name)
		fmt.Fprintf(&b, "(the upper one) and restore onto the remaining encrypted device.\n")
		fmt.Fprintf(&b, "If the stack is required, mark it so in the config:\n  {\"required_stacks\": [%q]}", subject)
	case hasFact(platform, "azure-eah") && hasFact(platform, "azure-v5-local-hardware"):
		// The incident: the drive's encryption cannot be turned off,
		// encryption at host can.
		fmt.Fprintf(&b, "The local disk already encrypts in hardware; encryption at host encrypts\n")
		fmt.Fprintf(&b, "it again on the host. Unless policy requires host-held keys, deallocate\n")
		fmt.Fprintf(&b, "the VM and turn encryption at host off:\n")
		fmt.Fprintf(&b, "  az vm deallocate -g RG -n VM\n")
		fmt.Fprintf(&b, "  az vm update -g RG -n VM --set securityProfile.encryptionAtHost=false\n")
		fmt.Fprintf(&b, "If both are required, mark it so in the config:\n  {\"required_stacks\": [%q]}", subject)
	default:
		fmt.Fprintf(&b, "Both layers are outside this VM; choose one at the platform.\n")
		fmt.Fprintf(&b, "If both are required, mark it so in the config:\n  {\"required_stacks\": [%q]}", subject)
	}
	return b.String()
}

func possibleStackFinding(p storagemodel.Path, subject string) check.Finding {
	var ev []check.Evidence
	var refs []string
	remediation := "Find out from the platform whether the layer below encrypts; if it does\n" +
		"and the in-guest layer is not required, remove one of them."
	var unread []storagemodel.Layer
	for _, l := range p.Layers {
		if l.Encrypted {
			ev = append(ev, layerEvidences(l)...)
		}
		if !l.EncryptionUnknown {
			continue
		}
		if l.Kind == storagemodel.LayerUserspace {
			ev = append(ev, check.Evidence{Source: "storage model", Key: l.Kind, Observed: l.Name + ": " + l.Note, Expected: "known"})
			remediation = "The target's encryption is not visible from this node:\n" +
				"storage.userspace-encryption says how to read it from the cluster\n" +
				"(StorageClass, volume, engine). If it encrypts and the in-guest layer\n" +
				"is not required, drop one of them; if both are required, list the path\n" +
				"in required_stacks."
			continue
		}
		if l.Cloud == nil {
			// A dm layer whose table was not read: it is in this machine,
			// and reading its table as root says whether it encrypts. The
			// layer's note says why it was not read.
			unread = append(unread, l)
			ev = append(ev, check.Evidence{Source: "dm table " + l.Name, Key: "crypt", Observed: l.Note,
				Expected: "a table read as root, to tell whether it encrypts"})
			continue
		}
		e := check.Evidence{Source: l.Kind + " " + l.Name, Key: "encryption", Observed: "not visible from inside this machine", Expected: "known"}
		if l.Cloud != nil {
			e.Source, e.Key = "cloud fact "+l.Cloud.Fact, l.Cloud.Provider+" "+l.Cloud.Role
			refs = append(refs, l.Cloud.Source)
			if id := l.Cloud.Identity; id != nil && id.Role == storagemodel.RoleUnidentified {
				e.Key, e.Observed, e.Expected = "identity", id.Evidence, "temp disk or managed disk, by Azure's udev rules"
				refs = append(refs, id.Source)
				dev := "sdX"
				for _, d := range p.Layers {
					if d.Kind == storagemodel.LayerDisk && d.Depth < l.Depth {
						dev = d.Device
					}
				}
				remediation = "Tell the temp disk from managed disks as Azure's udev rules do,\n" +
					"by the VMBus device_id above the disk: {00000000-0001-...} is the\n" +
					"temp (resource) disk; on Gen2 VMs {f8b3781a-...} with LUN 1 is:\n" +
					"  cat /sys/class/block/" + dev + "/device/../../../device_id\n" +
					"  ls -l /sys/class/block/" + dev + "/device\n" +
					"  ls -l /dev/disk/azure/   (WALinuxAgent, azure-vm-utils)\n" +
					"Collecting again with this slowpath version records it."
			}
			if l.Cloud.Fact == "aws-ebs" {
				remediation = "Check whether the EBS volume is encrypted:\n" +
					"  aws ec2 describe-volumes \\\n" +
					"    --filters Name=attachment.instance-id,Values=INSTANCE_ID \\\n" +
					"    --query 'Volumes[].[VolumeId,Encrypted,KmsKeyId]'\n" +
					"If it is and the in-guest layer is not required, drop one of the two;\n" +
					"if both are required, list the path in required_stacks."
			}
		}
		ev = append(ev, e)
	}
	if len(unread) > 0 {
		remediation = unreadRemediation(unread, len(unread) < p.UnknownEncryptionLayers, remediation)
	}
	return check.Finding{
		Status:      check.Unknown,
		Severity:    check.Info,
		Subject:     subject,
		Summary:     possibleStackSummary(p, subject, unread),
		Evidence:    ev,
		Remediation: remediation,
		References:  append(refs, refDMCrypt),
	}
}

// unreadRemediation asks for the unread dm tables first: reading them is
// free and may settle the question; other tells what to do about unknown
// layers outside the machine, when there are some too.
func unreadRemediation(unread []storagemodel.Layer, alsoOutside bool, other string) string {
	var b strings.Builder
	b.WriteString("Read the device-mapper table as root: `slowpath doctor` run as root\n" +
		"says whether the layer encrypts, or look for a crypt target in\n")
	for _, l := range unread {
		fmt.Fprintf(&b, "  dmsetup table %s\n", quote.Shell(l.Name))
	}
	b.WriteString("If it encrypts and one layer is not required, remove one of them;\n" +
		"if both are required, list the path in required_stacks.")
	if alsoOutside {
		b.WriteString("\n" + other)
	}
	return b.String()
}

func possibleStackSummary(p storagemodel.Path, subject string, unread []storagemodel.Layer) string {
	if p.EncryptionLayers == 1 && p.UnknownEncryptionLayers == 1 && len(unread) == 1 {
		l := unread[0]
		known := "1 known encryption layer"
		if chain := p.EncryptionChain(); len(chain) > 0 {
			known += " (" + chain[0].EncryptedBy + ")"
		}
		s := fmt.Sprintf("%s has %s and dm %s, whose device-mapper table could not be read", subject, known, l.Name)
		if l.InferredCrypt != nil {
			return s + fmt.Sprintf("; its uuid names a cryptsetup %s mapping, so it most likely encrypts too, "+
				"and then every block is encrypted twice.", l.InferredCrypt.Type)
		}
		return s + "; if it encrypts too, every block is encrypted twice."
	}
	if p.EncryptionLayers == 1 && p.UnknownEncryptionLayers == 1 {
		return fmt.Sprintf("%s has 1 encryption layer in this machine and 1 below it whose encryption cannot be seen from inside; "+
			"if that one encrypts too, every block is encrypted twice.", subject)
	}
	if len(unread) > 0 {
		return fmt.Sprintf("%s has %d known encryption layer(s) and %d whose encryption is unknown (%d with a device-mapper table "+
			"that could not be read); if they encrypt, every block is encrypted %d times.", subject, p.EncryptionLayers,
			p.UnknownEncryptionLayers, len(unread), p.EncryptionLayers+p.UnknownEncryptionLayers)
	}
	return fmt.Sprintf("%s has %d known encryption layer(s) and %d whose encryption or identity cannot be seen from inside; "+
		"if they encrypt, every block is encrypted %d times.", subject, p.EncryptionLayers, p.UnknownEncryptionLayers,
		p.EncryptionLayers+p.UnknownEncryptionLayers)
}

// hasFact reports whether a layer's cloud fact id starts with prefix.
func hasFact(layers []storagemodel.Layer, prefix string) bool {
	for _, l := range layers {
		if l.Cloud != nil && strings.HasPrefix(l.Cloud.Fact, prefix) {
			return true
		}
	}
	return false
}

// layerCount says how many layers encrypt; a layer that cannot be seen
// from inside is counted apart, so a path over one never reads as
// unencrypted.
func layerCount(p storagemodel.Path) string {
	s := fmt.Sprintf("%d encryption layer(s)", p.EncryptionLayers)
	if p.UnknownEncryptionLayers == 0 {
		return s
	}
	var what []string
	for _, l := range p.Layers {
		if l.EncryptionUnknown {
			what = append(what, l.Name)
		}
	}
	return fmt.Sprintf("%d known encryption layer(s) and %d whose encryption cannot be seen from inside (%s)",
		p.EncryptionLayers, p.UnknownEncryptionLayers, strings.Join(what, ", "))
}

// kernelLayers are the layers of chain that encrypt on this machine's CPUs.
func kernelLayers(chain []storagemodel.Layer) []storagemodel.Layer {
	return encryptedBy(chain, storagemodel.ByKernelCPU)
}

// serviceLayers are the layers of chain that encrypt in a service's own
// threads (a database engine's encryption of its files).
func serviceLayers(chain []storagemodel.Layer) []storagemodel.Layer {
	return encryptedBy(chain, storagemodel.ByServiceCPU)
}

// encryptedBy are the layers of chain whose encryption runs where by says.
func encryptedBy(chain []storagemodel.Layer, by string) []storagemodel.Layer {
	var out []storagemodel.Layer
	for _, l := range chain {
		if l.EncryptedBy == by {
			out = append(out, l)
		}
	}
	return out
}

// serviceCost is stackCost's sentence for a stack with an engine layer
// (one per path: the model makes the engines on a filesystem one layer),
// kernel layers in the kernel on this machine's CPUs, the rest outside.
func serviceCost(kernel, rest int) string {
	s := " The engine's layer runs in the database's own threads on this machine's CPUs: CPU time the service pays " +
		"on every page it writes or reads from disk, which no dm-crypt flag removes."
	switch {
	case kernel == 1:
		s += " One more runs in the kernel on the same CPUs (CPU time and dm-crypt queueing on every I/O)."
	case kernel > 1:
		s += fmt.Sprintf(" %d more run in the kernel on the same CPUs (CPU time and dm-crypt queueing on every I/O).", kernel)
	}
	switch {
	case rest == 1:
		s += " One adds latency on the host or drive."
	case rest > 1:
		s += fmt.Sprintf(" %d add latency on the host or drive.", rest)
	}
	return s + " Each layer protects against its own threat; against one threat, one layer is enough."
}
