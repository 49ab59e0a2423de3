#!/bin/sh
# slowpath fix plan for kernel 6.1.115-126.197.amzn2023.x86_64.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/mysql (warning)
# expected gain: 97% (17.5ms of each I/O's 18ms at dm-0 is waiting beyond the 450µs at nvme1n1 beneath and the cipher's 8.2µs)
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- mysql | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- mysql && dmsetup resume -- mysql
# persistent, run by hand (it asks for the passphrase, key file or token, as open does):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- mysql
# checked on the snapshot: after this change the finding is gone

# == dmcrypt.tax on /dev/mapper/mysql (warning)
# expected gain: 97% (17.5ms of each I/O's 18ms at dm-0 is waiting beyond the 450µs at nvme1n1 beneath and the cipher's 8.2µs)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   dm-crypt mysql queues every I/O to kcryptd workqueues. Bypass them
#   (the dmcrypt.workqueue entry of `slowpath fix` does this):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- mysql
#   (LUKS2: applies now and is stored in the header for every later open; it
#   asks for the passphrase, key file or token, as open does)
#   /var/lib/mysql has 3 encryption layers, each encrypting every block again:
#   storage.stacked-encryption says which one to drop.
#   MariaDB InnoDB also encrypts this path, in the service's own threads: that
#   CPU is the service's, not kcryptd's, and the dm-crypt flags above cannot
#   remove it; only turning the engine's encryption off does.

# == storage.stacked-encryption on /var/lib/mysql (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Each layer protects against a given threat: MariaDB InnoDB (engine)
#   against a copy of the database's files or a backup, another user on the
#   host, an administrator without the key; dm-crypt mysql against a stolen
#   or decommissioned disk, a snapshot of the block device; cloud-disk aws
#   instance-store against the provider's media. Which one to keep depends
#   on the threat and on who holds the keys (the engine's key manager, the
#   LUKS passphrase or key file, the provider's keys); against one threat
#   one layer is enough. Only the engine's layer runs in the service's own
#   threads: dropping it gives its CPU back to the queries, and no dm-crypt
#   flag touches it. Confirm each layer:
#     SELECT NAME, ENCRYPTION_SCHEME, CURRENT_KEY_ID
#       FROM information_schema.INNODB_TABLESPACES_ENCRYPTION;
#     cryptsetup status mysql
#     aws ec2 describe-instance-types --instance-types TYPE \x5c
#       --query 'InstanceTypes[].InstanceStorageInfo.EncryptionSupport'
#   If every layer is required, mark it so in the config:
#     {"required_stacks": ["/var/lib/mysql"]}

# == storage.engine-encryption on mariadb /var/lib/mysql (info)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Confirm it from the database (storage.stacked-encryption weighs the
#   layer against the layers below it):
#     SELECT NAME, ENCRYPTION_SCHEME, CURRENT_KEY_ID
#       FROM information_schema.INNODB_TABLESPACES_ENCRYPTION;
