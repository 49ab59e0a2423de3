#!/bin/sh
# slowpath fix plan for kernel 6.6.95-flatcar.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/scratch (warning)
# expected gain: 97% (17.5ms of each I/O's 18ms at dm-0 is waiting beyond the 450µs at nvme1n1 beneath and the cipher's 8.2µs)
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- scratch | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- scratch && dmsetup resume -- scratch
# persistent, run by hand (it asks for the passphrase, key file or token, as open does):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- scratch
# nodes provisioned from now on: add to the Butane config
#   storage:
#     luks:
#       - name: scratch
#         open_options:
#           - --perf-no_read_workqueue
#           - --perf-no_write_workqueue
# checked on the snapshot: after this change the finding is gone

# == dmcrypt.tax on /dev/mapper/scratch (warning)
# expected gain: 97% (17.5ms of each I/O's 18ms at dm-0 is waiting beyond the 450µs at nvme1n1 beneath and the cipher's 8.2µs)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   dm-crypt scratch queues every I/O to kcryptd workqueues. Bypass them
#   (the dmcrypt.workqueue entry of `slowpath fix` does this):
#   Flatcar Container Linux by Kinvolk 4230.2.1: Ignition opens LUKS volumes
#   it creates; for nodes provisioned from now on, add the flags to the
#   volume in the Butane config (fcos 1.5.0+, flatcar 1.1.0+; Ignition
#   writes them with --persistent):
#     storage:
#       luks:
#         - name: scratch
#           open_options:
#             - --perf-no_read_workqueue
#             - --perf-no_write_workqueue
#   For this node, as on any host:
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- scratch
#   (LUKS2: applies now and is stored in the header for every later open; it
#   asks for the passphrase, key file or token, as open does)
#   /data has 2 encryption layers, each encrypting every block again:
#   storage.stacked-encryption says which one to drop.

# == storage.stacked-encryption on /data (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   The platform already encrypts this storage (aws instance-store).
#   If the in-guest layer is not required (e.g. for customer-held keys),
#   move the data to a plain filesystem and remove dm-crypt scratch.
#   If the in-guest layer is required, mark it so in the config:
#     {"required_stacks": ["/data"]}
