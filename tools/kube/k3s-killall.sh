#!/bin/sh
# k3s-killall.sh on a k3s-shaped test machine (cluster.sh, CLUSTER_K3S_NODES): our own script that
# does what the one k3s's install.sh writes to /usr/local/bin/k3s-killall.sh does on a node (its
# current form, which honours K3S_DATA_DIR), as far as this machine has those things:
#   - stops every k3s*.service unit;
#   - kills the process trees of the containerd shims started from the data dir's bundled
#     binaries (<data-dir>/data/<hash>/bin/containerd-shim*), so every container stops;
#   - unmounts, deepest first, and removes every mount point below /run/k3s, /var/lib/kubelet/pods,
#     /var/lib/kubelet/plugins and /run/netns/cni- (the containers' rootfs and volume mounts);
#   - leaves the data dir's own mounts alone (the form before mid-2024 also unmounted and removed
#     everything whose path starts with /var/lib/rancher/k3s, ignoring K3S_DATA_DIR: that form is
#     k3s-killall-old.sh, which tests put in this one's place).
# Its unmounting function has the real script's name and takes its prefixes as quoted literals,
# as the real one does: the provider's preflight reads those lines to learn what killall removes.
# Not here: the CNI namespaces, interfaces and iptables rules it also removes (the test cluster
# has no pod network).
K3S_DATA_DIR=${K3S_DATA_DIR:-/var/lib/rancher/k3s}

for unit in /etc/systemd/system/k3s*.service; do
	if [ -s "$unit" ]; then systemctl stop "${unit##*/}"; fi
done

# descendants PID...: the PIDs and all their descendants.
descendants() {
	for pid in "$@"; do
		echo "$pid"
		# shellcheck disable=SC2046 # one PID per word
		descendants $(ps -e -o ppid= -o pid= | awk -v p="$pid" '$1 == p {print $2}')
	done
}
shims=$(ps -e -o pid= -o args= | awk -v d="$K3S_DATA_DIR/data/" '{i = index($2, d); if (i == 1 && $2 ~ /\/bin\/containerd-shim/) print $1}')
if [ -n "$shims" ]; then
	# shellcheck disable=SC2046,SC2086 # PIDs, one per word
	kill -9 $(descendants $shims) 2>/dev/null
fi

# do_unmount_and_remove PREFIX: unmounts by force every mount whose path starts with PREFIX,
# deepest first, and removes its mount point with everything below it.
do_unmount_and_remove() {
	awk -v p="$1" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		umount -f "$m" && rm -rf "$m"
	done
}
do_unmount_and_remove '/run/k3s'
do_unmount_and_remove '/var/lib/kubelet/pods'
do_unmount_and_remove '/var/lib/kubelet/plugins'
do_unmount_and_remove '/run/netns/cni-'
exit 0
