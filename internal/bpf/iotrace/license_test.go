package iotrace

import (
	"testing"

	"github.com/slowpath/slowpath/internal/bpf/bpfload"
)

// TestLicense: the programs carry the dual licence the C source declares
// (bpfload.License); a regenerated object must keep it.
func TestLicense(t *testing.T) {
	spec, err := loadBpf()
	if err != nil {
		t.Fatal(err)
	}
	if err := bpfload.CheckLicense(spec); err != nil {
		t.Error(err)
	}
}
