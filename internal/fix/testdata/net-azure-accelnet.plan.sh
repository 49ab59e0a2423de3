#!/bin/sh
# slowpath fix plan for kernel 5.15.0-1074-azure.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == net.ring-undersized on enP30832s1 (warning)
# expected gain: 0.23% (4200 packets/s dropped at the enP30832s1 RX ring of 1804200/s that reached it)
# runtime
ethtool -G enP30832s1 rx 8192
# persistent: udev sets the ring each time the interface appears (boot, driver reload)
mkdir -p /etc/udev/rules.d
cat > /etc/udev/rules.d/60-slowpath-ring-enP30832s1.rules <<'EOF'
# Written by slowpath fix: RX ring of enP30832s1 to 8192 (driver maximum 8192, was 1024).
ACTION=="add", SUBSYSTEM=="net", KERNELS=="7870:00:02.0", DRIVERS=="mlx5_core", RUN+="/usr/sbin/ethtool -G $name rx 8192"
EOF
# checked on the host, not the snapshot: the finding stands on counters measured before the change (fix --apply watches them)

# == net.backlog-drops on softnet (warning)
# expected gain: 2600 packets/s dropped at the per-CPU backlog
# runtime
sysctl -w net.core.netdev_max_backlog=32768
# persistent: systemd-sysctl applies it at every boot
mkdir -p /etc/sysctl.d
cat > /etc/sysctl.d/60-slowpath-net-backlog-drops.conf <<'EOF'
# Written by slowpath fix for net.backlog-drops.
# was 1000
net.core.netdev_max_backlog = 32768
EOF
# checked on the host, not the snapshot: the finding stands on counters measured before the change (fix --apply watches them)

# == net.time-squeeze on softnet (warning)
# expected gain: 405 receive rounds/s cut short with packets waiting
# runtime
sysctl -w net.core.netdev_budget=600
sysctl -w net.core.netdev_budget_usecs=4000
# persistent: systemd-sysctl applies it at every boot
mkdir -p /etc/sysctl.d
cat > /etc/sysctl.d/60-slowpath-net-time-squeeze.conf <<'EOF'
# Written by slowpath fix for net.time-squeeze.
# was 300
net.core.netdev_budget = 600
# was 2000
net.core.netdev_budget_usecs = 4000
EOF
# checked on the host, not the snapshot: the finding stands on counters measured before the change (fix --apply watches them)
