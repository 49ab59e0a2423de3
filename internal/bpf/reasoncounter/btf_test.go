package reasoncounter

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/slowpath/slowpath/internal/testing/btftest"
)

// TestReasonArgFromBTF: where the reason is read from follows each
// kernel generation's prototypes (include/trace/events/skb.h and
// net/core/skbuff.c of 5.10, 6.1 and 6.12), read from BTF, not assumed.
func TestReasonArgFromBTF(t *testing.T) {
	voidp := &btf.Pointer{Target: (*btf.Void)(nil)}
	skb := btf.FuncParam{Name: "skb", Type: &btf.Pointer{Target: &btf.Struct{Name: "sk_buff"}}}
	sk := btf.FuncParam{Name: "sk", Type: &btf.Pointer{Target: &btf.Struct{Name: "sock"}}}
	loc := btf.FuncParam{Name: "location", Type: voidp}
	reasons := &btf.Enum{Name: "skb_drop_reason", Size: 4, Values: []btf.EnumValue{{Name: "SKB_DROP_REASON_NOT_SPECIFIED", Value: 2}}}
	reason := btf.FuncParam{Name: "reason", Type: reasons}
	rxsk := btf.FuncParam{Name: "rx_sk", Type: &btf.Pointer{Target: &btf.Struct{Name: "sock"}}}
	fn := func(name string, params ...btf.FuncParam) btf.Type {
		return &btf.Func{Name: name, Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: (*btf.Void)(nil), Params: params}}
	}
	tests := []struct {
		name          string
		spec          *btf.Spec
		tpArg         int16
		tpErr         error
		fentry        string
		fentryArg     int16
		fentryRefused bool
	}{
		{name: "5.10", spec: btftest.Spec(t, btftest.KfreeSkbTracepoint(skb, loc), fn("kfree_skb", skb)),
			tpErr: ErrNoDropReasons, fentryRefused: true},
		{name: "6.1", spec: btftest.Spec(t, btftest.KfreeSkbTracepoint(skb, loc, reason), fn("kfree_skb_reason", skb, reason)),
			tpArg: 2, fentry: "kfree_skb_reason", fentryArg: 1},
		// 6.12: kfree_skb_reason is a static inline calling sk_skb_reason_drop(NULL, ...).
		{name: "6.12", spec: btftest.Spec(t, btftest.KfreeSkbTracepoint(skb, loc, reason, rxsk), fn("sk_skb_reason_drop", sk, skb, reason)),
			tpArg: 2, fentry: "sk_skb_reason_drop", fentryArg: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arg, err := tracepointReasonArg(tt.spec)
			if !errors.Is(err, tt.tpErr) || (err == nil && arg != tt.tpArg) {
				t.Errorf("tp_btf: argument %d, %v; want %d, %v", arg, err, tt.tpArg, tt.tpErr)
			}
			name, farg, err := dropFunction(tt.spec)
			switch {
			case tt.fentryRefused && err == nil:
				t.Errorf("fentry: %s argument %d on a kernel without drop reasons", name, farg)
			case !tt.fentryRefused && (err != nil || name != tt.fentry || farg != tt.fentryArg):
				t.Errorf("fentry: %s argument %d, %v; want %s argument %d", name, farg, err, tt.fentry, tt.fentryArg)
			}
		})
	}
}
