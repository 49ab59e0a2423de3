#!/bin/sh
# slowpath fix plan for kernel 5.15.0-1074-azure.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# In order: worst first; then changes that clear their finding; then the
# largest expected gain, as measured on this host (docs/fix.md).

# == net.ring-undersized on enP30832s1 (warning)
# expected gain: 0.23% (4200 packets/s dropped at the enP30832s1 RX ring of 1804200/s that reached it)
# Not applicable here: ring enP30832s1 is driven by tuned (pid 987), seen at /etc/tuned/active_profile: the ring option of a net unit of tuned profile site-net; a change of it would be measured against tuned and may be set back by it. To let slowpath change it: drop ring= from that net unit (or narrow its devices=) in a profile of your own that includes site-net

# == net.backlog-drops on softnet (warning)
# expected gain: 2600 packets/s dropped at the per-CPU backlog
# Not applicable here: net.core.netdev_max_backlog is driven by bpftune (pid 1234), seen at /proc/1234/comm: bpftune's net_buffer_tuner changes it by itself as it sees load, and turns itself off when another writer changes it; a change of it would be measured against bpftune and may be set back by it. To let slowpath change it: remove net_buffer_tuner.so from bpftune's plug-in directory (bpftune --print-libdir), or run bpftune with -a for each tuner to keep (systemctl edit bpftune), or stop bpftune (systemctl stop bpftune) for the A/B (a write by hand is no way: bpftune's sysctl_tuner then turns net_buffer_tuner off until bpftune restarts)

# == net.time-squeeze on softnet (warning)
# expected gain: 405 receive rounds/s cut short with packets waiting
# Not applicable here: net.core.netdev_budget is driven by bpftune (pid 1234), seen at /proc/1234/comm: bpftune's net_buffer_tuner changes it by itself as it sees load, and turns itself off when another writer changes it; a change of it would be measured against bpftune and may be set back by it. To let slowpath change it: remove net_buffer_tuner.so from bpftune's plug-in directory (bpftune --print-libdir), or run bpftune with -a for each tuner to keep (systemctl edit bpftune), or stop bpftune (systemctl stop bpftune) for the A/B (a write by hand is no way: bpftune's sysctl_tuner then turns net_buffer_tuner off until bpftune restarts); net.core.netdev_budget_usecs is driven by bpftune (pid 1234), seen at /proc/1234/comm: bpftune's net_buffer_tuner changes it by itself as it sees load, and turns itself off when another writer changes it; a change of it would be measured against bpftune and may be set back by it. To let slowpath change it: remove net_buffer_tuner.so from bpftune's plug-in directory (bpftune --print-libdir), or run bpftune with -a for each tuner to keep (systemctl edit bpftune), or stop bpftune (systemctl stop bpftune) for the A/B (a write by hand is no way: bpftune's sysctl_tuner then turns net_buffer_tuner off until bpftune restarts)

# == net.tuner-conflict on bpftune (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Keep one tuner per setting. To let slowpath change them:
#   - remove net_buffer_tuner.so from bpftune's plug-in directory (bpftune
#     --print-libdir), or run bpftune with -a for each tuner to keep
#     (systemctl edit bpftune), or stop bpftune (systemctl stop bpftune) for
#     the A/B (a write by hand is no way: bpftune's sysctl_tuner then turns
#     net_buffer_tuner off until bpftune restarts)
#   - remove udp_buffer_tuner.so from bpftune's plug-in directory (bpftune
#     --print-libdir), or run bpftune with -a for each tuner to keep
#     (systemctl edit bpftune), or stop bpftune (systemctl stop bpftune) for
#     the A/B (a write by hand is no way: bpftune's sysctl_tuner then turns
#     udp_buffer_tuner off until bpftune restarts)
#   Or keep the tuner and write slowpath's values into its configuration
#   (slowpath fix --format tuned writes a tuned profile).

# == net.tuner-conflict on tuned (warning)
# By hand (slowpath makes no change for it here); the remedy, as doctor prints it:
#   Keep one tuner per setting. To let slowpath change them:
#   - drop ring= from that net unit (or narrow its devices=) in a profile of
#     your own that includes site-net
#   Or keep the tuner and write slowpath's values into its configuration
#   (slowpath fix --format tuned writes a tuned profile).
