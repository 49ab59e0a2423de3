#!/usr/bin/env bash
# Runs each Go fuzz target in the module for a short time ($1, default 5s).
#
# Go before 1.27 can fail a target with a bare "context deadline exceeded"
# when -fuzztime ends while a worker is mid-call (a race in the fuzzing
# coordinator, go.dev/issue/75804), having found nothing. Such a run is
# repeated once; a second one, or any failure that wrote a failing input
# or printed anything else, fails the run.
#
# One worker per target (-parallel 1): make test fuzzes beside the VM lab,
# whose TCG boots each want a core of this 2-core machine; a second worker
# doubled the fuzzers' CPU for the same wall time and slowed the boots.
set -euo pipefail
t=${1:-5s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=0

# coordinator_race: the log of a failed run says only that the deadline
# passed, and no failing input was written.
coordinator_race() {
	grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log" && ! grep -q '^panic:' "$log"
}

while IFS=: read -r file name; do
	dir=$(dirname "$file")
	echo "fuzz: $dir $name ($t)"
	for try in 1 2; do
		if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" -parallel 1 "./$dir" >"$log" 2>&1; then
			break
		fi
		if [ "$try" = 1 ] && coordinator_race; then
			echo "fuzz: $name: bare 'context deadline exceeded', no failing input (go.dev/issue/75804): running it again"
			continue
		fi
		cat "$log"
		exit 1
	done
	n=$((n+1))
done < <(git grep -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | sed 's/:func /:/')
echo "fuzz: $n target(s) ran"
