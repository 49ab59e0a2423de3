#!/bin/sh
# slowpath fix plan for kernel 6.12.37.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu

# == dmcrypt.workqueue on /dev/mapper/BOTTLEROCKET-DATA (warning)
# runtime
dmsetup table --showkeys -- BOTTLEROCKET-DATA | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- BOTTLEROCKET-DATA && dmsetup resume -- BOTTLEROCKET-DATA
# persistent, run by hand (asks for the passphrase, key file or token):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- BOTTLEROCKET-DATA

# == dmcrypt.workqueue on /dev/mapper/EPHEMERAL-DATA (warning)
# runtime
dmsetup table --showkeys -- EPHEMERAL-DATA | awk '{n=($9==""?0:$9); s=$1; for(i=2;i<=8;i++) s=s" "$i; s=s" "n+2; for(i=10;i<=NF;i++) s=s" "$i; print s" no_read_workqueue no_write_workqueue"}' | dmsetup reload -- EPHEMERAL-DATA && dmsetup resume -- EPHEMERAL-DATA
# persistent, run by hand (asks for the passphrase, key file or token):
#   cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- EPHEMERAL-DATA
