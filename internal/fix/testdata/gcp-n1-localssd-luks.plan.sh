#!/bin/sh
# slowpath fix plan for kernel 6.1.0-1040-gke.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/ssd0 (warning)
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- ssd0 | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- ssd0 && dmsetup resume -- ssd0
# persistent, run by hand (it asks for the passphrase, key file or token, as open does):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- ssd0
# checked on the snapshot: after this change the finding is gone

# == storage.stacked-encryption on /mnt/disks/ssd0 (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   The platform already encrypts this storage (gcp local-ssd).
#   If the in-guest layer is not required (e.g. for customer-held keys),
#   move the data to a plain filesystem and remove dm-crypt ssd0.
#   If the in-guest layer is required, mark it so in the config:
#     {"required_stacks": ["/mnt/disks/ssd0"]}
