package cipherreport

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/lab/cryptbench"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/mdcheck"
)

// kernelResult is an AF_ALG measurement of the kernel's aesni driver.
func kernelResult() *cipherlimit.Result {
	return &cipherlimit.Result{Algorithm: "xts(aes)", KeyBits: 512, SectorSize: 512,
		Kernel: &cipherlimit.Implementation{Driver: "xts-aes-aesni", Module: "aesni_intel", Priority: 401},
		Method: "af_alg", What: "the kernel's xts(aes) through AF_ALG", PerCore: 2.1e9, AllCores: 14.8e9, Cores: 8}
}

// userResult is the user-space bound of a kernel without AF_ALG.
func userResult() *cipherlimit.Result {
	return &cipherlimit.Result{Algorithm: "xts(aes)", KeyBits: 256, SectorSize: 4096, KernelNote: "no xts(aes) in /proc/crypto",
		Method: "user-space", What: "Go's AES-XTS in user space (AES-NI)", AFALG: "socket: address family not supported by protocol",
		PerCore: 1.2e9, AllCores: 15.1e9, Cores: 16, PipelinedAES: 5.5e9}
}

// TestGolden: text and Markdown of the same results, with and without the
// kernel's implementation and labelled as a model, say the same facts.
func TestGolden(t *testing.T) {
	for _, tt := range []struct {
		name    string
		r       *cipherlimit.Result
		figures cryptbench.Figures
	}{
		{"kernel", kernelResult(), cryptbench.Figures{Kind: "measured"}},
		{"user-space-icount", userResult(), cryptbench.Figures{Kind: "icount-model", Shift: 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var text, md bytes.Buffer
			if err := WriteText(&text, tt.r, tt.figures); err != nil {
				t.Fatal(err)
			}
			if err := WriteMarkdown(&md, tt.r, tt.figures); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, "testdata/"+tt.name+".txt", text.Bytes())
			golden.Compare(t, "testdata/"+tt.name+".md", md.Bytes())
			for _, f := range facts(tt.r) {
				if !strings.Contains(text.String(), f.value) || !strings.Contains(md.String(), "| "+f.name+" | "+f.value+" |") {
					t.Errorf("%s: %s not in both the text and the Markdown table", f.name, f.value)
				}
			}
			if l := tt.figures.Label(); !strings.Contains(md.String(), l) {
				t.Errorf("Markdown lacks the figures' label %q", l)
			}
		})
	}
}

// TestTextUnchanged: the text keeps the layout the VM tests read
// (test/vm/cryptlab_test.go looks for "kernel implementation:  xts").
func TestTextUnchanged(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, kernelResult(), cryptbench.Figures{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"slowpath lab crypto-limit: xts(aes), 512-bit key, 512-byte sectors\n", "kernel implementation:  xts-aes-aesni (module aesni_intel, priority 401): what dm-crypt uses\n",
		"all cores (8):          14.80 GB/s\n", "cipher time per 4 KiB:  "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// hostile is a result whose every string read from the host (/proc/crypto's
// driver and module, the errors) tries to break out of its cell.
func hostile(s string) *cipherlimit.Result {
	r := userResult()
	r.Algorithm, r.Kernel, r.KernelNote, r.What, r.AFALG = s, &cipherlimit.Implementation{Driver: s, Module: s}, s, s, s
	return r
}

// markdown is what the cipher's Markdown keeps: two-cell rows and no
// code span of its own.
var markdown = mdcheck.Rules{Cells: 2, NoCode: true}

// TestMarkdownHostile: pipes, backticks, newlines and HTML in the
// kernel's names stay text in their cell.
func TestMarkdownHostile(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, hostile(mdcheck.Hostile("aes")), cryptbench.Figures{}); err != nil {
		t.Fatal(err)
	}
	markdown.Check(t, b.String())
	if want := mdcheck.Escaped("aes") + " (module aes"; !strings.Contains(b.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, b.String())
	}
}

// FuzzWriteMarkdown: whatever /proc/crypto names, the Markdown holds no
// HTML and its rows keep two cells.
func FuzzWriteMarkdown(f *testing.F) {
	markdown.Fuzz(f, "aesni_intel", func(w io.Writer, s string) error {
		return WriteMarkdown(w, hostile(s), cryptbench.Figures{Kind: "emulated"})
	})
}
