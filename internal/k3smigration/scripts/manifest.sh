#!/bin/sh
# manifest counts the entries of $1 by type and sums the regular files' sizes ($2 is the marker
# file's name, left out), then prints the SHA-256 of the files k3s cannot do without: the
# datastore, the token, the credentials and certificates, and the agent's own keys.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
cd -- "$1" || exit 1
find . -xdev ! -path "./$2" -printf '%y %s\n' | awk '{n[$1]++; if ($1 == "f") b += $2} END {printf "count dirs=%.0f files=%.0f links=%.0f other=%.0f bytes=%.0f\n", n["d"], n["f"], n["l"], NR - n["d"] - n["f"] - n["l"], b}'
{
	find server/db server/cred server/tls -xdev -type f 2>/dev/null
	if [ -f server/token ]; then echo server/token; fi
	if [ -f server/node-token ]; then echo server/node-token; fi
	find agent -maxdepth 1 -type f 2>/dev/null
} | sort | while IFS= read -r f; do
	printf 'sum %s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$(safe "$f")" || exit 1
done
