#!/bin/sh
# slowpath fix plan for kernel 6.1.0-28-amd64.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/root_crypt (warning)
# runtime
# The live table, key included, goes from dmsetup through awk to dmsetup
# by pipes only: nothing is written to disk or shown. awk adds the new flags'
# number to the count of optional parameters (field 9, 0 when absent) and
# appends the flags; every other field passes unchanged.
dmsetup table --showkeys -- root_crypt | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- root_crypt && dmsetup resume -- root_crypt
# persistent, run by hand (it asks for the passphrase, key file or token, as open does):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- root_crypt
# checked on the snapshot: after this change the finding is gone

# == dmcrypt.sector-size on /dev/mapper/inner (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Recreate the mapping with 4096-byte sectors. LUKS1: convert to LUKS2
#   (cryptsetup convert --type luks2), then
#     cryptsetup reencrypt --sector-size 4096 DEVICE
#   Plain mode: add sector-size=4096 to its /etc/crypttab options.
#   This changes the on-disk layout: copy the data off first.

# == dmcrypt.sector-size on /dev/mapper/outer (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Recreate the mapping with 4096-byte sectors. LUKS1: convert to LUKS2
#   (cryptsetup convert --type luks2), then
#     cryptsetup reencrypt --sector-size 4096 DEVICE
#   Plain mode: add sector-size=4096 to its /etc/crypttab options.
#   This changes the on-disk layout: copy the data off first.

# == storage.stacked-encryption on /mnt/vault (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Keep one in-guest layer: copy the data off, remove dm-crypt vault
#   (the upper one) and restore onto the remaining encrypted device.
#   If the stack is required, mark it so in the config:
#     {"required_stacks": ["/mnt/vault"]}

# == storage.stacked-encryption on /srv (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Keep one in-guest layer: copy the data off, remove dm-crypt inner
#   (the upper one) and restore onto the remaining encrypted device.
#   If the stack is required, mark it so in the config:
#     {"required_stacks": ["/srv"]}

# == dmcrypt.scheduler on /dev/nvme0n1 (info)
# runtime
echo none > /sys/block/nvme0n1/queue/scheduler
# persistent: udev sets the scheduler each time the device appears or changes (boot, hotplug)
mkdir -p /etc/udev/rules.d
cat > /etc/udev/rules.d/60-slowpath-scheduler-nvme0n1.rules <<'EOF'
# Written by slowpath fix: I/O scheduler of nvme0n1 to none (was mq-deadline).
ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="nvme0n1", ATTR{queue/scheduler}="none"
EOF
# checked on the snapshot: after this change the finding is gone
