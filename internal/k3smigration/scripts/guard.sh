#!/bin/sh
# guard is the node guard: armed (as a transient systemd timer) before k3s is stopped, it runs
# only when the migration did not disarm it in time (SSH lost for good, the provider killed),
# and puts k3s back on the original directory. Arguments: $1 the unit, $2 the switch method,
# $3 the source path, $4 the target path, $5 where the switch puts the directory at the source
# (the backup or Restore's staging dir), $6 the real path of the original directory, $7 the
# real path of the copy, $8 the marker's name, $9 the state file (the migration writes
# "phase=switched" there before the switch and "phase=started" before it starts k3s on the copy;
# a saved copy of the k3s configuration sits next to it as <state>.config, "none" when there was
# no file), ${10} the k3s configuration file, ${11} fstab, ${12} "target" when the switch points
# k3s at the target (a migration), "source" for a restore.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
svc=$1 method=$2 src=$3 dst=$4 away=$5 live=$6 copy=$7 marker=$8 state=$9
cfg=${10} fstab=${11} dir=${12}
phase=$(sed -n 's/^phase=//p' "$state" 2>/dev/null | tail -n 1)
echo "clusterstorage node guard: the k3s data dir migration was not disarmed in time (phase ${phase:-stopped}): putting $svc back on $live"
systemctl stop "$svc"
if [ "$phase" = started ]; then
	# k3s ran on the copy: its containers run on layers there and would go on writing to it.
	stop_containers "$copy"
fi
if [ "$phase" = switched ] || [ "$phase" = started ]; then
	case $method in
	config)
		if [ "$(cat "$state.config.none" 2>/dev/null)" = none ]; then rm -f -- "$cfg"; else cp -p -- "$state.config" "$cfg" || exit 1; fi
		if [ ! -d "$src" ] && [ -d "$away" ] && [ "$dir" = target ]; then mv -T -- "$away" "$src" || exit 1; fi
		if [ "$dir" = source ] && [ -d "$src" ] && [ ! -e "$away" ]; then mv -T -- "$src" "$away" || exit 1; fi ;;
	*)
		if [ "$dir" = target ]; then
			if [ -L "$src" ] && [ "$(readlink -- "$src")" = "$dst" ]; then rm -f -- "$src" || exit 1; fi
			if mountpoint -q -- "$src"; then umount -- "$src" || exit 1; fi
			if [ -d "$away" ] && [ ! -L "$away" ]; then
				if [ -d "$src" ]; then rmdir -- "$src" || exit 1; fi
				mv -T -- "$away" "$src" || exit 1
			fi
			if [ "$method" = bind_mount ] && [ -f "$fstab" ]; then
				grep -v -F -x -e "$dst $src none bind 0 0" -- "$fstab" > "$fstab.clusterstorage-guard" && mv -f -- "$fstab.clusterstorage-guard" "$fstab"
			fi
		else
			if [ -d "$src" ] && [ ! -L "$src" ] && [ ! -e "$away" ]; then
				if [ "$method" = bind_mount ]; then
					mv -T -- "$src" "$away" && mkdir -- "$src" && mount --bind "$dst" "$src" || exit 1
				else
					mv -T -- "$src" "$away" && ln -s -T -- "$dst" "$src" || exit 1
				fi
			fi
		fi ;;
	esac
fi
if [ "$phase" = started ]; then
	# k3s ran on the copy: what it wrote there is the newest data. Copy it back over the original.
	if sync_tree -n --delete --exclude="/$marker" -i "$copy/" "$live/" | grep -q . || datastore_differs "$copy" "$live"; then
		echo "clusterstorage node guard: k3s ran on $copy: copying it back over $live"
		{ sync_tree --delete --exclude="/$marker" "$copy/" "$live/" && sync_datastore "$copy" "$live"; } || { echo "clusterstorage node guard: copying back failed: $copy holds the newest data; k3s is left stopped" >&2; exit 1; }
	fi
fi
systemctl start "$svc"
echo "clusterstorage node guard: $svc started on $live"
