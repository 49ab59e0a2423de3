package agenttest

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/slowpath/slowpath/internal/cli/agentcmd"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/testing/lockedbuf"
	"github.com/slowpath/slowpath/internal/testing/prometheustest"
	"github.com/slowpath/slowpath/internal/testing/taxtree"
)

// TaxCipher is the one-core AES-XTS figure the tax fleet's agents are
// given (bytes/s): with 16 KiB per I/O, one in flight and 4 CPUs, the
// cipher costs 6.5536 µs per I/O.
const TaxCipher = 2.5e9

// StartTree runs the agent on tr's tree as a DaemonSet would read another
// root: --live-sources off, so nothing live is asked; the DM ioctl is
// answered for the tree (tr.OpenDM) and the cipher figure is given.
func StartTree(t testing.TB, tr *taxtree.Tree, args ...string) string {
	t.Helper()
	return startTree(t, tr, true, args...)
}

// StartTreeUnread runs the agent on tr's tree as the default DaemonSet
// (no CAP_SYS_ADMIN) reads a node: the dm table is not read, so dm-0 is
// dm-crypt by its CRYPT-LUKS2 uuid only.
func StartTreeUnread(t testing.TB, tr *taxtree.Tree, args ...string) string {
	t.Helper()
	return startTree(t, tr, false, args...)
}

func startTree(t testing.TB, tr *taxtree.Tree, readTable bool, args ...string) string {
	t.Helper()
	// The roots as --path.procfs, --path.sysfs and --path.rootfs set them.
	env := &clienv.Env{Stdout: io.Discard, Stderr: &lockedbuf.Buffer{}, FS: tr.FS, Version: "test"}
	return start(t, env, func(ctx context.Context, o *agentcmd.Options) error {
		if readTable {
			o.OpenDM = tr.OpenDM
		} // else: not live (--live-sources off), so the ioctl is not run
		return agentcmd.Run(ctx, env, o)
	}, append([]string{
		"--live-sources", "off", "--cloud", "none", "--collector.cipher.bytes-per-second", fmt.Sprint(TaxCipher),
	}, args...)...)
}

// TaxNode is one node of the tax fleet.
type TaxNode struct {
	Group           string // instance type, attached as a target label
	TopUS, BottomUS uint64 // the awaits its workload keeps
	// TableUnread runs its agent without the dm table (StartTreeUnread).
	TableUnread bool
	Addr        string
}

// Incident and Tuned are the two groups of issue 21: the search incident's
// double encryption (dm-0 at 18 ms over 0.45 ms beneath) and a tuned host
// (+7 µs).
var (
	Incident = TaxNode{Group: "Standard_E16d_v5", TopUS: 18000, BottomUS: 450}
	Tuned    = TaxNode{Group: "r6i.4xlarge", TopUS: 107, BottomUS: 100}
)

// TaxFleet starts one agent per node on its own tree, each tree kept moving
// with the node's awaits (1000 reads of 16 KiB every 50 ms), and returns
// the nodes with their addresses and the targets for Prometheus, labelled
// instance_type as a Kubernetes relabeling of the node label would.
func TaxFleet(t testing.TB, nodes ...TaxNode) ([]TaxNode, []prometheustest.Target) {
	t.Helper()
	var targets []prometheustest.Target
	out := append([]TaxNode(nil), nodes...)
	for i := range out {
		tr := taxtree.Write(t, 4)
		tr.Keep(t, 1000, 16384, out[i].TopUS, out[i].BottomUS)
		out[i].Addr = startTree(t, tr, !out[i].TableUnread)
		targets = append(targets, prometheustest.Target{Addr: out[i].Addr, Labels: map[string]string{"instance_type": out[i].Group}})
	}
	return out, targets
}
