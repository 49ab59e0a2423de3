package btftest

import (
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestKfreeSkbTracepointRoundTrip: the typedef survives marshalling and
// keeps __data first, then the given parameters in order.
func TestKfreeSkbTracepointRoundTrip(t *testing.T) {
	skb := btf.FuncParam{Name: "skb", Type: &btf.Pointer{Target: &btf.Struct{Name: "sk_buff"}}}
	loc := btf.FuncParam{Name: "location", Type: &btf.Pointer{Target: (*btf.Void)(nil)}}
	spec := Spec(t, KfreeSkbTracepoint(skb, loc))
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_kfree_skb", &td); err != nil {
		t.Fatal(err)
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		t.Fatalf("typedef of %T, want a pointer", td.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok {
		t.Fatalf("pointer to %T, want a function prototype", ptr.Target)
	}
	var names []string
	for _, p := range proto.Params {
		names = append(names, p.Name)
	}
	if len(names) != 3 || names[0] != "__data" || names[1] != "skb" || names[2] != "location" {
		t.Errorf("parameters %q, want [__data skb location]", names)
	}
}

// TestSpecMissingType: a type not given is not found, so a test built
// on Spec sees the kernel without it.
func TestSpecMissingType(t *testing.T) {
	spec := Spec(t, &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed})
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_kfree_skb", &td); err == nil {
		t.Error("found btf_trace_kfree_skb in a spec without it")
	}
}
