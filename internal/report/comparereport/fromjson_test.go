package comparereport

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
)

// TestTextFromJSON: a comparison's JSON decodes into the result it was
// written from, as far as every text and markdown line goes, lab crypt's
// annotations (an instruction-count model's label, the tax) included: the
// VM lab renders the model's table from lab crypt's JSON rather than
// running the lab a second time for its text.
func TestTextFromJSON(t *testing.T) {
	plain := fixture(t)
	model := fixture(t)
	shift := 0
	model.Title = "slowpath lab crypt"
	model.Setup = []comparison.Fact{{Key: "backing", Value: "ram:32M (/dev/ram0)"}}
	model.Figures, model.FiguresNote, model.IcountShift = "icount-model", "instruction-count model (qemu -icount shift=0): not a measurement", &shift
	model.NotRun = []comparison.NotRun{{Name: "high_priority", Reason: "needs dm-crypt target v1.26.0"}}
	if err := comparison.AssessTax(model, comparison.TaxInput{Limit: cryptotax.Limit{BytesPerSecPerCore: 1e9, Source: "af_alg"}, Layers: []int{0, 1, 1},
		Shape: &comparison.TaxShape{IOPS: []string{"read_iops"}, BytesPerIO: 4096, QueueDepth: 8}}); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*comparison.Result{"plain": plain, "model": model} {
		var js bytes.Buffer
		if err := Write(&js, r, "json"); err != nil {
			t.Fatal(err)
		}
		var back comparison.Result
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"text", "markdown"} {
			var want, got bytes.Buffer
			if err := Write(&want, r, format); err != nil {
				t.Fatal(err)
			}
			if err := Write(&got, &back, format); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s: %s from the JSON differs:\n%s\nwant:\n%s", name, format, got.String(), want.String())
			}
		}
	}
}
