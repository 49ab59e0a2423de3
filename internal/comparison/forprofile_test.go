package comparison_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
)

// TestForProfile: the one verdict step decides on the profile's declared
// rows and asks for the cipher only when the tax is computed: a side with
// more encryption layers and a shape (or a reason for none).
func TestForProfile(t *testing.T) {
	plain, luks, plain2 := dbCommitSide(t, "plain", 0, 85e3, 85e3), dbCommitSide(t, "luks", 1, 13.3e3, 13.3e3), dbCommitSide(t, "plain2", 0, 85e3, 85e3)
	d := experiment.Declared("db-commit")
	asked := 0
	src := func(sides ...comparison.Side) *comparison.TaxSource {
		return &comparison.TaxSource{Layers: comparison.StorageLayers(sides), Cipher: func() (comparison.TaxInput, error) {
			asked++
			return comparison.TaxInput{Limit: cryptotax.Limit{BytesPerSecPerCore: 1e9, Source: "test"}}, nil
		}}
	}

	r, err := comparison.ForProfile([]comparison.Side{plain, luks}, d, comparison.Options{}, src(plain, luks))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Primary, []string{"commit-1 commit_ops_per_sec"}) || r.Tax == nil || r.Tax.Shape == nil || len(r.Tax.Sides) != 1 || asked != 1 {
		t.Errorf("encrypted side: primary %v, tax %+v, cipher asked %d times", r.Primary, r.Tax, asked)
	}

	// Same layers: no tax, no cipher measurement (compare's output stays
	// deterministic); no tax source (fix --prove): no tax either.
	for _, tax := range []*comparison.TaxSource{src(plain, plain2), nil} {
		if r, err := comparison.ForProfile([]comparison.Side{plain, plain2}, d, comparison.Options{}, tax); err != nil || r.Tax != nil {
			t.Errorf("no tax wanted: %+v, %v", r.Tax, err)
		}
	}
	if asked != 1 {
		t.Errorf("cipher asked %d times, want 1", asked)
	}

	// No shape: no tax unless the front end says why (lab crypt does).
	noShape := comparison.Declared{Primary: d.Primary}
	if r, _ := comparison.ForProfile([]comparison.Side{plain, luks}, noShape, comparison.Options{}, src(plain, luks)); r.Tax != nil {
		t.Errorf("tax without a shape: %+v", r.Tax)
	}
	noShape.NoShape = "no fixed-size phase"
	if r, _ := comparison.ForProfile([]comparison.Side{plain, luks}, noShape, comparison.Options{}, src(plain, luks)); r.Tax == nil || r.Tax.NotComputed != "no fixed-size phase" {
		t.Errorf("tax %+v, want not computed with the reason", r.Tax)
	}

	// A cipher that cannot be measured fails the step.
	bad := &comparison.TaxSource{Layers: []int{0, 1}, Cipher: func() (comparison.TaxInput, error) { return comparison.TaxInput{}, errors.New("no AF_ALG") }}
	if _, err := comparison.ForProfile([]comparison.Side{plain, luks}, d, comparison.Options{}, bad); err == nil {
		t.Error("no error from a failed cipher measurement")
	}
}
