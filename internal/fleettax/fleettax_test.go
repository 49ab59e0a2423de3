package fleettax

import "testing"

func TestMedian(t *testing.T) {
	ms := func(v ...float64) []*Mount {
		var out []*Mount
		for _, x := range v {
			out = append(out, &Mount{Ratio: x})
		}
		return out
	}
	r := func(m *Mount) float64 { return m.Ratio }
	for _, tc := range []struct {
		in   []*Mount
		want float64
	}{{ms(3), 3}, {ms(5, 1, 3), 3}, {ms(4, 1, 3, 2), 2.5}} {
		if got := median(tc.in, r); got != tc.want {
			t.Errorf("median = %v, want %v", got, tc.want)
		}
	}
}
