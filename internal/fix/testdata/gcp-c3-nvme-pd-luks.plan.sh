#!/bin/sh
# slowpath fix plan for kernel 6.1.0-1040-gke.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == storage.stacked-encryption on /srv/db (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   The platform already encrypts this storage (gcp persistent-disk).
#   If the in-guest layer is not required (e.g. for customer-held keys),
#   move the data to a plain filesystem and remove dm-crypt db.
#   If the in-guest layer is required, mark it so in the config:
#     {"required_stacks": ["/srv/db"]}
