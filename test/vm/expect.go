package vm

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Expect is what one kernel of the matrix offers, as the scenarios assert
// it: kernels/NAME.expect next to NAME.pin. Scenarios read these facts
// instead of testing a version number; each line cites where the fact
// comes from in the kernel's source.
type Expect struct {
	// Group is which scenarios boot this kernel: GroupFull (every
	// scenario) or GroupKernelDependent (those whose outcome turns on a
	// kernel fact; docs/testing.md lists them).
	Group string
	// DropReasons: the kfree_skb tracepoint carries enum skb_drop_reason.
	DropReasons bool
	// DropFunction is the function a reason-counting fentry program
	// attaches to (kfree_skb_reason, sk_skb_reason_drop); "" when none.
	DropFunction string
	// BacklogDropSite is the function that frees a packet the input
	// backlog (netdev_max_backlog) refused: the kfree_skb location.
	BacklogDropSite string
	// CryptTarget is the dm-crypt target version (`dmsetup targets`).
	CryptTarget [3]uint32
	// CryptVariants are the lab's default variants this kernel can set up,
	// in the lab's order.
	CryptVariants []string
	// XTSDriver is the highest-priority xts(aes) driver in /proc/crypto
	// once aesni_intel is loaded.
	XTSDriver string
	// SoftnetColumns is the column count of /proc/net/softnet_stat.
	SoftnetColumns int
	// NetdevsimRing: netdevsim answers ETHTOOL_GRINGPARAM/SRINGPARAM; when
	// not, NetdevsimRingWhy says why, and the ring scenario is skipped on
	// this kernel with that reason.
	NetdevsimRing    bool
	NetdevsimRingWhy string
	// ModelIOPSTolerance is how far IOPS and mean latencies of the
	// instruction-count model may move between two boots (TestCryptLabModel),
	// as a fraction: measured per kernel, with margin.
	ModelIOPSTolerance float64
}

// Scenario groups of Expect.Group.
const (
	GroupFull            = "full"
	GroupKernelDependent = "kernel-dependent"
)

// ReadExpect parses kernels/NAME.expect.
func ReadExpect(path string) (*Expect, error) {
	return parseFile(path, parseExpect)
}

var (
	versionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)$`)
	symbolRE  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	driverRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
)

// parseExpect reads "key value..." lines; '#' starts a comment. Every key
// is required exactly once, so a new fact cannot be forgotten for one
// kernel.
func parseExpect(r io.Reader) (*Expect, error) {
	e := &Expect{}
	seen := map[string]bool{}
	err := scanDirectives(r, func(n int, _ string, f []string) error {
		key, args := f[0], f[1:]
		if seen[key] {
			return fmt.Errorf("line %d: %s given twice", n, key)
		}
		seen[key] = true
		bad := func(want string) error {
			return fmt.Errorf("line %d: %s wants %s, got %q", n, key, want, strings.Join(args, " "))
		}
		one := len(args) == 1
		switch key {
		case "group":
			if !one || (args[0] != GroupFull && args[0] != GroupKernelDependent) {
				return bad(GroupFull + " or " + GroupKernelDependent)
			}
			e.Group = args[0]
		case "drop_reasons":
			if !one || (args[0] != "yes" && args[0] != "no") {
				return bad("yes or no")
			}
			e.DropReasons = args[0] == "yes"
		case "drop_function":
			if !one || (args[0] != "-" && !symbolRE.MatchString(args[0])) {
				return bad("a kernel function or -")
			}
			if args[0] != "-" {
				e.DropFunction = args[0]
			}
		case "backlog_drop_site":
			if !one || !symbolRE.MatchString(args[0]) {
				return bad("a kernel function")
			}
			e.BacklogDropSite = args[0]
		case "crypt_target":
			m := []string(nil)
			if one {
				m = versionRE.FindStringSubmatch(args[0])
			}
			if m == nil {
				return bad("a version X.Y.Z")
			}
			for i := range 3 {
				v, err := strconv.ParseUint(m[i+1], 10, 32)
				if err != nil {
					return bad("a version X.Y.Z")
				}
				e.CryptTarget[i] = uint32(v)
			}
		case "crypt_variants":
			if len(args) == 0 {
				return bad("variant names")
			}
			e.CryptVariants = args
		case "xts_driver":
			if !one || !driverRE.MatchString(args[0]) {
				return bad("a crypto driver name")
			}
			e.XTSDriver = args[0]
		case "softnet_columns":
			c, err := strconv.Atoi(strings.Join(args, " "))
			if err != nil || c < 9 || c > 64 {
				return bad("a column count from 9 to 64")
			}
			e.SoftnetColumns = c
		case "netdevsim_ring":
			switch {
			case one && args[0] == "yes":
				e.NetdevsimRing = true
			case len(args) > 1 && args[0] == "no":
				e.NetdevsimRingWhy = strings.Join(args[1:], " ")
			default:
				return bad("yes, or no and the reason")
			}
		case "model_iops_tolerance":
			v, err := strconv.ParseFloat(strings.Join(args, " "), 64)
			if err != nil || v <= 0 || v > 0.05 {
				return bad("a fraction above 0 up to 0.05")
			}
			e.ModelIOPSTolerance = v
		default:
			return fmt.Errorf("line %d: unknown key %q", n, key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"group", "drop_reasons", "drop_function", "backlog_drop_site", "crypt_target", "crypt_variants", "xts_driver", "softnet_columns", "netdevsim_ring", "model_iops_tolerance"} {
		if !seen[k] {
			return nil, fmt.Errorf("no %s line", k)
		}
	}
	if e.DropReasons != (e.DropFunction != "") {
		return nil, fmt.Errorf("drop_reasons and drop_function disagree: a kernel with reasons has a function that takes them, one without has none (-)")
	}
	return e, nil
}

// CryptTargetString is the version as dmsetup and the lab print it.
func (e *Expect) CryptTargetString() string {
	return fmt.Sprintf("v%d.%d.%d", e.CryptTarget[0], e.CryptTarget[1], e.CryptTarget[2])
}

// KernelNames lists the kernels of the matrix: the NAME of every
// kernels/NAME.pin in dir, in version order.
func KernelNames(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*.pin"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".pin"))
	}
	sortVersions(out)
	return out, nil
}

// sortVersions orders "5.10" < "6.1" < "6.12" numerically.
func sortVersions(v []string) {
	key := func(s string) []int {
		var k []int
		for _, p := range strings.Split(s, ".") {
			n, _ := strconv.Atoi(p)
			k = append(k, n)
		}
		return k
	}
	less := func(a, b string) bool {
		ka, kb := key(a), key(b)
		for i := 0; i < len(ka) && i < len(kb); i++ {
			if ka[i] != kb[i] {
				return ka[i] < kb[i]
			}
		}
		return len(ka) < len(kb)
	}
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && less(v[j], v[j-1]); j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}
