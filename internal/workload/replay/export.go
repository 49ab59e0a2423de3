package replay

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// Export job file names: the as-fast-as-possible replay and fio's own
// timed replay.
const (
	ExportAFAPJob  = "replay-afap.fio"
	ExportTimedJob = "replay-fio-timed.fio"
)

// ExportFiles is what bench export writes for a replay: every stream's
// iolog, the two fio job files and run.sh, a POSIX sh script that needs
// fio, GNU coreutils' dd and head, and nothing of slowpath. profile names
// the replay in run.sh's comments (a checked label). Validate t first.
func ExportFiles(profile string, t *Trace) (map[string][]byte, error) {
	streams := t.Streams()
	files := map[string][]byte{}
	for _, s := range streams {
		files[s.IologName()] = t.Iolog(s)
	}
	var err error
	if files[ExportAFAPJob], err = JobFile(streams, AFAP); err != nil {
		return nil, err
	}
	if files[ExportTimedJob], err = JobFile(streams, FioTimed); err != nil {
		return nil, err
	}
	files["run.sh"] = []byte(script(profile, t, streams))
	return files, nil
}

// script lays the files out before each job (the previous job's writes
// and reads changed their contents and the page cache), as Layout does:
// incompressible data, written back, dropped, the resident ranges read in.
func script(profile string, t *Trace, streams []Stream) string {
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
# Replay of %s without slowpath: the captured files recreated with random
# data and the captured page-cache residency, then the per-thread fio
# iologs replayed twice: %s (as fast as possible) and %s (fio's own
# timed replay, which drifts from the schedule on fio 3.33: see slowpath's
# docs/replay.md).
# Usage: ./run.sh DIR   (DIR on the filesystem to test; a subdirectory is
# created there and removed afterwards). Needs fio, dd and head (GNU).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
# DIR is only ever a quoted argument (the job files and iologs name files
# relative to the work directory); a leading - would be an option of mktemp.
case $1 in ''|-*) printf 'run.sh: DIR %%s: give a path not starting with -\n' "$1" >&2; exit 2;; esac
%s# df's 1024-byte blocks, compared as integers (awk would print a large
# byte count in exponent notation).
need_kib=%d
free_kib=$(df -Pk "$work" | awk 'NR==2 {printf "%%d", $4}')
case $free_kib in ''|*[!0-9]*) echo "run.sh: cannot read the free space of $1 from df" >&2; exit 2;; esac
if [ "$free_kib" -lt "$need_kib" ]; then
  echo "run.sh: the capture's files need $need_kib KiB and $1 has $free_kib KiB free: use a larger filesystem" >&2
  exit 2
fi
layout() {
  rm -f "$work"/*
`, quote.Shell(profile), ExportAFAPJob, ExportTimedJob, fio.ScriptSetup("slowpath-replay"), (t.Space()+1023)/1024)
	for _, f := range t.Files {
		name := quote.Shell(f.Name)
		fmt.Fprintf(&b, "  head -c %d /dev/urandom > \"$work\"/%s\n", f.Size, name)
		// GNU dd's way to write back and drop a file's pages (coreutils
		// manual, "dd invocation", nocache).
		fmt.Fprintf(&b, "  dd if=/dev/null of=\"$work\"/%s oflag=nocache conv=notrunc,fdatasync count=0 status=none\n", name)
		fmt.Fprintf(&b, "  dd if=\"$work\"/%s iflag=nocache count=0 status=none\n", name)
		for _, r := range f.Resident {
			fmt.Fprintf(&b, "  dd if=\"$work\"/%s of=/dev/null iflag=skip_bytes,count_bytes skip=%d count=%d bs=1M status=none\n", name, r.Offset, r.Length)
		}
	}
	for _, s := range streams {
		fmt.Fprintf(&b, "  cp \"$here\"/%s \"$work\"/\n", quote.Shell(s.IologName()))
	}
	b.WriteString("}\n")
	for _, j := range []string{ExportAFAPJob, ExportTimedJob} {
		fmt.Fprintf(&b, "\nlayout\ncp \"$here\"/%s \"$work\"/\n(cd \"$work\" && fio --output-format=json+ --output=\"$out\"/%s --eta=never %s)\n",
			quote.Shell(j), quote.Shell(strings.TrimSuffix(j, ".fio")+".json"), quote.Shell(j))
	}
	b.WriteString("echo \"fio results in $out\"\n")
	return b.String()
}
