package dropcounter

import "testing"

// TestLicense: the programs carry the dual licence the C source declares;
// the kernel takes "Dual MIT/GPL" as GPL-compatible, which the GPL-only
// helpers they call require (a regenerated object must keep it).
func TestLicense(t *testing.T) {
	spec, err := loadBpf()
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Programs) == 0 {
		t.Fatal("no programs in the object")
	}
	for name, p := range spec.Programs {
		if p.License != "Dual MIT/GPL" {
			t.Errorf("program %s: licence %q, want Dual MIT/GPL", name, p.License)
		}
	}
}
