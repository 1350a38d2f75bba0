#!/bin/sh
# services lists the k3s units systemctl knows as "service=<name> <state>", then the unit text of
# each after a "unit=<name>" line.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
command -v systemctl >/dev/null 2>&1 || { echo "systemctl not found on the node: only systemd-managed k3s is supported" >&2; exit 1; }
for s in k3s k3s-agent; do
	if systemctl cat "$s" >/dev/null 2>&1; then
		printf 'service=%s %s\n' "$s" "$(systemctl is-active "$s" 2>/dev/null)"
	fi
done
for s in k3s k3s-agent; do
	if systemctl cat "$s" >/dev/null 2>&1; then
		printf 'unit=%s\n' "$s"
		systemctl cat "$s" 2>/dev/null | grep -v '^unit='
	fi
done
# The node guard needs a running systemd (a transient timer made with systemd-run).
if command -v systemd-run >/dev/null 2>&1; then
	case $(systemctl is-system-running 2>/dev/null) in running|degraded|starting) echo "systemd=yes" ;; esac
fi
exit 0
