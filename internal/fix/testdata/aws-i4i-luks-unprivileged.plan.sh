#!/bin/sh
# slowpath fix plan for kernel 6.1.115-126.197.amzn2023.x86_64.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.tax on /dev/mapper/scratch (warning)
# expected gain: 97% (17.5ms of each I/O's 18ms at dm-0 is waiting beyond the 450µs at nvme1n1 beneath and the cipher's 8.2µs)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   The table of dm-crypt scratch was not read (see the evidence), so whether
#   it bypasses the kcryptd workqueues is unknown: run `slowpath doctor` on the
#   node as root (dmcrypt.workqueue), or `dmsetup table scratch` and look for
#   no_read_workqueue no_write_workqueue.
#   Check for a second encryption layer slowpath cannot see: another
#   dm-crypt or fscrypt (lsblk -s /dev/mapper/scratch), or the platform
#   encrypting the disk again (cloud encryption at host).
