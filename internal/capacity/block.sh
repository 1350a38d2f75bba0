# Walks sysfs from the block device behind a filesystem down to its disks, for
# clusterstorage_storage_capacity. Reads only. $1 is the mount's major:minor, $2 its source
# (used when $1 names no block device, as for btrfs, whose st_dev is anonymous). $3, when set,
# is where sysfs is mounted (default /sys; tests walk a tree of sysfs's layout there).
#
# Prints "none" when no block device is behind the filesystem (tmpfs, overlay, NFS...), otherwise
# one tab-separated line per device on the way, from the filesystem's device down:
#   part <name>                        a partition; its disk follows
#   virt <name> <dm name>              a device-mapper (LVM, LUKS) or md device; its slaves follow
#   disk <name> <rotational> <ro> <removable> <size in 512-byte sectors> <backing file> <model>
LC_ALL=C; export LC_ALL

# attr prints the first line of the sysfs attribute file $1, or nothing when it is absent.
attr() {
	if [ -r "$1" ]; then head -n 1 -- "$1"; fi
}

walk() {
	d=$(cd -P -- "$1" && pwd) || return 1
	n=${d##*/}
	if [ -f "$d/partition" ]; then
		printf 'part\t%s\n' "$n"
		walk "${d%/*}"
		return
	fi
	set -- "$d"/slaves/*
	if [ -e "$1" ]; then
		printf 'virt\t%s\t%s\n' "$n" "$(attr "$d/dm/name")"
		for s; do
			walk "$s" || return 1
		done
		return
	fi
	printf 'disk\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$(attr "$d/queue/rotational")" "$(attr "$d/ro")" \
		"$(attr "$d/removable")" "$(attr "$d/size")" "$(attr "$d/loop/backing_file")" "$(attr "$d/device/model")"
}

root=${3:-/sys}
sys=
if [ -e "$root/dev/block/$1" ]; then
	sys=$root/dev/block/$1
elif [ -b "$2" ]; then
	mm=$(stat -L -c '%t %T' -- "$2") || exit 1
	sys=$root/dev/block/$((0x${mm% *})):$((0x${mm#* }))
fi
if [ -z "$sys" ] || [ ! -e "$sys" ]; then
	echo none
	exit 0
fi
walk "$sys"
