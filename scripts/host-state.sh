#!/usr/bin/env bash
# Prints the host state the test suite may change and must restore: mounts
# of tracefs, debugfs and bpffs, network namespaces, loop, zram, brd and
# device-mapper devices, podman's leftovers, the sysctls tests set and
# what a browser or the VM lab left in /tmp.
# .ci/run prints it before and after `make test` and fails when they differ.
set -uo pipefail
echo "# mounts"
awk '$3 ~ /^(tracefs|debugfs|bpf)$/ {print $2, $3}' /proc/mounts | sort
echo "# netns"
ip netns list 2>/dev/null | awk '{print $1}' | sort
echo "# loop devices"
losetup -a 2>/dev/null | sort
echo "# zram, brd, dm"
ls /sys/block 2>/dev/null | grep -E '^(zram|ram|dm-)' | sort
ls /dev/mapper 2>/dev/null | grep -v '^control$' | sort
echo "# sysctls"
for s in net.core.netdev_max_backlog net.core.netdev_budget net.core.netdev_budget_usecs net.ipv4.ip_forward \
	net.core.rmem_max net.core.rmem_default kernel.bpf_stats_enabled vm.dirty_ratio vm.dirty_background_ratio; do
	printf '%s = %s\n' "$s" "$(sysctl -n "$s" 2>/dev/null)"
done
echo "# nftables tables"
nft list tables 2>/dev/null | sort
echo "# left in /tmp by a browser or the VM lab"
find /tmp -maxdepth 1 \( -name 'org.chromium.Chromium.*' -o -name 'slowpath-vm-*' -o -name 'spc-*' \) 2>/dev/null | wc -l
