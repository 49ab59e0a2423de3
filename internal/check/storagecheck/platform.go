package storagecheck

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// References for the platform texts.
const (
	refBottlerocketStorage = "https://github.com/bottlerocket-os/bottlerocket-core-kit/blob/develop/docs/ENCRYPTED_STORAGE.md"
	refBottlerocketEph     = "https://bottlerocket.dev/en/os/1.22.x/concepts/bootstrap-commands/"
	refTalosEncryption     = "https://www.talos.dev/v1.12/talos-guides/configuration/disk-encryption/"
	refButaneLUKS          = "https://coreos.github.io/butane/upgrading-fcos/"
)

// platformOf names the host's platform (check.PlatformOf).
func platformOf(in *check.Input) check.Platform { return check.PlatformOf(in.Snapshot) }

func osName(in *check.Input) string {
	o := in.Snapshot.Host.OS
	if o.PrettyName != "" {
		return o.PrettyName
	}
	return o.ID + " " + o.VersionID
}

// platformWorkqueue is the platform's own way to set the workqueue flags
// on l, prepended to the generic remediation; "" on other hosts.
func platformWorkqueue(in *check.Input, l storagemodel.Layer, missing []string) (string, []string) {
	switch platformOf(in) {
	case check.PlatformTalos:
		return reflow(talosWorkqueue(in, l, missing), 72), []string{refTalosEncryption}
	case check.PlatformBottlerocket:
		return reflow(bottlerocketWorkqueue(in, l), 72), []string{refBottlerocketStorage}
	case check.PlatformCoreOS:
		var b strings.Builder
		fmt.Fprintf(&b, "%s: Ignition opens LUKS volumes it creates; for nodes provisioned from now on, add the flags\n", osName(in))
		b.WriteString("to the volume in the Butane config (fcos 1.5.0+, flatcar 1.1.0+; Ignition writes them with --persistent):\n")
		for _, line := range strings.Split(strings.TrimSuffix(butaneLUKS(l.Name, missing), "\n"), "\n") {
			b.WriteString("  " + line + "\n")
		}
		b.WriteString("For this node, as on any host:")
		return reflow(b.String(), 72), []string{refButaneLUKS}
	}
	return "", nil
}

// talosWorkqueue writes the Talos machine-config snippet: the
// VolumeConfig document from Talos 1.11 on (its encryption options came
// with it), machine.systemDiskEncryption before it. Talos passes the
// options as --perf-* at every open.
func talosWorkqueue(in *check.Input, l storagemodel.Layer, missing []string) string {
	vol := talosVolume(l)
	var b strings.Builder
	fmt.Fprintf(&b, "%s opens %s itself at every boot, with the options of its machine configuration;\n", osName(in), l.Name)
	b.WriteString("add the flags there (talosctl patch machineconfig --nodes NODE --patch @patch.yaml), then reboot:\n")
	if talosAtLeast(in.Snapshot.Host.OS.VersionID, 1, 11) {
		fmt.Fprintf(&b, "  apiVersion: v1alpha1\n  kind: VolumeConfig\n  name: %s\n  encryption:\n    provider: luks2\n    options:\n", yamlString(vol))
		for _, f := range missing {
			fmt.Fprintf(&b, "      - %s\n", f)
		}
		b.WriteString("(keep the keys: of the volume's current encryption section as they are)")
	} else {
		fmt.Fprintf(&b, "  machine:\n    systemDiskEncryption:\n      %s:\n        provider: luks2\n        options:\n", yamlString(strings.ToLower(vol)))
		for _, f := range missing {
			fmt.Fprintf(&b, "          - %s\n", f)
		}
		b.WriteString("(keep the keys: as they are; Talos 1.11 moves this into a VolumeConfig document)")
	}
	return b.String()
}

// talosVolume is the Talos volume behind a mapping: from 1.12 every
// encrypted volume is mapped as luks2-<VOLUME>; before it a system volume
// is <PARTITION>-encrypted (STATE-encrypted, EPHEMERAL-encrypted). Any
// other name is given back as it is, never guessed.
func talosVolume(l storagemodel.Layer) string {
	if v, ok := strings.CutPrefix(l.Name, "luks2-"); ok && v != "" {
		return v
	}
	if v, ok := strings.CutSuffix(l.Name, "-encrypted"); ok && v != "" {
		return strings.ToUpper(v)
	}
	return l.Name
}

// talosAtLeast compares Talos's VERSION_ID, which keeps its leading v
// (v1.12.1); an unreadable one counts as current.
func talosAtLeast(v string, major, minor int) bool {
	f := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(f) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

// bottlerocketWorkqueue: rottweiler formats with no performance flags and
// no Bottlerocket setting passes any (bottlerocket-core-kit rottweiler,
// PRs #717, #721, #999, #1024). Nothing on the node can keep them either:
// bootstrap commands run apiclient only, and cryptsetup refresh
// --persistent must unlock a keyslot with the volume key, which
// Bottlerocket seals in the TPM (there is no passphrase to type). What
// remains is the running boot: a reload of the live table, whose key the
// table itself holds (what slowpath fix --apply does).
func bottlerocketWorkqueue(in *check.Input, l storagemodel.Layer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s formats and opens %s itself (rottweiler, systemd-cryptsetup) with no performance flags,\n", osName(in), l.Name)
	b.WriteString("and no Bottlerocket setting passes them. Nothing on the node can keep them: bootstrap commands run\n" +
		"apiclient only, and cryptsetup refresh --persistent needs the volume key, which Bottlerocket seals in the\n" +
		"TPM (there is no passphrase to type). Ask for a setting upstream (bottlerocket-core-kit). Until then the\n" +
		"flags hold for the running boot only: slowpath fix --apply reloads the live table with them, from a\n" +
		"privileged container or the admin container (sudo sheltie), and they are gone at the next boot.")
	return b.String()
}

// bottlerocketStack explains an EPHEMERAL-DATA layer over storage that
// already encrypts: the image's encrypted-storage feature encrypts
// ephemeral storage whenever `apiclient ephemeral-storage init` runs; no
// setting turns that off, so the choice is the image or the bootstrap
// command.
func bottlerocketStack(kernel []storagemodel.Layer, subject string) string {
	name := kernel[0].Name
	return fmt.Sprintf("On Bottlerocket, %s comes from the image's encrypted-storage feature\n"+
		"(/usr/share/bottlerocket/image-features.env ENCRYPTED_STORAGE=true): apiclient ephemeral-storage init\n"+
		"encrypts the ephemeral disks whenever it runs, and no setting turns that off for one volume.\n"+
		"To keep one layer on instance store, which the platform already encrypts: run a variant built without\n"+
		"encrypted-storage on instance-store nodes, or drop the ephemeral-storage init/bind commands from\n"+
		"settings.bootstrap-commands and keep the data on EBS. If the in-guest layer is required, mark it so:\n"+
		"  {\"required_stacks\": [%q]}", name, subject)
}

// reflow re-wraps the prose of s at width columns, so the text report
// need not break it mid-word; indented lines (YAML, commands) are kept as
// they are, and so are the line breaks around them.
func reflow(s string, width int) string {
	var out, para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		line := ""
		for _, w := range strings.Fields(strings.Join(para, " ")) {
			if line != "" && len(line)+1+len(w) > width {
				out = append(out, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		out = append(out, line)
		para = nil
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, " ") || l == "" {
			flush()
			out = append(out, l)
			continue
		}
		para = append(para, l)
	}
	flush()
	return strings.Join(out, "\n")
}

// butaneLUKS is the Butane fragment that opens the LUKS volume name with
// the flags (storage.luks[].open_options, fcos 1.5.0+ and flatcar 1.1.0+):
// what a CoreOS node provisioned from now on needs, in doctor's remedy and
// in fix's plan (check.CryptChange.Butane) alike.
func butaneLUKS(name string, flags []string) string {
	var b strings.Builder
	b.WriteString("storage:\n  luks:\n    - name: " + yamlString(name) + "\n      open_options:\n")
	for _, f := range flags {
		b.WriteString("        - " + yamlString("--perf-"+f) + "\n")
	}
	return b.String()
}

// yamlString is s as one YAML scalar, quoted where YAML needs it, so a
// name from the snapshot never changes the structure of a snippet.
func yamlString(s string) string {
	b, err := yaml.Marshal(s)
	if err != nil || strings.Count(string(b), "\n") > 1 {
		// A scalar that needs more than one line (a dm name cannot): JSON
		// double quotes are YAML double quotes.
		q, _ := json.Marshal(s)
		return string(q)
	}
	return strings.TrimSuffix(string(b), "\n")
}
