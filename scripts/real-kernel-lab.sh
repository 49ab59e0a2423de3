#!/usr/bin/env bash
# real-kernel-lab.sh: on a machine with a real kernel, says whether it has
# what lab crypt needs at real speed (device-mapper with the crypt target,
# brd or loop, AES instructions, fio) and, when it does, runs lab crypt's
# db-commit on a ramdisk with default, no_workqueue and null_cipher: the
# tax in parts, at the machine's speed. Under 5 minutes. Root; it creates
# only the lab's own devices, which lab crypt removes (also on Ctrl-C).
#
#   sudo scripts/real-kernel-lab.sh [OUT-DIR]
#
# Writes OUT-DIR/facts.txt, and where it can run, OUT-DIR/split.txt.
set -u
out=${1:-./real-kernel-lab}
mkdir -p "$out"
facts="$out/facts.txt"
: > "$facts"
say() { echo "$*" | tee -a "$facts"; }
bin=${SLOWPATH:-$(command -v slowpath || echo ./slowpath)}

say "kernel: $(uname -r)"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
say "cores: $(nproc)"
missing=()
if grep -qw aes /proc/cpuinfo; then say "aes instructions: yes"; else say "aes instructions: no (the cipher runs in software)"; fi
if [ -e /dev/mapper/control ] || modprobe dm_mod 2>/dev/null; then say "device-mapper: yes"; else say "device-mapper: no"; missing+=(device-mapper); fi
modprobe dm_crypt 2>/dev/null
crypt=$(dmsetup targets 2>/dev/null | awk '$1 == "crypt" { print $2 }')
if [ -n "$crypt" ]; then say "dm-crypt target: $crypt"; else say "dm-crypt target: no"; missing+=(dm-crypt); fi
if modprobe -n brd 2>/dev/null || [ -e /sys/module/brd ]; then say "brd: yes"; backing=ram:1G
elif [ -e /dev/loop-control ] || modprobe loop 2>/dev/null; then say "brd: no; loop: yes"; backing=file:/var/tmp/slowpath-real-kernel.img:1G
else say "brd: no; loop: no"; missing+=(brd-or-loop); fi
if command -v fio >/dev/null; then say "fio: $(fio --version)"; else say "fio: no"; missing+=(fio); fi
if [ ! -x "$bin" ] && ! command -v "$bin" >/dev/null; then say "slowpath: not found (set SLOWPATH=PATH)"; missing+=(slowpath); fi
if [ "$(id -u)" != 0 ]; then say "root: no"; missing+=(root); fi

if [ ${#missing[@]} -gt 0 ]; then
	say "cannot run here: missing ${missing[*]}"
	exit 0
fi
say "running: lab crypt --profile db-commit --backing $backing --variants default,no_workqueue,null_cipher --runs 6 --runtime 2s"
timeout 270 "$bin" lab crypt --profile db-commit --backing "$backing" --variants default,no_workqueue,null_cipher \
	--runs 6 --runtime 2s > "$out/split.txt" 2> "$out/split.err"
say "lab crypt exited $? (its result: $out/split.txt, the tax in parts at its end)"
