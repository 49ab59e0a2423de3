#!/usr/bin/env bash
# Installs the Debian packages slowpath's run and tests need. Idempotent:
# apt-get runs only when something is missing, and updates its lists once.
set -euo pipefail
want=("$@")
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
