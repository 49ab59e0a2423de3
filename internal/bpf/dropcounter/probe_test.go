package dropcounter

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/testing/btftest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// kernelBTF builds a BTF blob with the tracepoint prototype of one kernel
// generation: params are the arguments after void *__data.
func kernelBTF(t *testing.T, withTracepoint bool, params ...btf.FuncParam) *btf.Spec {
	t.Helper()
	if !withTracepoint {
		return btftest.Spec(t, &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed})
	}
	return btftest.Spec(t, btftest.KfreeSkbTracepoint(params...))
}

// TestProbeSpec tells the three generations of skb:kfree_skb apart from
// BTF alone, as distributions backport drop reasons to older versions.
func TestProbeSpec(t *testing.T) {
	voidp := &btf.Pointer{Target: (*btf.Void)(nil)}
	skb := btf.FuncParam{Name: "skb", Type: &btf.Pointer{Target: &btf.Struct{Name: "sk_buff"}}}
	loc := btf.FuncParam{Name: "location", Type: voidp}
	reasons := &btf.Enum{Name: "skb_drop_reason", Size: 4, Values: []btf.EnumValue{
		{Name: "SKB_NOT_DROPPED_YET", Value: 0}, {Name: "SKB_CONSUMED", Value: 1},
		{Name: "SKB_DROP_REASON_NOT_SPECIFIED", Value: 2}, {Name: "SKB_DROP_REASON_CPU_BACKLOG", Value: 71},
		{Name: "SKB_DROP_REASON_MAX", Value: 128}, {Name: "SKB_DROP_REASON_SUBSYS_MASK", Value: 0xffff0000},
	}}
	reason := btf.FuncParam{Name: "reason", Type: reasons}
	rxsk := btf.FuncParam{Name: "rx_sk", Type: &btf.Pointer{Target: &btf.Struct{Name: "sock"}}}
	names := map[uint32]string{0: "NOT_DROPPED_YET", 1: "CONSUMED", 2: "NOT_SPECIFIED", 71: "CPU_BACKLOG"}

	for _, tc := range []struct {
		name string
		spec *btf.Spec
		want dropreport.Kernel
		err  error
	}{
		{"5.10 (skb, location)", kernelBTF(t, true, skb, loc), dropreport.Kernel{Prototype: "kfree_skb(struct sk_buff *, void *)"}, nil},
		{"6.1 (skb, location, reason)", kernelBTF(t, true, skb, loc, reason),
			dropreport.Kernel{HasReasons: true, Reasons: names, Prototype: "kfree_skb(struct sk_buff *, void *, enum skb_drop_reason)"}, nil},
		{"6.12 (skb, location, reason, rx_sk)", kernelBTF(t, true, skb, loc, reason, rxsk),
			dropreport.Kernel{HasReasons: true, Reasons: names, Prototype: "kfree_skb(struct sk_buff *, void *, enum skb_drop_reason, struct sock *)"}, nil},
		{"reason moved (skb, location, rx_sk, reason)", kernelBTF(t, true, skb, loc, rxsk, reason),
			dropreport.Kernel{Prototype: "kfree_skb(struct sk_buff *, void *, struct sock *, enum skb_drop_reason)"}, ErrReasonMoved},
		{"no tracepoint", kernelBTF(t, false), dropreport.Kernel{}, ErrTracepointMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probeSpec(tc.spec)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestPrivilegeErrors runs Start in a child process without capabilities,
// and with only CAP_BPF, and expects the error to name what is missing.
func TestPrivilegeErrors(t *testing.T) {
	for _, tc := range []struct {
		caps []string
		want string
	}{
		{nil, "needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"},
		{[]string{"--inh-caps=+bpf", "--ambient-caps=+bpf"}, "needs CAP_PERFMON (or CAP_SYS_ADMIN)"},
	} {
		out := testenv.RunUnprivileged(t, "SLOWPATH_DROPS_CHILD=1", tc.caps...)
		if !strings.Contains(string(out), "start error: ") || !strings.Contains(string(out), tc.want) {
			t.Errorf("caps %v: want an error containing %q, child said:\n%s", tc.caps, tc.want, out)
		}
	}
}

// TestMain runs the child of TestPrivilegeErrors in place of the tests
// when asked to: it tries Start and says how it failed.
func TestMain(m *testing.M) {
	if os.Getenv("SLOWPATH_DROPS_CHILD") == "1" {
		tr, err := Start(Options{})
		if err == nil {
			tr.Close()
			fmt.Println("Start succeeded without privileges")
			os.Exit(1)
		}
		fmt.Printf("start error: %v\n", err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
