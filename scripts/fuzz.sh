#!/usr/bin/env bash
# Runs each Go fuzz target in the module for a short time ($1, default 5s).
set -euo pipefail
t=${1:-5s}
n=0
while IFS=: read -r file name; do
	dir=$(dirname "$file")
	echo "fuzz: $dir $name ($t)"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" "./$dir" >/tmp/slowpath-fuzz.log 2>&1 || { cat /tmp/slowpath-fuzz.log; exit 1; }
	n=$((n+1))
done < <(git grep -h -n -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' >/dev/null 2>&1; git grep -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | sed 's/:func /:/')
echo "fuzz: $n target(s) ran"
