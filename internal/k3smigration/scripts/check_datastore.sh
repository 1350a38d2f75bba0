#!/bin/sh
# check_datastore checks k3s's sqlite datastore in data dir $1 as a database, k3s stopped: a copy
# taken while a writer still had it open can be byte-identical to its original at that moment and
# still be a broken database. It prints "datastore=none" when $1 has no server/db/state.db (an
# agent, or embedded etcd), "datastore=unchecked" when the node has no sqlite3, "datastore=ok"
# when sqlite's integrity check passes, else "datastore=corrupt" and up to ten "problem=" lines.
# The database is opened read-only: its file and WAL are not changed (sqlite may write the -shm
# index beside them, which it rebuilds from the WAL anyway).
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
db=$1/server/db/state.db
if [ ! -f "$db" ]; then echo datastore=none; exit 0; fi
if ! command -v sqlite3 >/dev/null 2>&1; then echo datastore=unchecked; exit 0; fi
out=$(sqlite3 -readonly -batch -cmd '.timeout 10000' "$db" 'PRAGMA integrity_check;' 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ "$out" = ok ]; then echo datastore=ok; exit 0; fi
echo datastore=corrupt
printf 'sqlite3 exit status %s\n%s\n' "$rc" "$out" | head -n 10 | while IFS= read -r l; do printf 'problem=%s\n' "$(safe "$l")"; done
exit 0
