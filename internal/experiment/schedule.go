package experiment

// Schedule is the order of an experiment's runs over sides 0..n-1, runs
// rounds: rounds alternate forward and backward (A B, B A, A B, ... for
// two; A B C, C B A for three), so a drift over time (page cache warming,
// a noisy neighbour, thermal limits) lands on every side alike instead of
// on whichever ran last.
func Schedule(sides, runs int) []int {
	var out []int
	for r := range runs {
		for i := range sides {
			if r%2 == 0 {
				out = append(out, i)
			} else {
				out = append(out, sides-1-i)
			}
		}
	}
	return out
}
