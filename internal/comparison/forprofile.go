package comparison

// Declared is what a workload declares for its verdict
// (internal/workload/profile's Spec, as rows): the rows that decide it,
// in order, the rows that must not get worse, and its fixed-size I/O
// phase for the encryption tax.
type Declared struct {
	Primary, Guards []string
	Shape           *TaxShape
	// NoShape says why there is no shape; "" with no Shape: no tax at all.
	NoShape string
}

// TaxSource is what the tax needs beyond the comparison: each side's
// encryption layers and, asked only when some side has more than the
// first, the cipher's cost (Limit, Caveat and Cores of a TaxInput).
type TaxSource struct {
	Layers []int
	Cipher func() (TaxInput, error)
}

// ForProfile is the one verdict step of compare, lab crypt and fix
// --prove: compare the sides on the workload's declared metrics, then,
// when tax is set, the workload declares a shape (or why it has none) and
// some side has more encryption layers than the first, the expected
// encryption tax.
func ForProfile(sides []Side, d Declared, o Options, tax *TaxSource) (*Result, error) {
	o.Primary, o.Guards = d.Primary, d.Guards
	r, err := Compare(sides, o)
	if err != nil {
		return nil, err
	}
	if tax == nil || (d.Shape == nil && d.NoShape == "") || !NeedsTax(tax.Layers) {
		return r, nil
	}
	in, err := tax.Cipher()
	if err != nil {
		return nil, err
	}
	in.Layers, in.Shape, in.NoShape = tax.Layers, d.Shape, d.NoShape
	if err := AssessTax(r, in); err != nil {
		return nil, err
	}
	return r, nil
}
