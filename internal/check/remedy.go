package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// One renderer for the commands of a structured fix: doctor's remedy and
// fix's plan print the same command for the same change, so a reader who
// saw one in doctor finds it, word for word, in the plan. Every word from
// a snapshot is shell-quoted.

// SysctlCommand sets one sysctl now.
func SysctlCommand(key string, to int64) string {
	return fmt.Sprintf("sysctl -w %s=%d", quote.Shell(key), to)
}

// RingCommand sets an interface's RX ring now.
func RingCommand(iface string, rx uint32) string {
	return fmt.Sprintf("ethtool -G %s rx %d", quote.Shell(iface), rx)
}

// SysctlDropIn is the sysctl.d file that keeps a finding's sysctls.
func SysctlDropIn(id string) string {
	return "/etc/sysctl.d/60-slowpath-" + quote.PathComponent(strings.ReplaceAll(id, ".", "-")) + ".conf"
}

// RefreshCommand is the cryptsetup refresh that sets the flags (and keeps
// the ones already set, which refresh would otherwise drop: it applies
// exactly the flags it is given, cryptsetup-refresh(8)). "--" ends the
// options (popt), so a name that starts with - is still the name.
func RefreshCommand(c *CryptChange, persistent bool) string {
	return quote.Shells(refreshWords(c, persistent)...)
}

func refreshWords(c *CryptChange, persistent bool, extra ...string) []string {
	words := []string{"cryptsetup", "refresh"}
	for _, fl := range append(slices.Clone(c.Add), c.Keep...) {
		if fl == "allow_discards" {
			words = append(words, "--allow-discards")
			continue
		}
		words = append(words, "--perf-"+fl)
	}
	if persistent {
		words = append(words, "--persistent")
	}
	words = append(words, extra...)
	return append(words, "--", c.Name)
}

// SysctlRemedy is doctor's remedy for a fix's sysctls: the runtime
// command of each, then the drop-in that keeps them across reboots (the
// file fix --persist writes, with the same name). Keys that a drop-in
// cannot hold get only the runtime command.
func SysctlRemedy(id string, cs []SysctlChange) string {
	var b strings.Builder
	var lines []string
	for _, c := range cs {
		b.WriteString(SysctlCommand(c.Key, c.To) + "\n")
		if k, err := quote.SysctlKey(c.Key); err == nil {
			lines = append(lines, fmt.Sprintf("%s = %d", k, c.To))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(&b, "printf '%%s\\n' %s > %s\n", quote.Shells(lines...), SysctlDropIn(id))
	}
	return b.String()
}

// OpenersOf reads a LUKS header's ways in: each token with the key slots
// it opens, then the key slots no token opens (a passphrase or a key
// file). nil when the header was not read.
func OpenersOf(h *snapshot.LUKSHeader) []Opener {
	if h == nil || h.Version == 0 {
		return nil
	}
	var out []Opener
	tokened := map[int]bool{}
	for _, t := range h.Tokens {
		out = append(out, Opener{Kind: t.Type, Keyslots: t.Keyslots})
		for _, k := range t.Keyslots {
			tokened[k] = true
		}
	}
	var plain []int
	for _, k := range h.Keyslots {
		if !tokened[k] {
			plain = append(plain, k)
		}
	}
	if len(plain) > 0 {
		out = append(out, Opener{Kind: OpenerPassphrase, Keyslots: plain})
	}
	return out
}

// tokenAsks says what cryptsetup needs to open a volume through a token
// of a type it can use: systemd ships token plugins for its three types
// (libcryptsetup-token-systemd-*.so, systemd 251+), cryptsetup itself
// knows luks2-keyring.
var tokenAsks = map[string]string{
	"systemd-tpm2":   "no passphrase: cryptsetup opens it through its systemd-tpm2 token, with systemd's token plugin (libcryptsetup-token-systemd-tpm2.so, systemd 251+) and this machine's TPM; it fails if the PCRs the key is sealed to have changed since",
	"systemd-fido2":  "its FIDO2 security key, plugged in (cryptsetup asks for the key's PIN through systemd's token plugin, systemd 251+)",
	"systemd-pkcs11": "its smart card or HSM, present (cryptsetup asks for the PIN through systemd's token plugin, systemd 251+)",
	"luks2-keyring":  "the passphrase in the kernel keyring under the description its luks2-keyring token names",
}

// AsksAnything is what a cryptsetup command asks for when nothing says
// how its volume opens (no LUKS header read).
const AsksAnything = "it asks for the passphrase, key file or token, as open does"

// PersistCommand is the command that stores c's flags in its LUKS2
// header, as doctor's remedy and fix's plan both print it, and what it
// asks for (from the header's key slots and tokens, when read). cmd is ""
// when no way into the volume slowpath knows of works from a shell: the
// flags then go into /etc/crypttab (asks says why).
func PersistCommand(c *CryptChange) (cmd, asks string) {
	if len(c.Opens) == 0 {
		return RefreshCommand(c, true), AsksAnything
	}
	var tokens []string
	for _, o := range c.Opens {
		if o.Kind != OpenerPassphrase {
			tokens = append(tokens, o.Kind)
		}
	}
	for _, o := range c.Opens {
		if o.Kind == OpenerPassphrase {
			asks = fmt.Sprintf("it asks for the passphrase (or --key-file) of key slot %s", slots(o.Keyslots))
			if len(tokens) > 0 {
				asks += fmt.Sprintf("; cryptsetup tries the volume's %s token first", strings.Join(tokens, ", "))
			}
			return RefreshCommand(c, true), asks
		}
	}
	for _, o := range c.Opens {
		if a, ok := tokenAsks[o.Kind]; ok {
			return RefreshCommand(c, true), fmt.Sprintf("no key slot opens by passphrase; key slot %s: %s", slots(o.Keyslots), a)
		}
	}
	for _, o := range c.Opens {
		if o.Kind == "clevis" && len(o.Keyslots) > 0 && c.Device != "" {
			// clevis has no cryptsetup plugin: it gives the slot's
			// passphrase (clevis-luks-pass(1)) for refresh to read as a
			// key file on standard input.
			pass := quote.Shells("clevis", "luks", "pass", "-d", "/dev/"+strings.ReplaceAll(c.Device, "!", "/"), "-s", strconv.Itoa(o.Keyslots[0]))
			return pass + " | " + quote.Shells(refreshWords(c, true, "--key-file", "-")...),
				fmt.Sprintf("no key slot opens by passphrase; clevis holds key slot %d (tang or TPM2) and hands it to cryptsetup", o.Keyslots[0])
		}
	}
	return "", fmt.Sprintf("no key slot of %s opens by passphrase, and its %s token is none cryptsetup can use without the tool that made it", c.Name, strings.Join(tokens, ", "))
}

func slots(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ", ")
}

// SchedulerCommand sets a block device's I/O scheduler now.
func SchedulerCommand(dev, to string) string {
	return "echo " + quote.Shell(to) + " > " + quote.Shell("/sys/block/"+dev+"/queue/scheduler")
}

// SchedulerRuleFile is the udev rule that keeps a device's scheduler.
func SchedulerRuleFile(dev string) string {
	return "/etc/udev/rules.d/60-slowpath-scheduler-" + quote.PathComponent(dev) + ".rules"
}

// SchedulerRule is the rule's line: udev sets the scheduler whenever the
// device appears or changes. Every value is a udev match value
// (quote.Udev); one udev cannot hold literally refuses the rule.
func SchedulerRule(dev, to string) (string, error) {
	k, err := quote.Udev(dev)
	if err != nil {
		return "", err
	}
	v, err := quote.Udev(to)
	if err != nil {
		return "", err
	}
	return "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==" + k + ", ATTR{queue/scheduler}=" + v, nil
}
