#!/bin/sh
# stop stops unit $1, then runs k3s-killall.sh when the node has it, with K3S_DATA_DIR set to $2:
# it stops the containers (whose shims k3s leaves running on purpose when its unit stops). It
# prints "killall=absent" when the script is not installed, "killall_failed=<exit status>" and
# its last output lines ("killall_output=...") when it fails, the unit's state, and then what
# holders says about $2 and the further arguments.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
svc=$1; shift
systemctl stop "$svc" || exit 1
if command -v k3s-killall.sh >/dev/null 2>&1; then
	out=$(K3S_DATA_DIR=$1 k3s-killall.sh 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		printf 'killall_failed=%s\n' "$rc"
		printf '%s\n' "$out" | tail -n 5 | while IFS= read -r l; do printf 'killall_output=%s\n' "$(safe "$l")"; done
	fi
else
	echo killall=absent
fi
printf 'state=%s\n' "$(systemctl is-active "$svc" 2>/dev/null)"
holders "$@"
