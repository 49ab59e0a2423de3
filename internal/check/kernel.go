package check

import (
	"strconv"
	"strings"
)

// KernelVersion reads major and minor from a release such as
// "6.1.0-27-cloud-amd64" or "6.10-rc1". Checks and fix plans gate on it
// (dm-crypt flags since 5.9, BTF tracepoints since 5.5).
func KernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	maj, err1 := strconv.Atoi(parts[0])
	mn := parts[1]
	if i := strings.IndexFunc(mn, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mn = mn[:i]
	}
	mnr, err2 := strconv.Atoi(mn)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return maj, mnr, true
}
