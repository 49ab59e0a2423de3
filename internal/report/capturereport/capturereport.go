// Package capturereport renders what `slowpath capture` prints when it
// ends: the summary of a capture's manifest (capfile.Manifest), as text
// and as Markdown, from one list of facts so both say the same. The JSON
// is the manifest itself.
package capturereport

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/report/table"
)

// fact is one line of the summary: what and its value.
type fact struct{ name, value string }

// facts are the summary of the capture written into dir.
func facts(dir string, m *capfile.Manifest) []fact {
	fs := []fact{
		{"capture", dir},
		{"duration", time.Duration(m.DurationNS).Round(time.Millisecond).String()},
		{"status", m.Status},
		{"file-level records", fmt.Sprintf("%d (%d page-cache faults of mapped files, source %s)", m.Events.Ops, m.Events.Faults, m.Kernel.FaultSource)},
	}
	if m.Kernel.IOURing != "" {
		fs = append(fs, fact{"asynchronous records", fmt.Sprintf("%d Linux AIO, %d io_uring (io_uring: %s)", m.Events.AIO, m.Events.IOURing, m.Kernel.IOURing)})
	}
	if ms := m.Events.Missed; ms != nil {
		// I/O on captured files that no record describes: its block
		// requests are in block.bin with no file-level cause.
		fs = append(fs, fact{"not recorded", fmt.Sprintf("%d splice (%d B), %d sendfile (%d B), %d copy_file_range (%d B), %d io_uring and %d aio requests of other opcodes",
			ms.Splice, ms.SpliceBytes, ms.Sendfile, ms.SendfileBytes, ms.CopyFileRange, ms.CopyFileRangeBytes, ms.IOURingOther, ms.AIOOther)})
	}
	fs = append(fs, fact{"block records", strconv.FormatUint(m.Events.Block, 10)})
	for _, d := range m.Devices {
		fs = append(fs, fact{"device", fmt.Sprintf("%s (%s, %s)", d.Name, d.Kind, d.Source)})
	}
	fs = append(fs,
		fact{"files", strconv.Itoa(len(m.Files))},
		fact{"threads", strconv.Itoa(len(m.Threads))},
		fact{"dropped events", strconv.FormatUint(m.Events.Dropped, 10)})
	if m.Events.RecursionMisses > 0 {
		fs = append(fs, fact{"programs the kernel skipped", strconv.FormatUint(m.Events.RecursionMisses, 10)})
	}
	if m.Events.Unmatched > 0 {
		fs = append(fs, fact{"requests not seen completing", strconv.FormatUint(m.Events.Unmatched, 10)})
	}
	return fs
}

// WriteText prints the summary as tab-separated lines, one fact a line.
func WriteText(w io.Writer, dir string, m *capfile.Manifest) error {
	for _, f := range facts(dir, m) {
		if _, err := fmt.Fprintf(w, "%s\t%s\n", f.name, f.value); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes what WriteText prints as a Markdown table, for a
// ticket. The directory comes from the command line and the device names
// and kinds from the host: they are escaped.
func WriteMarkdown(w io.Writer, dir string, m *capfile.Manifest) error {
	fs := facts(dir, m)
	fmt.Fprintf(w, "**slowpath capture** into %s\n\n", table.Code(fs[0].value))
	t := table.NewMarkdown(w)
	t.Row("what", "value")
	for _, f := range fs[1:] {
		t.Row(f.name, f.value)
	}
	return t.Flush()
}
