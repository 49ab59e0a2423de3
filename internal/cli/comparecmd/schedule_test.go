package comparecmd

import (
	"slices"
	"testing"
)

func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		targets, runs int
		want          []int
	}{
		{2, 3, []int{0, 1, 1, 0, 0, 1}},
		{3, 2, []int{0, 1, 2, 2, 1, 0}},
		{2, 0, nil},
	} {
		if got := Schedule(tc.targets, tc.runs); !slices.Equal(got, tc.want) {
			t.Errorf("Schedule(%d, %d) = %v, want %v", tc.targets, tc.runs, got, tc.want)
		}
	}
	// Over an even number of rounds every side has the same mean position.
	pos := map[int]int{}
	for i, s := range Schedule(2, 10) {
		pos[s] += i
	}
	if pos[0] != pos[1] {
		t.Errorf("mean positions differ: %v", pos)
	}
}
