#!/bin/sh
# carry mounts (with $1 = mount) or unmounts (with $1 = unmount) the filesystems carried from $2
# to $3: for each relative path that follows, $2/<path> is bind-mounted (recursively) on
# $3/<path>, or that bind mount is taken away again. Unmounting touches only a mount on
# $3/<path> showing the same filesystem as $2/<path>, the one this script made.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
op=$1 from=$2 to=$3; shift 3
for rel in "$@"; do
	case $op in
	mount)
		if mountpoint -q -- "$to/$rel" && [ "$(stat -c %d -- "$to/$rel")" = "$(stat -c %d -- "$from/$rel")" ]; then continue; fi
		mkdir -p -- "$to/$rel" || exit 1
		mount --rbind -- "$from/$rel" "$to/$rel" || exit 1 ;;
	unmount)
		if mountpoint -q -- "$to/$rel" && [ "$(stat -c %d -- "$to/$rel")" = "$(stat -c %d -- "$from/$rel")" ]; then
			umount -R -- "$to/$rel" || exit 1
		fi ;;
	*) echo "carry: unknown operation $op" >&2; exit 1 ;;
	esac
done
