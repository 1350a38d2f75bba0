#!/bin/sh
# What the files of a volume that is a directory on this node take (clusterstorage_volume_migration's
# plan: the data the new volume must hold), run over the provider's ssh block.
#   usage.sh PATH
# Prints "df BYTES" when PATH is a filesystem's mount point of its own (a local PV on a disk or
# partition: df's used bytes, at once), else "du BYTES" (du -skx: the blocks the files under it
# take, on its filesystem only).
set -euf
dir=$(cd "$1" && pwd -P)
# df -P: one line per filesystem, its mount point last (a mount point with a space is taken as
# not PATH's: du then measures it).
line=$(df -kP "$dir" | tail -n 1)
mnt=${line##* }
if [ "$mnt" = "$dir" ]; then
	# shellcheck disable=SC2086 # the fields of df's line (globbing is off)
	set -- $line
	echo "df $(($3 * 1024))"
	exit 0
fi
# shellcheck disable=SC2046 # du's fields (globbing is off); files the workload removes meanwhile
# make du complain and count what is there
set -- $(du -skx "$dir")
echo "du $(($1 * 1024))"
