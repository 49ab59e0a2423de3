package check

import "testing"

func TestKernelVersion(t *testing.T) {
	for in, want := range map[string][3]int{
		"6.1.0-50-cloud-amd64": {6, 1, 1}, "5.15.0-1074-azure": {5, 15, 1}, "5.9": {5, 9, 1},
		"5.10.0+": {5, 10, 1}, "4.19.0-rc1": {4, 19, 1}, "6.10-rc1": {6, 10, 1},
		"": {0, 0, 0}, "4": {0, 0, 0}, "6": {0, 0, 0}, "x.y": {0, 0, 0},
	} {
		maj, mnr, ok := KernelVersion(in)
		if maj != want[0] || mnr != want[1] || ok != (want[2] == 1) {
			t.Errorf("KernelVersion(%q) = %d.%d %v, want %v", in, maj, mnr, ok, want)
		}
	}
}
