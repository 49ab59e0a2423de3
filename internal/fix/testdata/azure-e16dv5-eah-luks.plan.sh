#!/bin/sh
# slowpath fix plan for kernel 6.8.0-1021-azure.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu

# == dmcrypt.workqueue on /dev/mapper/data (warning)
# runtime
dmsetup table --showkeys -- data | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- data && dmsetup resume -- data
# persistent, run by hand (asks for the passphrase, key file or token):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- data

# == storage.stacked-encryption on /mnt/data (warning)
# cloud (azure), not run by slowpath: turn encryption at host off (the VM is deallocated, so it stops until started again)
#   az vm deallocate -g RG -n VM
#   az vm update -g RG -n VM --set securityProfile.encryptionAtHost=false
#   az vm start -g RG -n VM
