// Package cipherreport renders the result of `slowpath lab crypto-limit`
// (cipherlimit.Result) as text and as Markdown, from one list of facts so
// both say the same. The JSON is cipherlimit.File itself.
package cipherreport

import (
	"fmt"
	"io"
	"time"

	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/lab/cryptbench"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/units"
)

// fact is one line of the result: what and its value.
type fact struct{ name, value string }

func title(r *cipherlimit.Result) string {
	return fmt.Sprintf("%s, %d-bit key, %d-byte sectors", r.Algorithm, r.KeyBits, r.SectorSize)
}

func facts(r *cipherlimit.Result) []fact {
	var fs []fact
	if r.Kernel != nil {
		fs = append(fs, fact{"kernel implementation", fmt.Sprintf("%s (module %s, priority %d): what dm-crypt uses", r.Kernel.Driver, r.Kernel.Module, r.Kernel.Priority)})
	} else {
		fs = append(fs, fact{"kernel implementation", fmt.Sprintf("unknown (%s)", r.KernelNote)})
	}
	fs = append(fs, fact{"measured", r.What})
	if r.AFALG != "" {
		fs = append(fs, fact{"AF_ALG", "unavailable: " + r.AFALG})
	}
	fs = append(fs, fact{"one core", units.Throughput(r.PerCore)},
		fact{fmt.Sprintf("all cores (%d)", r.Cores), units.Throughput(r.AllCores)})
	if r.PipelinedAES > 0 {
		fs = append(fs, fact{"pipelined AES, 1 core", units.Throughput(r.PipelinedAES) + " (AES-CTR keystream: several blocks in flight, as the kernel's XTS does)"})
	}
	return append(fs, fact{"cipher time per 4 KiB", fmt.Sprintf("%v per layer on one core", time.Duration(4096/r.PerCore*1e9).Round(time.Nanosecond))})
}

// WriteText prints a crypto-limit result, one fact a line, the values
// aligned.
func WriteText(w io.Writer, r *cipherlimit.Result, figures cryptbench.Figures) error {
	fmt.Fprintf(w, "slowpath lab crypto-limit: %s\n", title(r))
	if l := figures.Label(); l != "" {
		fmt.Fprintf(w, "%s\n", l)
	}
	for _, f := range facts(r) {
		if _, err := fmt.Fprintf(w, "%-24s%s\n", f.name+":", f.value); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes what WriteText prints as Markdown, for a ticket:
// the title, what the figures are, the facts as a table. The kernel's
// driver and module names and the errors come from the host and are
// escaped.
func WriteMarkdown(w io.Writer, r *cipherlimit.Result, figures cryptbench.Figures) error {
	fmt.Fprintf(w, "**slowpath lab crypto-limit**: %s\n", table.MarkdownCell(title(r)))
	if l := figures.Label(); l != "" {
		fmt.Fprintf(w, "\n%s\n", table.MarkdownCell(l))
	}
	fmt.Fprintln(w)
	t := table.NewMarkdown(w)
	t.Row("what", "figure")
	for _, f := range facts(r) {
		t.Row(f.name, f.value)
	}
	return t.Flush()
}
