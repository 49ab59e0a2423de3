#!/bin/sh
# slowpath fix plan for kernel 6.1.0-27-cloud-amd64.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == net.socket-rcvbuf on sockets (warning)
# expected gain: 3.4% (5200 packets/s dropped at the UDP sockets of 155200/s that reached it)
# runtime
sysctl -w net.core.rmem_max=26214400
# persistent: systemd-sysctl applies it at every boot
mkdir -p /etc/sysctl.d
cat > /etc/sysctl.d/60-slowpath-net-socket-rcvbuf.conf <<'EOF'
# Written by slowpath fix for net.socket-rcvbuf.
# was 212992
net.core.rmem_max = 26214400
EOF
# checked on the host, not the snapshot: the finding stands on counters measured before the change (fix --apply watches them)
