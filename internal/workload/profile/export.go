package profile

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// ExportDir stands for the run's directory in the job files of a plan
// that bench export writes (Params.Dir): run.sh substitutes the directory
// given to it. A user's job file holding it is refused before planning.
const ExportDir = "@DIR@"

// ExportFiles is what bench export writes for a plan made with Dir
// ExportDir, so that it runs with fio alone: each phase's job file
// ("1-ingest.fio") and run.sh. jobs names the job files in phase order.
// (A replay's are replay.ExportFiles.)
func ExportFiles(plan *Plan) (files map[string][]byte, jobs []string) {
	files = map[string][]byte{}
	for i, ph := range plan.Phases {
		n := fmt.Sprintf("%d-%s.fio", i+1, ph.Name)
		files[n] = ph.JobFile
		jobs = append(jobs, n)
	}
	files["run.sh"] = []byte(script(plan, jobs))
	return files, jobs
}

// script is a POSIX sh reproduction: it substitutes the directory into
// the job files, runs each with fio's JSON+ output and, for search-index,
// the index loads as a shell loop (dd of each finished file after evicting
// it is the closest plain-tool equivalent of mapping and reading it).
func script(plan *Plan, jobs []string) string {
	var b strings.Builder
	b.WriteString(`#!/bin/sh
# Reproduction of slowpath bench ` + plan.Profile + ` without slowpath.
# Usage: ./run.sh DIR   (DIR on the filesystem to test; a subdirectory is
# created there and removed afterwards). Needs fio (apt-get install fio).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
# The job files get DIR's path as a value: a line break, ':' (fio's list
# separator), ';' or '#' (comments) would change what fio reads, and sed
# below must not see its own delimiter.
case $1 in
  ''|-*|*[!A-Za-z0-9/._+@,=-]*)
    printf 'run.sh: DIR %s: use a path of letters, digits and / . _ + @ , = - not starting with - (the fio job files embed it)\n' "$1" >&2
    exit 2;;
esac
`)
	b.WriteString(fio.ScriptSetup("slowpath-repro"))
	for i, j := range jobs {
		ph := plan.Phases[i]
		fmt.Fprintf(&b, "\n# Phase %d: %s\nsed \"s|%s|$work|g\" \"$here\"/%s > \"$work\"/%s\n", i+1, ph.Name, ExportDir, quote.Shell(j), quote.Shell(j))
		if ph.Loader != nil {
			fmt.Fprintf(&b, `# Index loads: each writer file that reached %d bytes is evicted and read
# once, at most 4 per second, timed in ms (GNU date).
(
  while :; do
    for f in "$work"/%s*; do
      [ -f "$f" ] || continue
      [ "$(stat -c %%s "$f")" -ge %d ] || continue
      grep -qxF "$f" "$work/loaded" 2>/dev/null && continue
      echo "$f" >> "$work/loaded"
      dd if="$f" iflag=nocache count=0 2>/dev/null || true
      s=$(date +%%s%%N); dd if="$f" of=/dev/null bs=1M 2>/dev/null; e=$(date +%%s%%N)
      echo "$(basename "$f") $(( (e - s) / 1000000 ))" >> "$out/loads.txt"
      break
    done
    sleep 0.25
  done
) &
loader=$!
`, ph.Loader.FileSize, quote.Shell(ph.Loader.Prefix), ph.Loader.FileSize)
		}
		fmt.Fprintf(&b, "(cd \"$work\" && fio --output-format=json+ --output=\"$out\"/%s --eta=never %s)\n", quote.Shell(strings.TrimSuffix(j, ".fio")+".json"), quote.Shell(j))
		if ph.Loader != nil {
			b.WriteString("kill $loader 2>/dev/null || true\nwait $loader 2>/dev/null || true\n")
			b.WriteString("echo \"index loads (file, ms):\"; cat \"$out/loads.txt\" 2>/dev/null || echo none\n")
		}
		fmt.Fprintf(&b, "rm -f \"$work\"/*\n")
	}
	b.WriteString("echo \"fio results in $out\"\n")
	return b.String()
}
