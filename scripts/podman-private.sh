# Sourced by scripts/image.sh and internal/testing/imagetest: points podman at a
# store, run directory and configuration of its own under a directory, so
# no image store is left behind, with the only settings under which
# Debian's podman 4.3 runs on this machine kind: runc (crun refuses hybrid
# cgroup v1/v2), ulimits within root's hard limits (root lacks
# CAP_SYS_RESOURCE), no bridge network (it turns on ip_forward and adds
# nftables tables), cgroupfs and file events (no systemd as PID 1).
#
#   podman_private DIR   # before the first podman command
#   podman_private_done DIR   # removes the store and what podman made outside it
podman_private() {
	local dir=$1
	mkdir -p "$dir/root" "$dir/runroot" "$dir/tmp"
	# What exists before, so that only what podman creates is removed.
	[ -e /var/lib/containers ] && touch "$dir/had-varlib"
	[ -e /sys/fs/cgroup/memory/libpod_parent ] || [ -e /sys/fs/cgroup/libpod_parent ] && touch "$dir/had-cgroup"
	cat >"$dir/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$dir/root"
runroot = "$dir/runroot"
CONF
	cat >"$dir/containers.conf" <<CONF
[containers]
netns = "none"
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$dir/events.log"
tmp_dir = "$dir/tmp"
[network]
network_config_dir = "$dir/networks"
CONF
	export CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_STORAGE_CONF="$dir/storage.conf"
}

podman_private_done() {
	local dir=$1
	CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_STORAGE_CONF="$dir/storage.conf" \
		podman system reset -f >/dev/null 2>&1 || true
	# containers/image's blob-info cache (root's is not configurable).
	[ -e "$dir/had-varlib" ] || rm -rf /var/lib/containers
	# cgroupfs leaves the empty parent cgroup in every hierarchy.
	if [ ! -e "$dir/had-cgroup" ]; then
		find /sys/fs/cgroup -depth -type d -path '*/libpod_parent*' -exec rmdir {} + 2>/dev/null || true
	fi
	rm -rf "$dir"
}
