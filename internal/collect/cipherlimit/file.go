package cipherlimit

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/recordkind"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// File is the crypto-limit file: what `slowpath lab crypto-limit --format
// json` prints, and what bench and compare read back with --cipher-limit
// so the cipher is measured once on an idle machine. It is this package's
// one owner of that format.
type File struct {
	*Result
	// Emulated says the CPU was emulated: the figure is no measurement of
	// a real one.
	Emulated bool `json:"emulated_cpu"`
	// Figures is what the figures are ("measured", "emulated",
	// "icount-model") and FiguresNote the label over them.
	Figures     string `json:"figures"`
	FiguresNote string `json:"figures_note,omitempty"`
}

// Write writes f as indented JSON.
func (f *File) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// ReadFile reads and checks a crypto-limit file, or standard input for
// "-" (stdfile).
func ReadFile(path string) (*File, error) {
	b, err := stdfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	path = stdfile.Name(path)
	var f File
	err = json.Unmarshal(b, &f)
	if err != nil || f.Result == nil {
		// Another file slowpath writes, named for what it is.
		if what := recordkind.Describe(b); what != "" {
			return nil, fmt.Errorf("%s is %s; want the JSON of slowpath lab crypto-limit --format json", path, what)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not the JSON of slowpath lab crypto-limit --format json: %w", path, err)
	}
	if f.Result == nil || f.Algorithm != "xts(aes)" || !(f.PerCore > 0) || math.IsInf(f.PerCore, 0) {
		return nil, fmt.Errorf("%s: want the JSON of slowpath lab crypto-limit --format json (algorithm xts(aes), bytes_per_sec_per_core above 0)", path)
	}
	return &f, nil
}

// Cipher is the measurement as a bench result records it; source says
// where it came from ("measured after the run", "file PATH").
func (r *Result) Cipher(source string) *benchresult.Cipher {
	c := &benchresult.Cipher{BytesPerSecPerCore: r.PerCore, Method: r.Method, What: r.What,
		KeyBits: r.KeyBits, SectorSize: r.SectorSize, Source: source}
	if r.Kernel != nil {
		c.Driver = r.Kernel.Driver
	}
	return c
}
