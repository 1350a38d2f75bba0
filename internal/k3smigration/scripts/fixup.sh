#!/bin/sh
# fixup rewrites, inside $1, what names the data dir by any of its paths $3... (the configured one
# and the one its symbolic links resolve to: k3s writes whichever it was given) so that it names
# $2 instead: symbolic links whose absolute target is such a path or below it (data/current,
# data/previous, data/cni/*), and the absolute paths in k3s's kubeconfigs
# (server/cred/*.kubeconfig, agent/*.kubeconfig). It prints "fixed=<path>" for each. Used by
# switch_method = "config", which changes the data dir's path.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
dir=$1 to=$2
shift 2
find "$dir" -xdev -type l -print | while IFS= read -r l; do
	t=$(readlink -- "$l")
	for from in "$@"; do
		case $t in
		"$from"|"$from"/*)
			ln -s -f -n -T -- "$to${t#"$from"}" "$l" || exit 1
			printf 'fixed=%s\n' "$(safe "$l")"
			break ;;
		esac
	done
done || exit 1
for f in "$dir"/server/cred/*.kubeconfig "$dir"/agent/*.kubeconfig; do
	[ -f "$f" ] || continue
	changed=""
	for from in "$@"; do
		if grep -q -F -e "$from/" -- "$f"; then
			awk -v from="$from/" -v to="$to/" '{out = ""; while ((i = index($0, from)) > 0) {out = out substr($0, 1, i - 1) to; $0 = substr($0, i + length(from))} print out $0}' "$f" > "$f.clusterstorage-tmp" &&
				chmod --reference="$f" -- "$f.clusterstorage-tmp" && chown --reference="$f" -- "$f.clusterstorage-tmp" &&
				mv -f -- "$f.clusterstorage-tmp" "$f" || exit 1
			changed=1
		fi
	done
	if [ -n "$changed" ]; then printf 'fixed=%s\n' "$(safe "$f")"; fi
done
exit 0
