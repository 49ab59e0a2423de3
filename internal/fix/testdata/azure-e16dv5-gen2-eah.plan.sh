#!/bin/sh
# slowpath fix plan for kernel 6.8.0-1021-azure.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == storage.stacked-encryption on /mnt/resource (warning)
# cloud (azure), not run by slowpath: turn encryption at host off (the VM is deallocated, so it stops until started again)
#   az vm deallocate -g RG -n VM
#   az vm update -g RG -n VM --set securityProfile.encryptionAtHost=false
#   az vm start -g RG -n VM
# checked on the snapshot: after this change the finding is gone
