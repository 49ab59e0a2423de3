package network

import (
	"bytes"
	"os"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// tracefsRoots are where tracefs is mounted when it is; the collector never
// mounts it (that is a change to the host).
var tracefsRoots = [][]string{{"kernel", "tracing"}, {"kernel", "debug", "tracing"}}

// readDropReasons decides whether skb drops carry a reason (kernel 5.17+
// upstream, but distributions backport, so the version proves nothing).
// First choice: the kfree_skb tracepoint format file, which lists a
// "reason" field when the kernel has it. When tracefs is not mounted,
// kernel BTF naming enum skb_drop_reason is the next best signal.
func readDropReasons(f hostfs.FS) *snapshot.DropReasons {
	for _, root := range tracefsRoots {
		p := f.SysPath(append(root, "events", "skb", "kfree_skb", "format")...)
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if formatHasReason(b) {
			return &snapshot.DropReasons{Status: "yes", Source: p, Detail: "kfree_skb tracepoint has a reason field"}
		}
		return &snapshot.DropReasons{Status: "no", Source: p, Detail: "kfree_skb tracepoint has no reason field"}
	}
	detail := "tracefs not mounted"
	p := f.SysPath("kernel", "btf", "vmlinux")
	b, err := os.ReadFile(p)
	switch {
	case err != nil && hostfs.Classify(err) == hostfs.KindMissing:
		return &snapshot.DropReasons{Status: "unknown", Detail: detail + "; no kernel BTF at " + p}
	case err != nil:
		return &snapshot.DropReasons{Status: "unknown", Detail: detail + "; " + err.Error()}
	case bytes.Contains(b, []byte("\x00skb_drop_reason\x00")):
		return &snapshot.DropReasons{Status: "yes", Source: p, Detail: detail + "; kernel BTF has enum skb_drop_reason"}
	default:
		return &snapshot.DropReasons{Status: "no", Source: p, Detail: detail + "; kernel BTF has no enum skb_drop_reason"}
	}
}

// formatHasReason looks for the reason field in a tracepoint format file:
// "field:enum skb_drop_reason reason;	offset:36;	size:4;	signed:0;".
func formatHasReason(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		decl, _, _ := strings.Cut(strings.TrimPrefix(line, "field:"), ";")
		f := strings.Fields(decl)
		if len(f) > 0 && f[len(f)-1] == "reason" {
			return true
		}
	}
	return false
}
