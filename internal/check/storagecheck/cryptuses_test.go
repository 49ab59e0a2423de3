package storagecheck

import (
	"testing"

	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// TestCryptUsesOfLastModel: the checks of one model share one cryptUses;
// another model, even with the same content, gets its own.
func TestCryptUsesOfLastModel(t *testing.T) {
	model := func(name string) *storagemodel.Model {
		return &storagemodel.Model{Paths: []storagemodel.Path{{MountPoint: "/srv", Layers: []storagemodel.Layer{
			{Kind: storagemodel.LayerFilesystem, MajorMinor: "253:0"},
			{Kind: storagemodel.LayerDMCrypt, Name: name, MajorMinor: "253:0", Depth: 1}}}}}
	}
	a, b := model("a"), model("b")
	_, ua := cryptUses(a)
	_, ua2 := cryptUses(a)
	if len(ua) != 1 || len(ua2) != 1 || ua[0] != ua2[0] {
		t.Fatalf("same model: %v, %v", ua, ua2)
	}
	_, ub := cryptUses(b)
	if len(ub) != 1 || ub[0].layer.Name != "b" {
		t.Fatalf("another model: %+v", ub)
	}
	_, ua3 := cryptUses(a)
	if len(ua3) != 1 || ua3[0].layer.Name != "a" {
		t.Fatalf("the first model again: %+v", ua3)
	}
}
