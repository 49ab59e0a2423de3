#!/bin/sh
# slowpath fix plan for kernel 6.8.0-1021-azure.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/data (warning)
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- data | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- data && dmsetup resume -- data
# persistent, run by hand (it asks for the passphrase, key file or token, as open does):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- data
# checked on the snapshot: after this change the finding is gone

# == storage.stacked-encryption on /mnt/data (warning)
# cloud (azure), not run by slowpath: turn encryption at host off (the VM is deallocated, so it stops until started again)
#   az vm deallocate -g RG -n VM
#   az vm update -g RG -n VM --set securityProfile.encryptionAtHost=false
#   az vm start -g RG -n VM
# checked on the snapshot: this change does not clear the finding; after it: 2 encryption layers on /mnt/data: dm-crypt (kernel-cpu) over cloud-disk (drive). Every block is encrypted and decrypted once per layer. One runs on this machine's CPUs (CPU time and dm-crypt queueing on every I/O); the other adds latency on the host or drive. One layer protects against a given threat; more only add cost.
