#!/bin/sh
# slowpath fix plan for kernel 5.4.0-200-generic.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == crypto.no-aes-acceleration on /dev/mapper/pgram (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Run on a CPU with AES instructions: pick a VM type that has them and
#   check that the hypervisor passes the aes flag through (QEMU: -cpu host,
#   not qemu64).
#   On CPUs without them, use a cipher built for that case (new format needed):
#     cryptsetup luksFormat --cipher xchacha12,aes-adiantum-plain64 DEVICE

# == dmcrypt.same-cpu-crypt on /dev/mapper/pgram (info)
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- pgram | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+1; for(i=10;i<=NF;i++) s=s" "$i; print s" same_cpu_crypt"}' | dmsetup reload -- pgram && dmsetup resume -- pgram
# persistent, run by hand (it asks for the passphrase, key file or token, as open does):
#   cryptsetup refresh --perf-same_cpu_crypt --persistent -- pgram
# checked on the snapshot: after this change the finding is gone
