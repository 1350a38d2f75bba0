#!/usr/bin/env bash
# Installs the Debian packages the tests, the local cluster and the demo use, when missing.
set -euo pipefail

# systemd-container (systemd-nspawn) and e2fsprogs: the local cluster's nodes 2..N are machines
# with a real systemd and loop-mounted ext4 disks (tools/kube/node.sh). strace: the WriteFile
# fsync test; shellcheck: make lint; jq: the demo reads the cluster's nodes.json; libsqlite3-dev:
# kine, the k3s-shaped node's datastore, links Debian's sqlite.
packages=(containerd runc containernetworking-plugins fio busybox-static openssl openssh-server openssh-client sudo rsync
	iproute2 sqlite3 libsqlite3-dev attr acl psmisc bc systemd-container e2fsprogs strace shellcheck jq)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "==> apt-get install ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# open-iscsi and the NFS client stay off this machine: the per-node preflight test installs them
# on one machine node only, with dpkg from bin/debs (bind-mounted into every machine node), so the
# test itself needs no network. Downloaded with what they need beyond this machine's packages
# (the machines run this machine's root file system).
debs="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/debs"
if ! compgen -G "$debs/open-iscsi_*.deb" >/dev/null || ! compgen -G "$debs/nfs-common_*.deb" >/dev/null; then
	echo "==> downloading open-iscsi and nfs-common into $debs" >&2
	mkdir -p "$debs/partial"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install --download-only -y -qq --no-install-recommends -o "Dir::Cache::archives=$debs" open-iscsi nfs-common >/dev/null
fi
