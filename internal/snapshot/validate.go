package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// ErrInvalid marks a snapshot that breaks a validation rule: a value no
// kernel would report, or one slowpath refuses to carry into a plan, a file
// or a terminal. Decode and Load return it (wrapped in a *ValidationError)
// before any model, check, plan or report sees the snapshot.
var ErrInvalid = errors.New("invalid snapshot")

// ValidationError names the first value of a snapshot that breaks a rule:
// its JSON path, the value (quoted, shortened), the rule and the rule's
// source (a kernel file and function or constant, or "slowpath" for
// slowpath's own rules). docs/snapshot.md, section Validation, lists them.
type ValidationError struct {
	Path   string // JSON path, e.g. net.interfaces[3].name
	Value  string // the value as shown: Go-quoted and shortened, or a number
	Rule   string // what the value is not, e.g. "not a valid interface name"
	Detail string // which part of the rule it breaks; may be empty
	Source string // where the rule comes from
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("snapshot: ")
	b.WriteString(e.Path)
	if e.Value != "" {
		b.WriteString(" ")
		b.WriteString(e.Value)
	}
	b.WriteString(": ")
	b.WriteString(e.Rule)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	b.WriteString(" (")
	b.WriteString(e.Source)
	b.WriteString(")")
	return b.String()
}

// Unwrap lets callers test errors.Is(err, ErrInvalid).
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// maxShown bounds how much of an offending value an error repeats: a
// megabyte-long name must not become a megabyte-long message.
const maxShown = 64

// showString quotes s with %q (so no control character reaches a
// terminal) after cutting it to maxShown bytes on a rune boundary.
func showString(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	n := maxShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:n]), len(s))
}

func invalidString(p, s, rule, detail, source string) error {
	return &ValidationError{Path: p, Value: showString(s), Rule: rule, Detail: detail, Source: source}
}

func invalidNumber[N int | int64 | uint32 | uint64 | float64](p string, n N, rule, detail, source string) error {
	return &ValidationError{Path: p, Value: fmt.Sprint(n), Rule: rule, Detail: detail, Source: source}
}

// Sources of slowpath's own rules.
const (
	srcSlowpathText = "slowpath: a control character would reach a terminal, a log or a generated file"
	srcSlowpathUTF8 = "slowpath: JSON carries Unicode text; invalid UTF-8 would be rewritten to U+FFFD and name something else"
	srcSlowpathEnum = "slowpath: the values this snapshot format defines"
	srcSlowpath     = "slowpath"
)

// Validate checks every field of s against the rules in docs/snapshot.md
// (section Validation) and returns the first break as a *ValidationError
// wrapping ErrInvalid, or nil. Fields are checked in document order, so
// the error is the same on every run.
func (s *Snapshot) Validate() error {
	if s == nil {
		return &ValidationError{Path: "snapshot", Rule: "is empty", Source: srcSlowpath}
	}
	for _, f := range []func() error{
		func() error { return validateManifest(&s.Manifest) },
		func() error { return ValidateHost("host", s.Host) },
		func() error { return validateStorage(s.Storage) },
		func() error { return ValidateCloud("cloud", s.Cloud) },
		func() error { return validateNet(s.Net) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// ---- text: slowpath's own rule for every string ----

// checkText is slowpath's rule for every string of a snapshot: valid UTF-8,
// at most maxLen bytes, and no control character (Unicode Cc: C0, DEL and
// C1, which terminals act on) except tab and newline where multiline says
// free text may hold them (collection error messages and fixture notes).
// The kernel accepts such bytes in many names; slowpath refuses them
// because every string ends up on a terminal or in a generated file.
func checkText(p, s string, maxLen int, multiline bool) error {
	if len(s) > maxLen {
		return invalidString(p, s, "too long", fmt.Sprintf("%d bytes, at most %d", len(s), maxLen), srcSlowpath)
	}
	if !utf8.ValidString(s) {
		return invalidString(p, s, "not valid UTF-8", "", srcSlowpathUTF8)
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if isControl(r) {
			return invalidString(p, s, "holds a control character", fmt.Sprintf("%U", r), srcSlowpathText)
		}
	}
	return nil
}

// isControl is Unicode category Cc: C0 (U+0000-U+001F), DEL and C1
// (U+0080-U+009F; U+009B is a CSI to many terminals).
func isControl(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f
}

// Bounds of free text, slowpath's own: far above anything a kernel or
// metadata service reports, low enough that a hostile file cannot grow
// reports without limit.
const (
	maxLine    = 1024      // one-line values: models, vendors, IRQ names
	maxMessage = 4096      // an error message or note
	maxFixture = 64 << 10  // a fixture's description of where its facts come from
	maxErrText = 64 << 10  // a collection error: a live one may join several
	maxParams  = 64 << 10  // a dm target's parameter string
	pathMax    = 4096      // PATH_MAX, include/uapi/linux/limits.h (with the NUL)
	maxWord    = 64        // a token of a space-separated list: CPU flag, scheduler
	maxEnumish = 128       // cloud instance types, regions, GCP disk fields
	maxSysctl  = 256       // a dotted sysctl name
	maxCounter = 128       // a counter's name in a sample
	maxNumCPU  = 1 << 16   // slowpath's sanity bound; NR_CPUS tops out at 8192 today
	maxColumns = 64        // softnet_stat/stat columns from a later kernel, sanity bound
	maxUint32  = 1<<32 - 1 // u32 fields of ethtool and NVMe
)

// ---- kernel rules ----

// Interface names: net/core/dev.c dev_valid_name(). IFNAMSIZ is 16
// (include/uapi/linux/if.h), so at most 15 bytes.
const srcIfname = "net/core/dev.c dev_valid_name"

// kernelIsSpace is isspace() of the kernel's lib/ctype.c: tab, newline,
// vertical tab, form feed, carriage return, space and 0xA0 (the table marks
// Latin-1 NBSP as space), tested per byte as dev_valid_name does.
func kernelIsSpace(c byte) bool {
	return c >= '\t' && c <= '\r' || c == ' ' || c == 0xa0
}

// ifnameProblem returns why name breaks dev_valid_name(), or "".
func ifnameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) >= 16:
		return fmt.Sprintf("%d bytes, at most 15 (IFNAMSIZ 16)", len(name))
	case name == "." || name == "..":
		return `"." and ".." are refused`
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == 0:
			return "holds a NUL"
		case c == '/':
			return "holds '/'"
		case c == ':':
			return "holds ':'"
		case kernelIsSpace(c):
			return fmt.Sprintf("holds white space %q", c)
		}
	}
	return ""
}

func checkIfname(p, name string) error {
	if why := ifnameProblem(name); why != "" {
		return invalidString(p, name, "not a valid interface name", why, srcIfname)
	}
	return checkText(p, name, 15, false)
}

// Block device names are sysfs directory names of /sys/class/block: a
// kobject name never holds '/' (lib/kobject.c kobject_set_name_vargs turns
// it into '!') and is never "." or "..". A disk's name fits disk_name
// [DISK_NAME_LEN 32] (include/linux/blkdev.h); a partition's adds "p" and
// its number (block/partitions/core.c add_partition), up to DISK_MAX_PARTS
// 256: at most 31+4 bytes.
const (
	srcBlockName = "include/linux/blkdev.h DISK_NAME_LEN, block/partitions/core.c add_partition, lib/kobject.c kobject_set_name_vargs"
	maxBlockName = 35
)

func checkBlockName(p, name string) error {
	why := ""
	switch {
	case name == "":
		why = "empty"
	case len(name) > maxBlockName:
		why = fmt.Sprintf("%d bytes, at most %d", len(name), maxBlockName)
	case name == "." || name == "..":
		why = `"." and ".." are not sysfs names`
	case strings.ContainsAny(name, "/\x00"):
		why = "holds '/' or NUL"
	}
	if why != "" {
		return invalidString(p, name, "not a valid block device name", why, srcBlockName)
	}
	return checkText(p, name, maxBlockName, false)
}

// Device numbers: "MAJ:MIN" as the kernel prints them ("%u:%u", block/
// genhd.c dev_show, fs/proc_namespace.c show_mountinfo). A dev_t is 32 bits
// with MINORBITS 20 (include/linux/kdev_t.h): major < 4096, minor < 2^20.
const srcDevT = "include/linux/kdev_t.h MINORBITS 20, MAJOR/MINOR"

func checkMajMin(p, s string) error {
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return invalidString(p, s, "not a device number", `want "MAJ:MIN"`, srcDevT)
	}
	if !canonicalUint(maj, 1<<12-1) {
		return invalidString(p, s, "not a device number", "major is not a decimal below 4096", srcDevT)
	}
	if !canonicalUint(min, 1<<20-1) {
		return invalidString(p, s, "not a device number", "minor is not a decimal below 2^20", srcDevT)
	}
	return nil
}

// canonicalUint reports whether s is a decimal as the kernel's %u prints
// it (no sign, no leading zero) and at most max.
func canonicalUint(s string, max uint64) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return err == nil && v <= max
}

// Device-mapper: drivers/md/dm-ioctl.c check_name() refuses '/' and the
// name "control"; current kernels also "." and ".." (Demi Marie Obenour's
// 2022 patch), which slowpath refuses whatever the kernel;
// validate_params() refuses an empty name at creation. Names fit
// name[DM_NAME_LEN 128], UUIDs uuid[DM_UUID_LEN 129], target types
// target_type[DM_MAX_TYPE_NAME 16] (include/uapi/linux/dm-ioctl.h), each
// with its NUL.
const (
	srcDMName = "drivers/md/dm-ioctl.c check_name, include/uapi/linux/dm-ioctl.h DM_NAME_LEN 128"
	srcDMUUID = "include/uapi/linux/dm-ioctl.h DM_UUID_LEN 129"
	srcDMType = "include/uapi/linux/dm-ioctl.h DM_MAX_TYPE_NAME 16"
)

func checkDMName(p, name string) error {
	why := ""
	switch {
	case name == "":
		why = "empty"
	case len(name) > 127:
		why = fmt.Sprintf("%d bytes, at most 127", len(name))
	case name == "control" || name == "." || name == "..":
		why = `"control", "." and ".." are refused`
	case strings.ContainsAny(name, "/\x00"):
		why = "holds '/' or NUL"
	}
	if why != "" {
		return invalidString(p, name, "not a valid device-mapper name", why, srcDMName)
	}
	return checkText(p, name, 127, false)
}

// Paths the kernel prints from d_path()/seq_path_root() (fs/d_path.c) are
// absolute and canonical: no "." or ".." component, no "//", no trailing
// '/'. mountinfo escapes space, tab, newline and backslash as \040 etc.
// (fs/proc_namespace.c show_mountinfo, proc_pid_mountinfo(5)); after
// unescaping, slowpath still refuses control characters (its own rule).
const srcPath = "fs/d_path.c d_path, fs/proc_namespace.c show_mountinfo"

func checkAbsPath(p, s string) error {
	if err := checkText(p, s, pathMax-1, false); err != nil {
		return err
	}
	if !strings.HasPrefix(s, "/") {
		return invalidString(p, s, "not an absolute path", "", srcPath)
	}
	if path.Clean(s) != s {
		return invalidString(p, s, "not a clean path", "the kernel prints no '.', '..' or '//' components", srcPath)
	}
	return nil
}

// checkMountRoot checks mountinfo's field 4. Besides a clean absolute
// path, the kernel prints "//deleted" after the root of a bind mount whose
// source was unlinked (fs/d_path.c dentry_path), and "TYPE:[INODE]" for a
// namespace file bind-mounted (fs/nsfs.c ns_dname: /run/netns/NAME).
func checkMountRoot(p, s string) error {
	if !strings.HasPrefix(s, "/") {
		if err := checkText(p, s, pathMax-1, false); err != nil {
			return err
		}
		if typ, rest, ok := strings.Cut(s, ":["); ok && typ != "" && strings.HasSuffix(rest, "]") && canonicalUint(strings.TrimSuffix(rest, "]"), math.MaxUint64) {
			return nil
		}
		return invalidString(p, s, "not a mount root", `want an absolute path or "TYPE:[INODE]"`, "fs/d_path.c dentry_path, fs/nsfs.c ns_dname")
	}
	if t, ok := strings.CutSuffix(s, "//deleted"); ok && t != "" {
		return checkAbsPath(p, t)
	}
	return checkAbsPath(p, s)
}

// Sysctl names: /proc/sys entries are ctl_table procnames (fs/proc/
// proc_sysctl.c); sysctl(8) joins the path with dots. The kernel refuses
// nothing beyond a valid directory entry, but per-device directories are
// named after interfaces, which may hold '.', '=' or ';'. The sysctls a
// snapshot holds are the nine net.core ones (internal/collect/network
// sysctl.go), so slowpath restricts each component to [A-Za-z0-9_-]
// (its own rule): a key goes into sysctl.d files and sysctl -w commands.
func checkSysctlKey(p, k string) error {
	why := ""
	comps := strings.Split(k, ".")
	switch {
	case len(k) > maxSysctl:
		why = fmt.Sprintf("%d bytes, at most %d", len(k), maxSysctl)
	case len(comps) < 2:
		why = "want dotted components, e.g. net.core.netdev_max_backlog"
	}
	for _, c := range comps {
		if why != "" {
			break
		}
		if c == "" {
			why = "empty component"
		}
		for i := 0; i < len(c) && why == ""; i++ {
			ch := c[i]
			if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
				why = "components are [A-Za-z0-9_-]"
			}
		}
	}
	if why != "" {
		return invalidString(p, k, "not a sysctl name", why, "slowpath: the sysctl names it collects, written into sysctl.d and sysctl -w; fs/proc/proc_sysctl.c")
	}
	return nil
}

// sysctlMin is the least value slowpath accepts for each sysctl it
// collects (net/core/sysctl_net_core.c net_core_table); all are int
// (maxlen sizeof(int)). netdev_budget_usecs and somaxconn have extra1 =
// SYSCTL_ZERO; rmem_* and wmem_* have extra1 = min_rcvbuf/min_sndbuf
// (higher; 1 on older kernels). netdev_max_backlog and netdev_budget use
// plain proc_dointvec, and so does dev_weight on older kernels: they take
// a negative number, which as a queue length, packet budget or weight
// means nothing, so slowpath requires >= 0 (its own rule).
var sysctlMin = map[string]int64{
	"net.core.netdev_max_backlog":  0,
	"net.core.netdev_budget":       0,
	"net.core.netdev_budget_usecs": 0,
	"net.core.dev_weight":          0,
	"net.core.rmem_max":            0,
	"net.core.rmem_default":        0,
	"net.core.wmem_max":            0,
	"net.core.wmem_default":        0,
	"net.core.somaxconn":           0,
}

// ---- sections ----

func validateManifest(m *Manifest) error {
	if m.FormatVersion != FormatVersion {
		return invalidNumber("manifest.format_version", m.FormatVersion, "unsupported format version", fmt.Sprintf("this slowpath reads version %d", FormatVersion), srcSlowpathEnum)
	}
	if err := checkText("manifest.tool", m.Tool, maxLine, false); err != nil {
		return err
	}
	// sethostname(2) refuses more than __NEW_UTS_LEN 64 bytes (kernel/sys.c);
	// it accepts any byte, slowpath refuses control characters.
	if len(m.Hostname) > 64 {
		return invalidString("manifest.hostname", m.Hostname, "not a host name", fmt.Sprintf("%d bytes, at most 64", len(m.Hostname)), "kernel/sys.c sethostname, __NEW_UTS_LEN 64")
	}
	if err := checkText("manifest.hostname", m.Hostname, 64, false); err != nil {
		return err
	}
	if err := checkText("manifest.fixture", m.Fixture, maxFixture, true); err != nil {
		return err
	}
	if ls := m.LiveSources; ls != nil {
		if err := checkEnum("manifest.live_sources.mode", ls.Mode, "auto", "on", "off"); err != nil {
			return err
		}
		if err := checkText("manifest.live_sources.reason", ls.Reason, maxMessage, true); err != nil {
			return err
		}
	}
	for i, e := range m.Errors {
		p := fmt.Sprintf("manifest.errors[%d]", i)
		if err := checkToken(p+".collector", e.Collector, maxWord, false); err != nil {
			return err
		}
		if err := checkText(p+".path", e.Path, pathMax, false); err != nil {
			return err
		}
		if err := checkEnum(p+".kind", string(e.Kind), string(hostfs.KindMissing), string(hostfs.KindPermission),
			string(hostfs.KindUnsupported), string(hostfs.KindError), string(hostfs.KindSkipped)); err != nil {
			return err
		}
		if err := checkText(p+".message", e.Message, maxErrText, true); err != nil {
			return err
		}
	}
	return nil
}

// checkEnum requires one of the values the format defines.
func checkEnum(p, s string, allowed ...string) error {
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return invalidString(p, s, "not a known value", "want one of "+strings.Join(allowed, ", "), srcSlowpathEnum)
}

func checkOptEnum(p, s string, allowed ...string) error {
	if s == "" {
		return nil
	}
	return checkEnum(p, s, allowed...)
}

// checkToken is a word of a space-separated kernel list (cpuinfo flags,
// queue/scheduler, uname fields): non-empty unless optional, no white
// space, bounded.
func checkToken(p, s string, maxLen int, optional bool) error {
	if s == "" {
		if optional {
			return nil
		}
		return invalidString(p, s, "is empty", "", srcSlowpath)
	}
	if err := checkText(p, s, maxLen, false); err != nil {
		return err
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x80 && kernelIsSpace(byte(r)) || r == 0xa0 }); i >= 0 {
		return invalidString(p, s, "holds white space", "the kernel prints it as one word", srcSlowpath)
	}
	return nil
}

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
	if len(s) != 36 {
		return invalidString(p, s, "not a boot id", "want a lower-case UUID xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx", src)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return invalidString(p, s, "not a boot id", fmt.Sprintf("want '-' at position %d", i+1), src)
			}
		default:
			if !isLowerHex(c) {
				return invalidString(p, s, "not a boot id", "want lower-case hex digits", src)
			}
		}
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
	if len(s) != 32 {
		return invalidString(p, s, "not a machine id", "want 32 lower-case hex digits", src)
	}
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return invalidString(p, s, "not a machine id", "want 32 lower-case hex digits", src)
		}
	}
	if s == strings.Repeat("0", 32) {
		return invalidString(p, s, "not a machine id", "all zeros is the null ID", src)
	}
	return nil
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func validateStorage(st *Storage) error {
	if st == nil {
		return nil
	}
	for i := range st.Mounts {
		if err := validateMount(fmt.Sprintf("storage.mounts[%d]", i), &st.Mounts[i]); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	for i := range st.BlockDevices {
		p := fmt.Sprintf("storage.block_devices[%d]", i)
		if err := validateBlockDevice(p, &st.BlockDevices[i]); err != nil {
			return err
		}
		// One directory per name in /sys/class/block.
		name := st.BlockDevices[i].Name
		if j, dup := seen[name]; dup {
			return invalidString(p+".name", name, "names two block devices", fmt.Sprintf("also storage.block_devices[%d]", j), "sysfs: one directory per name in /sys/class/block")
		}
		seen[name] = i
	}
	return nil
}

func validateMount(p string, m *Mount) error {
	// Mount ids are ints printed "%i" (fs/proc_namespace.c show_mountinfo),
	// allocated from an IDA starting at 0 (fs/namespace.c mnt_alloc_id).
	if m.MountID < 0 {
		return invalidNumber(p+".mount_id", m.MountID, "negative", "", "fs/namespace.c mnt_alloc_id")
	}
	if m.ParentID < 0 {
		return invalidNumber(p+".parent_id", m.ParentID, "negative", "", "fs/namespace.c mnt_alloc_id")
	}
	if err := checkMajMin(p+".major_minor", m.MajorMinor); err != nil {
		return err
	}
	if err := checkMountRoot(p+".root", m.Root); err != nil {
		return err
	}
	if err := checkAbsPath(p+".mount_point", m.MountPoint); err != nil {
		return err
	}
	// A type is a registered file_system_type name, with ".subtype" for
	// FUSE (fs/proc_namespace.c show_type).
	if m.FSType == "" {
		return invalidString(p+".fs_type", m.FSType, "is empty", "", "fs/proc_namespace.c show_type")
	}
	if err := checkText(p+".fs_type", m.FSType, 255, false); err != nil {
		return err
	}
	for _, f := range []struct{ p, v string }{{".options", m.Options}, {".source", m.Source}, {".super_options", m.SuperOpts}} {
		if err := checkText(p+f.p, f.v, pathMax, false); err != nil {
			return err
		}
	}
	if err := checkOptEnum(p+".fscrypt_status", m.FscryptStatus, FscryptEncrypted, FscryptNotEncrypted, FscryptUnsupported); err != nil {
		return err
	}
	if f := m.Fscrypt; f != nil {
		if f.Version != 1 && f.Version != 2 {
			return invalidNumber(p+".fscrypt.version", f.Version, "not an fscrypt policy version", "want 1 or 2", "include/uapi/linux/fscrypt.h FSCRYPT_POLICY_V1, _V2")
		}
		if err := checkToken(p+".fscrypt.contents_mode", f.ContentsMode, maxWord, false); err != nil {
			return err
		}
		if err := checkToken(p+".fscrypt.filenames_mode", f.FilenamesMode, maxWord, false); err != nil {
			return err
		}
	}
	return nil
}

func validateBlockDevice(p string, d *BlockDevice) error {
	if err := checkBlockName(p+".name", d.Name); err != nil {
		return err
	}
	if err := checkMajMin(p+".major_minor", d.MajorMinor); err != nil {
		return err
	}
	if err := checkEnum(p+".kind", d.Kind, KindDisk, KindPartition, KindDM, KindMD, KindLoop, KindZram, KindRAM, KindOther); err != nil {
		return err
	}
	if d.Parent != "" {
		if err := checkBlockName(p+".parent", d.Parent); err != nil {
			return err
		}
	}
	// sysfs size counts 512-byte sectors (block/genhd.c part_size_show).
	if d.SizeBytes%512 != 0 {
		return invalidNumber(p+".size_bytes", d.SizeBytes, "not a whole number of sectors", "sysfs size counts 512-byte sectors", "block/genhd.c part_size_show")
	}
	for i, n := range d.Slaves {
		if err := checkBlockName(fmt.Sprintf("%s.slaves[%d]", p, i), n); err != nil {
			return err
		}
	}
	for i, n := range d.Holders {
		if err := checkBlockName(fmt.Sprintf("%s.holders[%d]", p, i), n); err != nil {
			return err
		}
	}
	if q := d.Queue; q != nil {
		if err := validateQueue(p+".queue", q); err != nil {
			return err
		}
	}
	if dm := d.DM; dm != nil {
		if err := validateDM(p+".dm", dm); err != nil {
			return err
		}
	}
	if l := d.Loop; l != nil {
		// backing_file is file_path() of the file (drivers/block/loop.c
		// backing_file_show): d_path, absolute, " (deleted)" when unlinked.
		if err := checkAbsPath(p+".loop.backing_file", l.BackingFile); err != nil {
			return err
		}
		if l.BackingDevice != "" {
			if err := checkMajMin(p+".loop.backing_device", l.BackingDevice); err != nil {
				return err
			}
		}
		if l.BackingBlockDevice != "" {
			if err := checkMajMin(p+".loop.backing_block_device", l.BackingBlockDevice); err != nil {
				return err
			}
		}
	}
	if md := d.MD; md != nil {
		if err := checkToken(p+".md.level", md.Level, maxWord, true); err != nil {
			return err
		}
	}
	if id := d.Ident; id != nil {
		if err := validateIdentity(p+".identity", id); err != nil {
			return err
		}
	}
	if s := d.Stat; s != nil {
		// Documentation/block/stat.rst: 11 fields, 15 from 4.18, 17 from
		// 5.5; more from a later kernel are counted, not kept.
		if !(s.Fields == 11 || s.Fields == 15 || s.Fields >= 17 && s.Fields <= maxColumns) {
			return invalidNumber(p+".stat.fields", s.Fields, "not a field count the kernel prints", "want 11, 15 or 17 (or more from a later kernel)", "Documentation/block/stat.rst, block/genhd.c part_stat_show")
		}
	}
	return nil
}

func validateQueue(p string, q *Queue) error {
	// blk_validate_block_size (include/linux/blkdev.h): a power of two from
	// 512 to BLK_MAX_BLOCK_SIZE (64 KiB; PAGE_SIZE before 6.15).
	if b := q.LogicalBlockSize; b != 0 && (b < 512 || b > 65536 || b&(b-1) != 0) {
		return invalidNumber(p+".logical_block_size", b, "not a block size", "want a power of two from 512 to 65536", "include/linux/blkdev.h blk_validate_block_size")
	}
	// block/blk-settings.c blk_validate_limits: a power of two, at least the logical size.
	if b := q.PhysicalBlockSize; b != 0 && (b < 512 || b&(b-1) != 0 || b < q.LogicalBlockSize) {
		return invalidNumber(p+".physical_block_size", b, "not a block size", "want a power of two, at least 512 and the logical block size", "block/blk-settings.c blk_validate_limits")
	}
	// Elevator names fit elevator_name[ELV_NAME_MAX 16] (block/elevator.h);
	// queue/scheduler is a space-separated list of them.
	const srcElv = "block/elevator.h ELV_NAME_MAX 16"
	if len(q.Scheduler) > 15 {
		return invalidString(p+".scheduler", q.Scheduler, "not a scheduler name", "at most 15 bytes", srcElv)
	}
	if err := checkToken(p+".scheduler", q.Scheduler, 15, true); err != nil {
		return err
	}
	for i, s := range q.Schedulers {
		sp := fmt.Sprintf("%s.schedulers[%d]", p, i)
		if len(s) > 15 {
			return invalidString(sp, s, "not a scheduler name", "at most 15 bytes", srcElv)
		}
		if err := checkToken(sp, s, 15, false); err != nil {
			return err
		}
	}
	if q.NrRequests < 0 {
		return invalidNumber(p+".nr_requests", q.NrRequests, "negative", "", "block/blk-sysfs.c queue_requests_show")
	}
	if q.ReadAheadKB < 0 {
		return invalidNumber(p+".read_ahead_kb", q.ReadAheadKB, "negative", "", "block/blk-sysfs.c queue_ra_show")
	}
	return nil
}

func validateDM(p string, dm *DM) error {
	if err := checkDMName(p+".name", dm.Name); err != nil {
		return err
	}
	if len(dm.UUID) > 128 {
		return invalidString(p+".uuid", dm.UUID, "not a device-mapper uuid", fmt.Sprintf("%d bytes, at most 128", len(dm.UUID)), srcDMUUID)
	}
	if err := checkText(p+".uuid", dm.UUID, 128, false); err != nil {
		return err
	}
	if err := checkText(p+".table_not_read", dm.TableNotRead, maxMessage, false); err != nil {
		return err
	}
	for i, t := range dm.Targets {
		tp := fmt.Sprintf("%s.targets[%d]", p, i)
		if t.Type == "" || len(t.Type) > 15 {
			return invalidString(tp+".type", t.Type, "not a target type", "1 to 15 bytes", srcDMType)
		}
		if err := checkToken(tp+".type", t.Type, 15, false); err != nil {
			return err
		}
		// The kernel returns params as a C string (no NUL); slowpath bounds
		// it and refuses newlines and other control characters.
		if err := checkText(tp+".params", t.Params, maxParams, false); err != nil {
			return err
		}
	}
	return nil
}

func validateIdentity(p string, id *Identity) error {
	if err := checkOptEnum(p+".transport", id.Transport, "nvme", "virtio", "scsi", "ata", "mmc", "usb", "xen"); err != nil {
		return err
	}
	for _, f := range []struct{ p, v string }{{".vendor", id.Vendor}, {".model", id.Model}, {".firmware", id.Firmware}} {
		if err := checkText(p+f.p, f.v, maxLine, false); err != nil {
			return err
		}
	}
	if id.VMBusDeviceID != "" {
		if _, err := ParseVMBusDeviceID(id.VMBusDeviceID); err != nil {
			return invalidString(p+".vmbus_device_id", id.VMBusDeviceID, "not a VMBus device_id", `want "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}"`, "drivers/hv/vmbus_drv.c device_id_show")
		}
	}
	if id.SCSIAddress != "" {
		if _, err := ParseSCSIAddress(id.SCSIAddress); err != nil {
			return invalidString(p+".scsi_address", id.SCSIAddress, "not a SCSI address", `want "H:C:T:L"`, "drivers/scsi/scsi_sysfs.c scsi_sysfs_device_initialize")
		}
	}
	// NVMe namespace ids are 1 to 0xFFFFFFFE (NVMe base specification).
	if id.NVMeNSID < 0 || id.NVMeNSID >= maxUint32 {
		return invalidNumber(p+".nvme_nsid", id.NVMeNSID, "not a namespace id", "want 0 (unknown) or 1 to 4294967294", "NVMe base specification, namespace identifiers")
	}
	return nil
}

// ValidateCloud checks a cloud section by the rules of Validate; prefix is
// its JSON path ("cloud", or "environment.cloud" in a bench result).
func ValidateCloud(prefix string, c *Cloud) error {
	if c == nil {
		return nil
	}
	if err := checkEnum(prefix+".provider", c.Provider, "azure", "aws", "gcp"); err != nil {
		return err
	}
	if err := checkEnum(prefix+".detected_by", c.DetectedBy, "dmi", "flag"); err != nil {
		return err
	}
	// Instance types and regions are the providers' identifiers:
	// printable words, short.
	if err := checkToken(prefix+".instance_type", c.InstanceType, maxEnumish, true); err != nil {
		return err
	}
	if err := checkToken(prefix+".region", c.Region, maxEnumish, true); err != nil {
		return err
	}
	if err := checkText(prefix+".metadata_error", c.MetadataError, maxErrText, true); err != nil {
		return err
	}
	if a := c.Azure; a != nil {
		if err := checkToken(prefix+".azure.vm_size", a.VMSize, maxEnumish, true); err != nil {
			return err
		}
		if a.ResourceDiskSizeMB < 0 {
			return invalidNumber(prefix+".azure.resource_disk_size_mb", a.ResourceDiskSizeMB, "negative", "", srcSlowpath)
		}
	}
	if a := c.AWS; a != nil {
		if err := checkToken(prefix+".aws.instance_type", a.InstanceType, maxEnumish, true); err != nil {
			return err
		}
		for _, k := range sortedKeys(a.BlockDeviceMapping) {
			if err := checkToken(prefix+".aws.block_device_mapping", k, maxEnumish, false); err != nil {
				return err
			}
			if err := checkToken(fmt.Sprintf("%s.aws.block_device_mapping[%q]", prefix, k), a.BlockDeviceMapping[k], maxEnumish, false); err != nil {
				return err
			}
		}
	}
	if g := c.GCP; g != nil {
		if err := checkToken(prefix+".gcp.machine_type", g.MachineType, maxEnumish, true); err != nil {
			return err
		}
		for i, d := range g.Disks {
			dp := fmt.Sprintf("%s.gcp.disks[%d]", prefix, i)
			for _, f := range []struct{ p, v string }{{".device_name", d.DeviceName}, {".type", d.Type}, {".interface", d.Interface}, {".mode", d.Mode}} {
				if err := checkToken(dp+f.p, f.v, maxEnumish, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// operstates are the strings of net/core/net-sysfs.c operstate_show
// (operstates[], RFC 2863 IF-MIB ifOperStatus).
var operstates = []string{"unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"}

func validateNet(n *Net) error {
	if n == nil {
		return nil
	}
	seen := map[string]int{}
	for i := range n.Interfaces {
		p := fmt.Sprintf("net.interfaces[%d]", i)
		if err := validateInterface(p, &n.Interfaces[i]); err != nil {
			return err
		}
		// A name is unique in its namespace (net/core/dev.c dev_get_valid_name: -EEXIST).
		name := n.Interfaces[i].Name
		if j, dup := seen[name]; dup {
			return invalidString(p+".name", name, "names two interfaces", fmt.Sprintf("also net.interfaces[%d]", j), "net/core/dev.c dev_get_valid_name")
		}
		seen[name] = i
	}
	for _, k := range sortedKeys(n.Sysctls) {
		if err := checkSysctlKey("net.sysctls", k); err != nil {
			return err
		}
		v := n.Sysctls[k]
		p := fmt.Sprintf("net.sysctls[%q]", k)
		// Every sysctl slowpath reads is an int (proc_dointvec and friends).
		if v < math.MinInt32 || v > math.MaxInt32 {
			return invalidNumber(p, v, "out of range", "an int sysctl", "kernel/sysctl.c proc_dointvec")
		}
		if lo, ok := sysctlMin[k]; ok && v < lo {
			return invalidNumber(p, v, "out of range", fmt.Sprintf("want at least %d", lo), "net/core/sysctl_net_core.c net_core_table")
		}
	}
	if d := n.DropReasons; d != nil {
		if err := checkEnum("net.drop_reasons.status", d.Status, "yes", "no", "unknown"); err != nil {
			return err
		}
		if err := checkOptEnum("net.drop_reasons.kernel_btf", d.KernelBTF, "yes", "no", "unknown"); err != nil {
			return err
		}
		if err := checkText("net.drop_reasons.source", d.Source, pathMax, false); err != nil {
			return err
		}
		if err := checkText("net.drop_reasons.detail", d.Detail, maxMessage, false); err != nil {
			return err
		}
	}
	for i := range n.Samples {
		p := fmt.Sprintf("net.samples[%d]", i)
		if err := validateSample(p, &n.Samples[i]); err != nil {
			return err
		}
		// Samples are in time order: rates divide by the difference.
		if i > 0 && n.Samples[i].MonotonicNS < n.Samples[i-1].MonotonicNS {
			return invalidNumber(p+".monotonic_ns", n.Samples[i].MonotonicNS, "before the previous sample", "samples are in time order", srcSlowpath)
		}
	}
	return nil
}

func validateInterface(p string, ifc *NetInterface) error {
	if err := checkIfname(p+".name", ifc.Name); err != nil {
		return err
	}
	// ifindex is a positive int (net/core/dev.c dev_index_reserve); 0 in
	// a hand-written snapshot means unknown.
	if ifc.Ifindex < 0 {
		return invalidNumber(p+".ifindex", ifc.Ifindex, "negative", "", "net/core/dev.c dev_index_reserve")
	}
	if ifc.Iflink < 0 {
		return invalidNumber(p+".iflink", ifc.Iflink, "negative", "", "net/core/dev.c dev_get_iflink")
	}
	// IFLA_INFO_KIND is rtnl_link_ops.kind, a short word (veth, bond).
	if err := checkToken(p+".kind", ifc.Kind, maxWord, true); err != nil {
		return err
	}
	// dev_set_mtu refuses a negative MTU (net/core/dev.c dev_validate_mtu).
	if ifc.MTU < 0 || ifc.MTU > math.MaxInt32 {
		return invalidNumber(p+".mtu", ifc.MTU, "not an MTU", "want 0 to 2147483647", "net/core/dev.c dev_validate_mtu")
	}
	if err := checkOptEnum(p+".operstate", ifc.OperState, operstates...); err != nil {
		return err
	}
	if s := ifc.SpeedMbps; s != nil && (*s < 0 || *s > maxUint32) {
		return invalidNumber(p+".speed_mbps", *s, "not a link speed", "want 0 to 4294967295 Mb/s", "include/uapi/linux/ethtool.h ethtool_link_settings.speed (u32)")
	}
	// ETHTOOL_GDRVINFO fills char[32] fields with strscpy
	// (include/uapi/linux/ethtool.h struct ethtool_drvinfo): at most 31 bytes.
	for _, f := range []struct{ p, v string }{{".driver", ifc.Driver}, {".driver_version", ifc.DriverVersion}, {".firmware_version", ifc.FirmwareVersion}, {".bus_info", ifc.BusInfo}} {
		if len(f.v) > 31 {
			return invalidString(p+f.p, f.v, "too long for ETHTOOL_GDRVINFO", fmt.Sprintf("%d bytes, at most 31", len(f.v)), "include/uapi/linux/ethtool.h struct ethtool_drvinfo")
		}
		if err := checkText(p+f.p, f.v, 31, false); err != nil {
			return err
		}
	}
	if ifc.Master != "" {
		if err := checkIfname(p+".master", ifc.Master); err != nil {
			return err
		}
	}
	for i, n := range ifc.Lower {
		if err := checkIfname(fmt.Sprintf("%s.lower[%d]", p, i), n); err != nil {
			return err
		}
	}
	for i, n := range ifc.Upper {
		if err := checkIfname(fmt.Sprintf("%s.upper[%d]", p, i), n); err != nil {
			return err
		}
	}
	// No rule ties a ring's or a channel count's current value to its
	// maximum: ethtool refuses to set more (net/ethtool/rings.c,
	// channels.c), but a driver may lower its maximum below the current
	// value afterwards (netdevsim's debugfs does), and the snapshot must
	// hold what the kernel reports.
	for i, q := range ifc.Queues {
		qp := fmt.Sprintf("%s.queues[%d]", p, i)
		if err := checkQueueName(qp+".name", q.Name); err != nil {
			return err
		}
		if err := checkCPUMask(qp+".rps_cpus", q.RPSCPUs); err != nil {
			return err
		}
		if err := checkCPUMask(qp+".xps_cpus", q.XPSCPUs); err != nil {
			return err
		}
		if q.RPSFlowCnt < 0 {
			return invalidNumber(qp+".rps_flow_cnt", q.RPSFlowCnt, "negative", "", "net/core/net-sysfs.c show_rps_dev_flow_table_cnt")
		}
	}
	for i, irq := range ifc.IRQs {
		ip := fmt.Sprintf("%s.irqs[%d]", p, i)
		if irq.Number < 0 {
			return invalidNumber(ip+".number", irq.Number, "negative", "", "kernel/irq/proc.c show_interrupts")
		}
		if err := checkText(ip+".name", irq.Name, maxLine, false); err != nil {
			return err
		}
		if err := checkCPUList(ip+".affinity_list", irq.AffinityList); err != nil {
			return err
		}
	}
	for i, u := range ifc.Unsupported {
		if err := checkEnum(fmt.Sprintf("%s.unsupported[%d]", p, i), u, "drvinfo", "ring", "channels", "stats"); err != nil {
			return err
		}
	}
	return nil
}

// checkQueueName: queues/rx-%u and tx-%u (net/core/net-sysfs.c
// rx_queue_add_kobject, netdev_queue_add_kobject).
func checkQueueName(p, s string) error {
	if n, ok := strings.CutPrefix(s, "rx-"); ok && canonicalUint(n, math.MaxUint32) {
		return nil
	}
	if n, ok := strings.CutPrefix(s, "tx-"); ok && canonicalUint(n, math.MaxUint32) {
		return nil
	}
	return invalidString(p, s, "not a queue name", `want "rx-N" or "tx-N"`, "net/core/net-sysfs.c rx_queue_add_kobject, netdev_queue_add_kobject")
}

// checkCPUMask: rps_cpus and xps_cpus print a bitmap "%*pb": hex digits in
// comma-separated 32-bit groups (lib/bitmap-str.c bitmap_print_to_buf).
func checkCPUMask(p, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isLowerHex(c) || c == ',') {
			return invalidString(p, s, "not a CPU mask", "want hex digits in comma-separated groups", "lib/bitmap-str.c bitmap_print_to_buf (%*pb)")
		}
	}
	return nil
}

// checkCPUList: smp_affinity_list prints "%*pbl": decimal ranges joined
// by commas, e.g. "0-3,8" (kernel/irq/proc.c irq_affinity_list_proc_show).
func checkCPUList(p, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == ',' || c == '-') {
			return invalidString(p, s, "not a CPU list", `want ranges such as "0-3,8"`, "lib/bitmap-str.c bitmap_print_to_buf (%*pbl)")
		}
	}
	return nil
}

func validateSample(p string, smp *NetSample) error {
	if smp.MonotonicNS < 0 {
		return invalidNumber(p+".monotonic_ns", smp.MonotonicNS, "negative", "CLOCK_MONOTONIC starts at boot", "clock_gettime(2)")
	}
	seen := map[string]int{}
	for i := range smp.Interfaces {
		c := &smp.Interfaces[i]
		cp := fmt.Sprintf("%s.interfaces[%d]", p, i)
		if err := checkIfname(cp+".name", c.Name); err != nil {
			return err
		}
		if j, dup := seen[c.Name]; dup {
			return invalidString(cp+".name", c.Name, "names two interfaces", fmt.Sprintf("also %s.interfaces[%d]", p, j), "net/core/dev.c dev_get_valid_name")
		}
		seen[c.Name] = i
		for _, k := range sortedKeys(c.Stats) {
			// Files of /sys/class/net/IF/statistics (net/core/net-sysfs.c).
			if err := checkToken(cp+".stats", k, maxCounter, false); err != nil {
				return err
			}
		}
		for _, k := range sortedKeys(c.Driver) {
			// ethtool -S names are ETH_GSTRING_LEN 32 bytes, possibly unterminated.
			if len(k) > 32 {
				return invalidString(cp+".driver", k, "not an ethtool statistic name", fmt.Sprintf("%d bytes, at most 32", len(k)), "include/uapi/linux/ethtool.h ETH_GSTRING_LEN 32")
			}
			if err := checkText(cp+".driver", k, 32, false); err != nil {
				return err
			}
		}
		if q := c.Qdisc; q != nil {
			// Qdisc_ops.id is char[IFNAMSIZ] (include/net/sch_generic.h).
			if q.Kind == "" || len(q.Kind) > 15 {
				return invalidString(cp+".qdisc.kind", q.Kind, "not a qdisc kind", "1 to 15 bytes", "include/net/sch_generic.h Qdisc_ops.id[IFNAMSIZ]")
			}
			if err := checkToken(cp+".qdisc.kind", q.Kind, 15, false); err != nil {
				return err
			}
		}
	}
	for i, c := range smp.Softnet {
		if c.CPU < 0 {
			return invalidNumber(fmt.Sprintf("%s.softnet[%d].cpu", p, i), c.CPU, "negative", "", "net/core/net-procfs.c softnet_seq_show")
		}
	}
	// softnet_stat prints 9 columns since 2.6.23, up to 15 today
	// (net/core/net-procfs.c softnet_seq_show; docs/snapshot.md); 0 when
	// not read. More from a later kernel are accepted up to a sanity bound.
	if c := smp.SoftnetColumns; c != 0 && (c < 9 || c > maxColumns) {
		return invalidNumber(p+".softnet_columns", c, "not a column count the kernel prints", "want 0 or 9 to 15 (more from a later kernel)", "net/core/net-procfs.c softnet_seq_show")
	}
	for _, k := range sortedKeys(smp.SNMP) {
		// "Group.Name" of /proc/net/snmp and /proc/net/netstat headers.
		g, n, ok := strings.Cut(k, ".")
		if !ok || g == "" || n == "" || strings.Contains(n, ".") {
			return invalidString(p+".snmp", k, "not an SNMP counter name", `want "Group.Name"`, "net/ipv4/proc.c snmp_seq_show, netstat_seq_show")
		}
		if err := checkToken(p+".snmp", k, maxCounter, false); err != nil {
			return err
		}
	}
	return nil
}

// sortedKeys returns m's keys in order, so the first error is the same on
// every run.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
