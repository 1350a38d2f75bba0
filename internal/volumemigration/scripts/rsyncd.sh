#!/bin/sh
# The receiving end of a copy between nodes (clusterstorage_volume_migration): an rsync daemon
# on the new volume's node, the new claim mounted at /target, reached by copy.sh on the source's
# node (REMOTE). rsync's daemon protocol is not encrypted; it authenticates the client with the
# password in SECRETS ("user:password", a Secret the migration makes and removes).
#   rsyncd.sh PORT SECRETS
# Modules: "target" (read-write: the copy, the delta, the verification's dry runs) and "sync"
# (read-only, lists nothing: reading it first writes the new volume's data to disk, its
# pre-xfer exec, which the client waits for).
set -eu
port=$1
secrets=$2
# TARGET is for the script's own tests, which run it on a directory.
dir=${TARGET:-/target}
conf=${TMPDIR:-/tmp}/rsyncd.conf
# Chrooted into the volume (capability SYS_CHROOT): without a chroot rsync strips the leading
# "/" of every absolute symlink it receives. Symlinks are kept as they are, owners by number
# (the chroot has no user database); the daemon stays root (uid/gid 0), as the copy pod is.
cat >"$conf" <<CONF
port = $port
use chroot = yes
munge symlinks = no
numeric ids = yes
reverse lookup = no
uid = 0
gid = 0
log file = /dev/stdout
pid file =
[target]
	path = $dir
	read only = no
	auth users = migrate
	secrets file = $secrets
	strict modes = no
[sync]
	path = $dir
	read only = yes
	list = no
	auth users = migrate
	secrets file = $secrets
	strict modes = no
	pre-xfer exec = sync -f $dir/. 2>/dev/null || sync
CONF
exec rsync --daemon --no-detach --config="$conf"
