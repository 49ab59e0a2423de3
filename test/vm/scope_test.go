package vm

import (
	"slices"
	"testing"
)

// TestScopeBoots: which kernels each scope boots, against the whole
// matrix whatever is selected (no VM is started).
func TestScopeBoots(t *testing.T) {
	all := []string{"5.10", "6.1", "6.12"}
	ks := []*kernelLab{
		{Name: "5.10", Expect: &Expect{Group: GroupKernelDependent}},
		{Name: "6.1", Expect: &Expect{Group: GroupFull}},
		{Name: "6.12", Expect: &Expect{Group: GroupKernelDependent}},
	}
	for sc, want := range map[scope][]string{
		fullSet:          {"6.1"},
		everyKernel:      {"5.10", "6.1", "6.12"},
		oldest:           {"5.10"},
		fullSetAndNewest: {"6.1", "6.12"},
	} {
		var got []string
		for _, k := range ks {
			if sc.boots(k, all) {
				got = append(got, k.Name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("scope %d boots %v, want %v", sc, got, want)
		}
	}
	// 6.12 alone selected is still not the oldest.
	if oldest.boots(ks[2], all) {
		t.Error("oldest boots 6.12")
	}
	if olderRelease("6.12", "6.2") || !olderRelease("5.10", "6.1") || !olderRelease("6.1", "6.12") {
		t.Error("olderRelease compares dotted numbers")
	}
}
