#!/bin/sh
# slowpath fix plan for kernel 6.12.37.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/EPHEMERAL-DATA (warning)
# expected gain: 97% (17.5ms of each I/O's 18ms at dm-0 is waiting beyond the 450µs at nvme2n1 beneath and the cipher's 8.2µs)
# Not applicable here: partly: the flags of EPHEMERAL-DATA cannot be kept on Bottlerocket: no setting passes them, bootstrap commands run apiclient only, and cryptsetup refresh --persistent needs the volume key, which Bottlerocket seals in the TPM; the runtime change holds until the next boot
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- EPHEMERAL-DATA | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- EPHEMERAL-DATA && dmsetup resume -- EPHEMERAL-DATA
# checked on the snapshot: after this change the finding is gone

# == dmcrypt.workqueue on /dev/mapper/BOTTLEROCKET-DATA (warning)
# Not applicable here: partly: the flags of BOTTLEROCKET-DATA cannot be kept on Bottlerocket: no setting passes them, bootstrap commands run apiclient only, and cryptsetup refresh --persistent needs the volume key, which Bottlerocket seals in the TPM; the runtime change holds until the next boot
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- BOTTLEROCKET-DATA | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- BOTTLEROCKET-DATA && dmsetup resume -- BOTTLEROCKET-DATA
# checked on the snapshot: after this change the finding is gone

# == dmcrypt.tax on /dev/mapper/EPHEMERAL-DATA (warning)
# expected gain: 97% (17.5ms of each I/O's 18ms at dm-0 is waiting beyond the 450µs at nvme2n1 beneath and the cipher's 8.2µs)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   dm-crypt EPHEMERAL-DATA queues every I/O to kcryptd workqueues. Bypass them
#   (the dmcrypt.workqueue entry of `slowpath fix` does this):
#   Bottlerocket OS 1.47.0 (aws-k8s-1.34) formats and opens EPHEMERAL-DATA
#   itself (rottweiler, systemd-cryptsetup) with no performance flags, and
#   no Bottlerocket setting passes them. Nothing on the node can keep them:
#   bootstrap commands run apiclient only, and cryptsetup refresh
#   --persistent needs the volume key, which Bottlerocket seals in the TPM
#   (there is no passphrase to type). Ask for a setting upstream
#   (bottlerocket-core-kit). Until then the flags hold for the running boot
#   only: slowpath fix --apply reloads the live table with them, from a
#   privileged container or the admin container (sudo sheltie), and they are
#   gone at the next boot.
#   /mnt/.ephemeral has 2 encryption layers, each encrypting every block again:
#   storage.stacked-encryption says which one to drop.

# == storage.stacked-encryption on /mnt/.ephemeral (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   On Bottlerocket, EPHEMERAL-DATA comes from the image's encrypted-storage
#   feature (/usr/share/bottlerocket/image-features.env
#   ENCRYPTED_STORAGE=true): apiclient ephemeral-storage init encrypts the
#   ephemeral disks whenever it runs, and no setting turns that off for one
#   volume. To keep one layer on instance store, which the platform already
#   encrypts: run a variant built without encrypted-storage on
#   instance-store nodes, or drop the ephemeral-storage init/bind commands
#   from settings.bootstrap-commands and keep the data on EBS. If the
#   in-guest layer is required, mark it so:
#     {"required_stacks": ["/mnt/.ephemeral"]}
