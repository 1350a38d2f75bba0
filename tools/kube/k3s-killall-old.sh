#!/bin/sh
# k3s-killall-old.sh: k3s-killall.sh in the form install.sh wrote before mid-2024, ours, for the
# tests that put it in place of the current one (k3s-killall.sh) on the k3s-shaped machine. That
# form knows no other data dir than the default one and takes no setting for it:
#   - stops every k3s*.service unit;
#   - kills the process trees of every containerd shim run from a .../k3s/data/<hash>/bin;
#   - unmounts by force, deepest first, and removes with everything below it every mount whose
#     path merely starts with /var/lib/rancher/k3s (so /var/lib/rancher/k3s-nvme too), besides
#     those below /run/k3s, /var/lib/kubelet/pods, /var/lib/kubelet/plugins and /run/netns/cni-.

for unit in /etc/systemd/system/k3s*.service; do
	if [ -s "$unit" ]; then systemctl stop "${unit##*/}"; fi
done

descendants() {
	for pid in "$@"; do
		echo "$pid"
		# shellcheck disable=SC2046 # one PID per word
		descendants $(ps -e -o ppid= -o pid= | awk -v p="$pid" '$1 == p {print $2}')
	done
}
shims=$(ps -e -o pid= -o args= | awk '$2 ~ /k3s\/data\/[^\/]*\/bin\/containerd-shim/ {print $1}')
if [ -n "$shims" ]; then
	# shellcheck disable=SC2046,SC2086 # PIDs, one per word
	kill -9 $(descendants $shims) 2>/dev/null
fi

do_unmount_and_remove() {
	awk -v p="$1" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		umount -f "$m" && rm -rf "$m"
	done
}
do_unmount_and_remove '/run/k3s'
do_unmount_and_remove '/var/lib/rancher/k3s'
do_unmount_and_remove '/var/lib/kubelet/pods'
do_unmount_and_remove '/var/lib/kubelet/plugins'
do_unmount_and_remove '/run/netns/cni-'
exit 0
