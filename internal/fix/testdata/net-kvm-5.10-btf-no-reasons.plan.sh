#!/bin/sh
# slowpath fix plan for kernel 5.10.0-32-amd64.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == net.no-drop-reasons on kernel (info)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   # no setting enables it: skb drop reasons arrived in Linux 5.17 (some
#   # distributions backport them); use a newer kernel for reason-level
#   # attribution
