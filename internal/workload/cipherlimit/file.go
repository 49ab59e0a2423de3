package cipherlimit

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// ReadFile reads what `slowpath lab crypto-limit --format json` printed, so
// the cipher can be measured once on an idle machine and reused; emulated
// is its "emulated_cpu". A file of anything else is refused by name.
func ReadFile(path string) (r *Result, emulated bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	var f struct {
		Result
		Emulated bool `json:"emulated_cpu"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, false, fmt.Errorf("%s: not the JSON of slowpath lab crypto-limit --format json: %w", path, err)
	}
	if f.Algorithm != "xts(aes)" || !(f.PerCore > 0) || math.IsInf(f.PerCore, 0) {
		return nil, false, fmt.Errorf("%s: want the JSON of slowpath lab crypto-limit --format json (algorithm xts(aes), bytes_per_sec_per_core above 0)", path)
	}
	return &f.Result, f.Emulated, nil
}
