#!/bin/sh
# slowpath fix plan for kernel 6.12.57-talos.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == dmcrypt.workqueue on /dev/mapper/EPHEMERAL-encrypted (warning)
# Not applicable here: Talos has no shell to run dmsetup or cryptsetup in: the flags of EPHEMERAL-encrypted go into the machine configuration, which Talos applies when it opens the volume at the next boot (the patch is below, by hand)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Talos (v1.9.5) opens EPHEMERAL-encrypted itself at every boot, with the
#   options of its machine configuration; add the flags there (talosctl
#   patch machineconfig --nodes NODE --patch @patch.yaml), then reboot:
#     machine:
#       systemDiskEncryption:
#         ephemeral:
#           provider: luks2
#           options:
#             - no_read_workqueue
#             - no_write_workqueue
#   (keep the keys: as they are; Talos 1.11 moves this into a VolumeConfig
#   document)
