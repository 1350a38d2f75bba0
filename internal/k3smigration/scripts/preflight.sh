#!/bin/sh
# preflight describes $1 (the directory to copy) and $2 (where it goes) as key=value lines; $3 is
# the marker file's name. Then what holders says about $2 (processes using it, the mount table)
# and, when the node has k3s-killall.sh, what it unmounts.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
src=$1 dst=$2 marker=$3
if [ -L "$src" ]; then printf 'source=symlink\nsource_link=%s\n' "$(safe "$(readlink -- "$src")")"; exit 0; fi
if [ ! -e "$src" ]; then echo source=missing; exit 0; fi
if [ ! -d "$src" ]; then echo source=notdir; exit 0; fi
echo source=dir
rs=$(realpath -e -- "$src") || exit 1
printf 'source_real=%s\n' "$(safe "$rs")"
rd=$(realpath -m -- "$dst") || exit 1
printf 'target_real=%s\n' "$(safe "$rd")"
for d in server agent data storage; do if [ -d "$src/$d" ]; then printf 'layout=%s\n' "$d"; fi; done
if [ -d "$src/storage" ] && [ -n "$(find "$src/storage" -mindepth 1 -maxdepth 1 -print -quit)" ]; then echo storage=nonempty; fi
if mountpoint -q -- "$src"; then echo source_mountpoint=yes; fi
if [ -L "$dst" ]; then echo target=symlink
elif [ ! -e "$dst" ]; then echo target=missing
elif [ ! -d "$dst" ]; then echo target=notdir
else
	if [ -f "$dst/$marker" ]; then
		printf 'target_marker=%s\n' "$(safe "$(head -n 1 -- "$dst/$marker")")"
		printf 'target_marker_state=%s\n' "$(safe "$(sed -n 2p -- "$dst/$marker")")"
		printf 'target_used=%s\n' "$(du -s -x -B1 -- "$rd" | cut -f1)"
	fi
	if [ -n "$(find "$dst" -mindepth 1 -maxdepth 1 ! -name "$marker" -print -quit)" ]; then echo target=nonempty; else echo target=empty; fi
fi
p=$rd
while [ ! -e "$p" ]; do p=$(dirname -- "$p"); done
printf 'target_existing=%s\n' "$(safe "$p")"
if [ "$(stat -c %d -- "$rs")" = "$(stat -c %d -- "$p")" ]; then echo same_fs=yes; fi
printf 'source_df=%s\n' "$(safe "$(df -B1 --output=avail,size,fstype,source,target -- "$rs" | tail -n 1)")"
printf 'target_df=%s\n' "$(safe "$(df -B1 --output=avail,size,fstype,source,target -- "$p" | tail -n 1)")"
printf 'source_used=%s\n' "$(du -s -x -B1 -- "$rs" | cut -f1)"
printf 'source_apparent=%s\n' "$(du -s -x -B1 --apparent-size -- "$rs" | cut -f1)"
for t in rsync flock sha256sum; do command -v "$t" >/dev/null 2>&1 || printf 'missing_tool=%s\n' "$t"; done
if k=$(command -v k3s-killall.sh 2>/dev/null); then
	printf 'killall=%s\n' "$(safe "$k")"
	if grep -q K3S_DATA_DIR -- "$k"; then echo killall_data_dir=yes; fi
	# The prefixes it unmounts and removes: do_unmount_and_remove '<prefix>' in k3s's own script.
	sed -n "s/^[[:space:]]*do_unmount_and_remove[[:space:]]*['\"]\\([^'\"]*\\)['\"].*/killall_unmounts=\\1/p" -- "$k" | tr -d '\r'
fi
if [ -e "$dst" ]; then holders "$rd"; else sed 's/^/mountinfo /' /proc/self/mountinfo; fi
exit 0
