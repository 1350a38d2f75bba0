#!/bin/sh
# kill sends signal $1 to the $2 process ids (negative: process groups) that follow, waits up to
# 2 s for them to be gone, and prints what holders says about the remaining arguments.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
sig=$1 n=$2; shift 2
pids=
i=0
while [ "$i" -lt "$n" ]; do
	case $1 in -[0-9]*|[0-9]*) pids="$pids $1" ;; *) echo "not a process id: $1" >&2; exit 1 ;; esac
	shift; i=$((i+1))
done
# shellcheck disable=SC2086 # one word per process id
kill -s "$sig" -- $pids 2>/dev/null
i=0
while [ "$i" -lt 20 ]; do
	alive=
	for p in $pids; do if kill -0 -- "$p" 2>/dev/null; then alive=1; fi; done
	if [ -z "$alive" ]; then break; fi
	sleep 0.1; i=$((i+1))
done
holders "$@"
