# Describes the filesystem holding the path $1 (absolute) for clusterstorage_storage_capacity.
# Reads only. With $2 = "ancestor", a missing $1 is measured at its nearest existing ancestor
# (where a provisioner's `mkdir -p` would put it).
#
# Prints "missing" when nothing is at $1 (or "missing dangling" for a symbolic link to nothing),
# otherwise:
#   exists yes|no         whether $1 itself exists (no: an ancestor was measured)
#   dev <st_dev>          of the resolved path, decimal
#   statfs <fragment size> <blocks> <free blocks> <available blocks> <inodes> <free inodes>
#   mountinfo             followed by this shell's /proc/self/mountinfo
#   resolved              followed by the path with every symbolic link resolved, to the end
LC_ALL=C; export LC_ALL
p=$1
exists=yes
if [ ! -e "$p" ]; then
	if [ "$2" != ancestor ]; then
		if [ -L "$p" ]; then echo "missing dangling"; else echo missing; fi
		exit 0
	fi
	exists=no
	while [ ! -e "$p" ]; do p=$(dirname -- "$p") || exit 1; done
fi
# realpath is GNU coreutils; readlink -f also does it on busybox.
resolved=$(realpath -e -- "$p" 2>/dev/null || readlink -f -- "$p") || exit 1
dev=$(stat -c %d -- "$resolved") || exit 1
statfs=$(stat -f -c '%S %b %f %a %c %d' -- "$resolved") || exit 1
printf 'exists %s\ndev %s\nstatfs %s\nmountinfo\n' "$exists" "$dev" "$statfs"
cat /proc/self/mountinfo || exit 1
printf 'resolved\n%s\n' "$resolved"
