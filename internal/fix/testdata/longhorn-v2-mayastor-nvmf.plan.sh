#!/bin/sh
# slowpath fix plan for kernel 6.8.0-88-generic.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/pgdata-encrypted (warning)
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- pgdata-encrypted | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- pgdata-encrypted && dmsetup resume -- pgdata-encrypted
# persistent, run by hand (no key slot opens by passphrase; key slot 1: no passphrase: cryptsetup opens it through its systemd-tpm2 token, with systemd's token plugin (libcryptsetup-token-systemd-tpm2.so, systemd 251+) and this machine's TPM; it fails if the PCRs the key is sealed to have changed since):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- pgdata-encrypted
# checked on the snapshot: after this change the finding is gone
