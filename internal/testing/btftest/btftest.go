// Package btftest builds synthetic kernel BTF for the tests of the eBPF
// loaders, so that each kernel generation's prototypes can be checked on
// any machine. It is imported by tests only.
package btftest

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// Spec marshals types into a BTF blob and loads it back, as the kernel's
// /sys/kernel/btf/vmlinux would be loaded.
func Spec(tb testing.TB, types ...btf.Type) *btf.Spec {
	tb.Helper()
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	return spec
}

// KfreeSkbTracepoint is the typedef the kernel emits for the skb:kfree_skb
// tracepoint's BTF-enabled prototype: params are the arguments after the
// leading void *__data (include/trace/bpf_probe.h, DEFINE_EVENT).
func KfreeSkbTracepoint(params ...btf.FuncParam) btf.Type {
	voidp := &btf.Pointer{Target: (*btf.Void)(nil)}
	proto := &btf.FuncProto{Return: (*btf.Void)(nil), Params: append([]btf.FuncParam{{Name: "__data", Type: voidp}}, params...)}
	return &btf.Typedef{Name: "btf_trace_kfree_skb", Type: &btf.Pointer{Target: proto}}
}
