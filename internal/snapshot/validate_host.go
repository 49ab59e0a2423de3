package snapshot

import (
	"fmt"
	"math"
	"strings"
)

// Validation of the host section (host.go), shared with bench results
// (ValidateHost). Rules and sources: docs/snapshot.md, section Validation.

// ValidateHost checks a host section by the rules of Validate; prefix is
// its JSON path ("host" in a snapshot, "environment.host" in a bench
// result, which carries the same section).
func ValidateHost(prefix string, h *Host) error {
	if h == nil {
		return nil
	}
	// uname(2) fields are char[__NEW_UTS_LEN + 1] (include/uapi/linux/utsname.h).
	for _, f := range []struct{ p, v string }{{prefix + ".kernel_release", h.KernelRelease}, {prefix + ".arch", h.Arch}} {
		if len(f.v) > 64 {
			return invalidString(f.p, f.v, "not a uname field", fmt.Sprintf("%d bytes, at most 64", len(f.v)), "include/uapi/linux/utsname.h __NEW_UTS_LEN 64")
		}
		if err := checkToken(f.p, f.v, 64, true); err != nil {
			return err
		}
	}
	if err := checkBootID(prefix+".boot_id", h.BootID); err != nil {
		return err
	}
	if err := checkMachineID(prefix+".machine_id", h.MachineID); err != nil {
		return err
	}
	if h.NumCPU < 0 || h.NumCPU > maxNumCPU {
		return invalidNumber(prefix+".num_cpu", h.NumCPU, "out of range", fmt.Sprintf("want 0 (unknown) to %d", maxNumCPU), srcSlowpath)
	}
	if err := checkText(prefix+".cpu_model", h.CPUModel, maxLine, false); err != nil {
		return err
	}
	for i, f := range h.CPUFlags {
		if err := checkToken(fmt.Sprintf("%s.cpu_flags[%d]", prefix, i), f, maxWord, false); err != nil {
			return err
		}
	}
	if d := h.DMI; d != nil {
		// sysfs attributes are at most a page; SMBIOS strings are far shorter.
		for _, f := range []struct{ p, v string }{
			{"sys_vendor", d.SysVendor}, {"product_name", d.ProductName}, {"product_version", d.ProductVersion},
			{"board_vendor", d.BoardVendor}, {"bios_vendor", d.BIOSVendor}, {"chassis_asset_tag", d.ChassisAssetTag},
		} {
			if err := checkText(prefix+".dmi."+f.p, f.v, maxLine, false); err != nil {
				return err
			}
		}
	}
	for i, c := range h.Crypto {
		p := fmt.Sprintf("%s.crypto[%d]", prefix, i)
		if err := checkCryptoName(p+".name", c.Name, false); err != nil {
			return err
		}
		if err := checkCryptoName(p+".driver", c.Driver, false); err != nil {
			return err
		}
		// struct module name[MODULE_NAME_LEN] (include/linux/module.h: 64 - sizeof(unsigned long)).
		if len(c.Module) > 55 {
			return invalidString(p+".module", c.Module, "not a module name", fmt.Sprintf("%d bytes, at most 55", len(c.Module)), "include/linux/module.h MODULE_NAME_LEN")
		}
		if err := checkToken(p+".module", c.Module, 55, true); err != nil {
			return err
		}
		if err := checkToken(p+".type", c.Type, maxWord, true); err != nil {
			return err
		}
	}
	if c := h.Cipher; c != nil {
		if err := checkCryptoName(prefix+".cipher.algorithm", c.Algorithm, false); err != nil {
			return err
		}
		if err := checkCryptoName(prefix+".cipher.driver", c.Driver, true); err != nil {
			return err
		}
		if err := checkEnum(prefix+".cipher.method", c.Method, "af_alg", "user-space"); err != nil {
			return err
		}
		if c.KeyBits < 0 {
			return invalidNumber(prefix+".cipher.key_bits", c.KeyBits, "negative", "", srcSlowpath)
		}
		if c.SectorSize < 0 {
			return invalidNumber(prefix+".cipher.sector_size", c.SectorSize, "negative", "", srcSlowpath)
		}
		if c.DurationMS < 0 {
			return invalidNumber(prefix+".cipher.duration_ms", c.DurationMS, "negative", "", srcSlowpath)
		}
		if v := c.BytesPerSecPerCore; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return invalidNumber(prefix+".cipher.bytes_per_sec_per_core", v, "not a throughput", "want a finite number >= 0", srcSlowpath)
		}
		if err := checkText(prefix+".cipher.what", c.What, maxMessage, false); err != nil {
			return err
		}
		if err := checkText(prefix+".cipher.why", c.Why, maxMessage, false); err != nil {
			return err
		}
	}
	if err := validateOS(prefix+".os", h.OS); err != nil {
		return err
	}
	for i := range h.Tuners {
		if err := validateTuner(fmt.Sprintf("%s.tuners[%d]", prefix, i), &h.Tuners[i]); err != nil {
			return err
		}
	}
	for i, f := range h.Fixes {
		p := fmt.Sprintf("%s.fixes[%d]", prefix, i)
		if err := checkToken(p+".id", f.ID, maxEnumish, false); err != nil {
			return err
		}
		for _, t := range []struct{ p, v string }{{".subject", f.Subject}, {".key", f.Key}, {".value", f.Value}} {
			if err := checkText(p+t.p, t.v, maxLine, false); err != nil {
				return err
			}
		}
	}
	return nil
}

const srcOSRelease = "os-release(5)"

// validateOS: os-release(5) limits ID, VERSION_ID and VARIANT_ID to
// 0-9, a-z, ".", "_" and "-" (VERSION_ID also A-Z in practice, e.g. "rolling").
func validateOS(p string, o *OS) error {
	if o == nil {
		return nil
	}
	for _, f := range []struct {
		p, v     string
		optional bool
	}{{".id", o.ID, false}, {".version_id", o.VersionID, true}, {".variant_id", o.VariantID, true}} {
		if f.v == "" && f.optional {
			continue
		}
		if f.v == "" || len(f.v) > maxEnumish || strings.IndexFunc(f.v, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '~' || r == '+')
		}) >= 0 {
			return invalidString(p+f.p, f.v, "not an os-release word", "want 0-9, a-z, '.', '_', '-', at most 128 bytes", srcOSRelease)
		}
	}
	return checkText(p+".pretty_name", o.PrettyName, maxLine, false)
}

func validateTuner(p string, t *Tuner) error {
	if err := checkEnum(p+".name", t.Name, "bpftune", "tuned", "slowpath-node-tuning"); err != nil {
		return err
	}
	if t.PID < 0 || t.PID > 1<<22 {
		return invalidNumber(p+".pid", t.PID, "not a pid", "want 0 (none running) to 4194304", "include/linux/threads.h PID_MAX_LIMIT")
	}
	if len(t.Seen) == 0 {
		return invalidString(p+".seen", "", "is empty", "a tuner is seen in some file", srcSlowpath)
	}
	for i, s := range t.Seen {
		if err := checkAbsPath(fmt.Sprintf("%s.seen[%d]", p, i), s); err != nil {
			return err
		}
	}
	if err := checkText(p+".profile", t.Profile, maxLine, false); err != nil {
		return err
	}
	for i, s := range t.Sysctls {
		if err := checkSysctlKey(fmt.Sprintf("%s.sysctls[%d].key", p, i), s.Key); err != nil {
			return err
		}
		if err := checkText(fmt.Sprintf("%s.sysctls[%d].value", p, i), s.Value, maxLine, false); err != nil {
			return err
		}
	}
	for i, r := range t.Rings {
		if err := checkText(fmt.Sprintf("%s.rings[%d].devices", p, i), r.Devices, maxLine, false); err != nil {
			return err
		}
		if err := checkText(fmt.Sprintf("%s.rings[%d].value", p, i), r.Value, maxLine, false); err != nil {
			return err
		}
	}
	for i, s := range t.Plugins {
		if err := checkToken(fmt.Sprintf("%s.plugins[%d]", p, i), s, maxEnumish, false); err != nil {
			return err
		}
	}
	return nil
}

// checkCryptoName: /proc/crypto names and drivers are cra_name and
// cra_driver_name, char[CRYPTO_MAX_ALG_NAME 128] (include/linux/crypto.h).
func checkCryptoName(p, s string, optional bool) error {
	if len(s) > 127 {
		return invalidString(p, s, "not a crypto algorithm name", fmt.Sprintf("%d bytes, at most 127", len(s)), "include/linux/crypto.h CRYPTO_MAX_ALG_NAME 128")
	}
	return checkToken(p, s, 127, optional)
}

// checkBootID: /proc/sys/kernel/random/boot_id is a random (version 4)
// UUID printed "%pU" in lower case (drivers/char/random.c proc_do_uuid,
// lib/uuid.c generate_random_uuid). Empty when not read.
func checkBootID(p, s string) error {
	if s == "" {
		return nil
	}
	const src = "drivers/char/random.c proc_do_uuid, lib/uuid.c generate_random_uuid"
	if err := checkHexShape(p, s, "not a boot id", "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", "a lower-case UUID xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx", "lower-case hex digits", src); err != nil {
		return err
	}
	if s[14] != '4' || !strings.ContainsRune("89ab", rune(s[19])) {
		return invalidString(p, s, "not a boot id", "the kernel makes version 4, variant 1 UUIDs", src)
	}
	return nil
}

// checkMachineID: /etc/machine-id is 32 lower-case hex digits
// (machine-id(5)); all zeros is the null ID, no machine's identity.
func checkMachineID(p, s string) error {
	if s == "" {
		return nil
	}
	const src = "machine-id(5)"
	if err := checkHexShape(p, s, "not a machine id", strings.Repeat("x", 32), "32 lower-case hex digits", "32 lower-case hex digits", src); err != nil {
		return err
	}
	if s == strings.Repeat("0", 32) {
		return invalidString(p, s, "not a machine id", "all zeros is the null ID", src)
	}
	return nil
}

// checkHexShape checks s against shape: an x stands for a lower-case hex
// digit, any other byte for itself (a UUID's dashes); want describes the
// shape in the error of a wrong length, hex the digits in that of a wrong
// digit.
func checkHexShape(p, s, what, shape, want, hex, src string) error {
	if len(s) != len(shape) {
		return invalidString(p, s, what, "want "+want, src)
	}
	for i := 0; i < len(s); i++ {
		switch {
		case shape[i] != 'x' && s[i] != shape[i]:
			return invalidString(p, s, what, fmt.Sprintf("want %q at position %d", shape[i], i+1), src)
		case shape[i] == 'x' && !isLowerHex(s[i]):
			return invalidString(p, s, what, "want "+hex, src)
		}
	}
	return nil
}
