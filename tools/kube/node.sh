#!/usr/bin/env bash
# node.sh: a test machine with a real systemd as PID 1, booted with systemd-nspawn, that knows
# nothing about Kubernetes. cluster.sh uses it for nodes 2..N; a k3s-shaped test node is the same
# machine with another unit layout.
#
#   tools/kube/node.sh up DIR       boot (or power on again) the machine described by DIR/machine.env
#   tools/kube/node.sh down DIR     power it off; its disk (DIR/disk.img) is kept, as a real node's
#   tools/kube/node.sh destroy DIR  power off, then delete DIR: nothing is left (mounts, loops, cgroups)
#   tools/kube/node.sh exec DIR CMD...  run CMD inside the machine (all its namespaces)
#   tools/kube/node.sh status DIR   running or stopped, and `systemctl is-system-running`
#   tools/kube/node.sh cgroups-make NAME / cgroups-remove NAME   the cgroup NAME in every
#                                   hierarchy, for a node that runs on the host (its kubelet's root)
#
# DIR/machine.env (bash, written by the caller) sets:
#   MACHINE_NAME        machine and hostname; also its cgroup, /sys/fs/cgroup/<c>/MACHINE_NAME
#   MACHINE_ADDRESS     its own loopback address (127.0.0.2...): sshd listens there
#   MACHINE_SSH_PORT    sshd's port on that address (default 22)
#   MACHINE_AUTHORIZED_KEYS  a file of public keys that may log in as root
#   MACHINE_LAYOUT      a directory copied over the root file system at every boot: the variant's
#                       units (/etc/systemd/system/*.service and *.wants/ links), their config files
#   MACHINE_WAIT_UNITS  units `up` waits for to be active (array)
#   MACHINE_BINDS       host:machine bind mounts (array); MACHINE_BINDS_RO read-only ones
#   MACHINE_DISK_SIZE   size of the system disk, a sparse ext4 image (default 8G)
#   MACHINE_DATA_DISKS  extra disks as name:size (array): each a sparse ext4 image, loop-mounted at
#                       /mnt/disks/<name> inside the machine
#   MACHINE_MASK        extra units to mask (array)
#   MACHINE_DISK_DIRS   directories bound from the system disk, an ext4 file system, because
#                       overlayfs (containerd's snapshotter) cannot use the overlay root as its
#                       upper layer (default: /var/lib/containerd /var/lib/kubelet)
#
# The machine shares the host's network (its own loopback address keeps its ports apart) and has
# its own mount, PID, UTS, IPC and cgroup namespaces. Its root file system is an overlay: the host's
# / as the lower layer, so it has every Debian package the host has, and an upper layer on its own
# system disk (DIR/disk.img, ext4 on a loop device), so what runs inside writes nothing to the host
# and what a test leaves on the node survives a power-off, as on a real node. The system disk also
# holds MACHINE_DISK_DIRS: overlayfs cannot be an upper layer on overlayfs.
#
# Facts this follows (found on the 2-core Debian 12 test machines, cgroup v1/v2 hybrid, no systemd
# as PID 1): nspawn needs --keep-unit (no system bus) and --register=no; the launcher moves itself
# into a cgroup of its own in every hierarchy first, so the machine's cgroup namespace starts there
# and a kubelet inside puts /kubepods below it; the cgroup v1 controllers are read-only inside until
# remounted rw; DefaultTimeoutStopSec=5s or poweroff waits 90 s for leftover processes; overlayfs
# refuses an upper dir on the lower layer's own file system (hence the loop-mounted disk).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Host units the machine must not start a second time (enabled on the host, so enabled in the
# lower layer too), masked in the upper layer.
DEFAULT_MASK=(postgresql.service apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer
	e2scrub_all.timer e2scrub_reap.service fstrim.timer man-db.timer systemd-timesyncd.service
	getty@tty1.service console-getty.service machines.target remote-fs.target)

log() { printf 'node: [%3ds] %s\n' "$SECONDS" "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}

# load DIR: reads DIR/machine.env and sets the derived paths.
load() {
	DIR=$(cd "$1" && pwd) || die "no machine directory $1"
	[[ -f $DIR/machine.env ]] || die "$DIR/machine.env is missing"
	MACHINE_SSH_PORT=22
	MACHINE_DISK_SIZE=8G
	MACHINE_WAIT_UNITS=()
	MACHINE_BINDS=()
	MACHINE_BINDS_RO=()
	MACHINE_DATA_DISKS=()
	MACHINE_MASK=()
	MACHINE_DISK_DIRS=(/var/lib/containerd /var/lib/kubelet)
	MACHINE_LAYOUT=
	MACHINE_AUTHORIZED_KEYS=
	# shellcheck source=/dev/null
	source "$DIR/machine.env"
	[[ -n ${MACHINE_NAME:-} && -n ${MACHINE_ADDRESS:-} ]] || die "$DIR/machine.env must set MACHINE_NAME and MACHINE_ADDRESS"
	DISK=$DIR/disk
	ROOTFS=$DIR/root
	PIDFILE=$DIR/nspawn.pid
	CONSOLE=$DIR/console.log
}

nspawn_pid() {
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
	# A recycled pid is not ours: the command line names our root directory.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $ROOTFS " || return 1
	echo "$pid"
}

# leader: the machine's PID 1 (systemd): nspawn's child that is not a zombie. nspawn's helper
# processes can linger as zombies beside it (one with a lower pid than systemd's held a CI run's
# boot wait for 300 s: a zombie has no namespaces to enter).
leader() {
	local pid
	pid=$(nspawn_pid) || return 1
	ps -o pid=,stat= --ppid "$pid" | awk '$2 !~ /^Z/ {print $1; found = 1; exit} END {exit !found}'
}

in_machine() {
	local l
	l=$(leader) || return 1
	[[ -n $l ]] || return 1
	nsenter -t "$l" -m -u -i -p -C -- "$@"
}

# wait_until DESCRIPTION TIMEOUT COMMAND...: polls; fails early when nspawn has exited.
wait_until() {
	local what=$1 timeout=$2
	shift 2
	local deadline=$((SECONDS + timeout)) next_report=$((SECONDS + 30))
	WAIT_STATE=
	until "$@" >/dev/null 2>&1; do
		if ! kill -0 "$(cat "$PIDFILE" 2>/dev/null)" 2>/dev/null; then
			tail -n 40 "$CONSOLE" >&2 || true
			die "machine $MACHINE_NAME stopped while waiting for $what (console: $CONSOLE)"
		fi
		((SECONDS < deadline)) || {
			tail -n 40 "$CONSOLE" >&2 || true
			in_machine systemctl list-jobs --no-pager >&2 || true
			die "timed out after ${timeout}s waiting for $what on $MACHINE_NAME${WAIT_STATE:+ (last seen: $WAIT_STATE)}"
		}
		if ((SECONDS >= next_report)); then
			log "still waiting for $what on $MACHINE_NAME${WAIT_STATE:+ ($WAIT_STATE)}"
			next_report=$((SECONDS + 30))
		fi
		sleep 0.2
	done
}

# --- disks ----------------------------------------------------------------------

# mount_image IMAGE SIZE MOUNTPOINT [direct-io]: a sparse ext4 image, made once, mounted through a
# loop device that is detached again on unmount (mount -o loop sets autoclear); direct-io makes
# the loop device pass O_DIRECT through to the host's disk.
mount_image() {
	local image=$1 size=$2 mp=$3 dio=${4:-}
	mkdir -p "$mp"
	mountpoint -q "$mp" && return 0
	if [[ ! -f $image ]]; then
		truncate -s "$size" "$image"
		mkfs.ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1 "$image"
	fi
	mount -o loop "$image" "$mp"
	if [[ -n $dio ]]; then
		# A data disk is measured (fio, O_DIRECT): its loop device passes direct I/O through to
		# the host's disk instead of the host's page cache, which made it 2x "faster" than the disk.
		losetup --direct-io=on "$(findmnt -n -o SOURCE "$mp")" ||
			log "WARNING: $image: no direct I/O through its loop device; fio on it measures the host's page cache"
	fi
}

# unmount_below PATH: every mount point at or below PATH on the host, deepest first.
unmount_below() {
	local mp
	while read -r mp; do
		umount "$mp" 2>/dev/null || umount -l "$mp" || true
	done < <(awk -v s="$1" '$2 == s || index($2, s "/") == 1 { print length($2), $2 }' /proc/self/mounts | sort -rn | cut -d' ' -f2-)
}

# --- the root file system -----------------------------------------------------------

# populate_upper: the common layer every variant gets, then the variant's layout.
populate_upper() {
	local up=$DISK/upper u
	mkdir -p "$up/etc/systemd/system/sysinit.target.wants" "$up/etc/systemd/system.conf.d" "$up/etc/ssh" "$up/mnt/disks"
	for u in "${DEFAULT_MASK[@]}" "${MACHINE_MASK[@]}"; do
		ln -sfn /dev/null "$up/etc/systemd/system/$u"
	done
	cat >"$up/etc/systemd/system.conf.d/90-test-machine.conf" <<'EOF'
# Written by tools/kube/node.sh: without it poweroff waits 90 s for processes a unit leaves behind.
[Manager]
DefaultTimeoutStopSec=5s
EOF
	# The cgroup v1 controllers are mounted read-only inside; a kubelet or containerd needs them rw.
	cat >"$up/etc/systemd/system/cgroup-rw.service" <<'EOF'
# Written by tools/kube/node.sh.
[Unit]
Description=Remount the cgroup controllers read-write
DefaultDependencies=no
Before=sysinit.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for d in /sys/fs/cgroup/*/; do mount -o remount,bind,rw "$d" || true; done'

[Install]
WantedBy=sysinit.target
EOF
	ln -sfn ../cgroup-rw.service "$up/etc/systemd/system/sysinit.target.wants/cgroup-rw.service"
	echo "$MACHINE_NAME" >"$up/etc/hostname"
	# root's home of its own, as on a fresh node: an opaque upper dir hides the host's /root (its
	# shell startup files run on every SSH command and may hang on the host's locks and caches).
	if [[ ! -d $up/root ]]; then
		mkdir -m 700 "$up/root"
		setfattr -n trusted.overlay.opaque -v y "$up/root"
		cp /etc/skel/.bashrc /etc/skel/.profile "$up/root/"
	fi
	write_sshd "$up"
	if [[ -n $MACHINE_LAYOUT ]]; then
		cp -a --remove-destination "$MACHINE_LAYOUT/." "$up/"
	fi
}

# write_sshd UPPER: Debian's ssh.service (enabled on the host) with a config of the machine's own:
# its address, its host key (made once, kept in DIR/ssh), root logins by key only.
write_sshd() {
	local up=$1
	mkdir -p "$DIR/ssh"
	[[ -f $DIR/ssh/ssh_host_ed25519_key ]] || ssh-keygen -q -t ed25519 -N '' -C "$MACHINE_NAME" -f "$DIR/ssh/ssh_host_ed25519_key"
	cp "$DIR/ssh/ssh_host_ed25519_key" "$DIR/ssh/ssh_host_ed25519_key.pub" "$up/etc/ssh/"
	chmod 600 "$up/etc/ssh/ssh_host_ed25519_key"
	mkdir -p "$up/etc/ssh/authorized_keys"
	if [[ -n $MACHINE_AUTHORIZED_KEYS ]]; then
		install -m 644 "$MACHINE_AUTHORIZED_KEYS" "$up/etc/ssh/authorized_keys/root"
	fi
	cat >"$up/etc/ssh/sshd_config" <<EOF
# Written by tools/kube/node.sh for machine $MACHINE_NAME.
ListenAddress $MACHINE_ADDRESS:$MACHINE_SSH_PORT
HostKey /etc/ssh/ssh_host_ed25519_key
AuthorizedKeysFile /etc/ssh/authorized_keys/%u
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
	mkdir -p "$up/etc/systemd/system/multi-user.target.wants"
	ln -sfn /lib/systemd/system/ssh.service "$up/etc/systemd/system/multi-user.target.wants/ssh.service"
}

# --- cgroups ----------------------------------------------------------------------

# cgroup_dirs: the machine's cgroup in every mounted hierarchy (v1 controllers, name=systemd, the
# v2 unified one).
cgroup_dirs() {
	awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts | while read -r h; do
		echo "$h/$MACHINE_NAME"
	done
}

# make_cgroups: the machine's cgroup in every hierarchy (cpuset's needs its cpus and mems set
# before a process can join).
make_cgroups() {
	local d parent
	while read -r d; do
		parent=$(dirname "$d")
		mkdir -p "$d"
		if [[ -f $parent/cpuset.cpus && -f $d/cpuset.cpus ]]; then
			cat "$parent/cpuset.cpus" >"$d/cpuset.cpus"
			cat "$parent/cpuset.mems" >"$d/cpuset.mems"
		fi
	done < <(cgroup_dirs)
}

# enter_cgroups PID: makes the machine's cgroups and moves PID (the launcher) into them, so the
# nspawn it execs next (and the machine's cgroup namespace) starts there.
enter_cgroups() {
	local pid=$1 d
	make_cgroups
	while read -r d; do
		echo "$pid" >"$d/cgroup.procs"
	done < <(cgroup_dirs)
}

# remove_cgroups: kills whatever is left in the machine's cgroups (nothing, normally: the PID
# namespace dies with its init) and removes them, deepest first.
remove_cgroups() {
	local d pids deadline=$((SECONDS + 10))
	while :; do
		pids=$(cgroup_dirs | while read -r d; do
			[[ -d $d ]] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
		done | sort -u)
		[[ -z $pids ]] && break
		((SECONDS < deadline)) || die "processes $(echo "$pids" | tr '\n' ' ')are left in $MACHINE_NAME's cgroups"
		# shellcheck disable=SC2086 # one pid per word
		kill -KILL $pids 2>/dev/null || true
		sleep 0.2
	done
	while read -r d; do
		[[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		[[ -d $d ]] && die "cannot remove cgroup $d"
	done < <(cgroup_dirs)
	return 0
}

# --- subcommands --------------------------------------------------------------------

cmd_up() {
	load "$1"
	if nspawn_pid >/dev/null; then
		log "$MACHINE_NAME already runs"
		return 0
	fi
	local start=$SECONDS
	command -v systemd-nspawn >/dev/null || die "systemd-nspawn is missing: apt-get install systemd-container"
	log "booting $MACHINE_NAME at $MACHINE_ADDRESS"
	rm -f "$PIDFILE"
	# The launcher runs in its own session and its own mount namespace (so the machine's disks
	# and root are mounted only there: the host never sees them, a tool walking the state dir
	# never descends into a machine's root, and they vanish with the machine); it execs nspawn,
	# which outlives this script.
	SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 setsid unshare --mount --propagation private -- "$HERE/node.sh" launch "$DIR" \
		>>"$CONSOLE" 2>&1 </dev/null 9<&- &
	local deadline=$((SECONDS + 30))
	until [[ -s $PIDFILE ]]; do
		if ! kill -0 "$!" 2>/dev/null || ((SECONDS >= deadline)); then
			tail -n 20 "$CONSOLE" >&2 || true
			die "$MACHINE_NAME did not start (console: $CONSOLE)"
		fi
		sleep 0.1
	done
	wait_until "systemd in $MACHINE_NAME" 60 leader
	wait_until "$MACHINE_NAME to boot" 300 booted
	local u
	for u in ssh.service "${MACHINE_WAIT_UNITS[@]}"; do
		wait_until "$u" 60 in_machine systemctl is-active --quiet "$u"
	done
	log "$MACHINE_NAME up in $((SECONDS - start))s"
}

# cmd_launch DIR: runs in the machine's own mount namespace (see cmd_up): mounts its disks and
# root file system, enters its cgroups, writes its pid and becomes systemd-nspawn.
cmd_launch() {
	load "$1"
	local d name size
	mount_image "$DIR/disk.img" "$MACHINE_DISK_SIZE" "$DISK"
	mkdir -p "$DISK/upper" "$DISK/work" "$ROOTFS"
	populate_upper
	mount -t overlay overlay -o "lowerdir=/,upperdir=$DISK/upper,workdir=$DISK/work" "$ROOTFS"
	local args=(--boot --keep-unit --register=no --link-journal=no --capability=all
		"--system-call-filter=@keyring bpf" --bind=/dev/kmsg "--machine=$MACHINE_NAME")
	for d in "${MACHINE_DISK_DIRS[@]}"; do
		mkdir -p "$DISK/dirs$d"
		args+=("--bind=$DISK/dirs$d:$d")
	done
	for d in "${MACHINE_DATA_DISKS[@]}"; do
		name=${d%%:*} size=${d#*:}
		mount_image "$DIR/data-$name.img" "$size" "$DIR/mnt/$name" direct-io
		args+=("--bind=$DIR/mnt/$name:/mnt/disks/$name")
	done
	for d in "${MACHINE_BINDS[@]}"; do args+=("--bind=$d"); done
	for d in "${MACHINE_BINDS_RO[@]}"; do args+=("--bind-ro=$d"); done
	args+=(-D "$ROOTFS")
	enter_cgroups $$
	echo $$ >"$PIDFILE"
	exec systemd-nspawn "${args[@]}"
}

# booted: systemd finished starting (running, or degraded when a unit failed; the caller's
# MACHINE_WAIT_UNITS say what matters).
booted() {
	local s
	s=$(in_machine systemctl is-system-running 2>&1) || true
	WAIT_STATE="systemctl is-system-running: ${s:-no answer}"
	[[ $s == running || $s == degraded ]]
}

cmd_down() {
	load "$1"
	local pid l deadline
	if pid=$(nspawn_pid); then
		log "powering off $MACHINE_NAME"
		l=$(leader) || true
		# SIGRTMIN+3 asks systemd for a poweroff; nspawn exits with its init.
		if [[ -n $l ]]; then kill -s RTMIN+3 "$l" 2>/dev/null || true; fi
		deadline=$((SECONDS + 30))
		while kill -0 "$pid" 2>/dev/null; do
			if ((SECONDS >= deadline)); then
				log "$MACHINE_NAME did not power off within 30 s: killing nspawn"
				kill -KILL "$pid" 2>/dev/null || true
				deadline=$((SECONDS + 10))
			fi
			sleep 0.1
		done
	fi
	rm -f "$PIDFILE"
	unmount_below "$DIR" # nothing, normally: the disks were mounted in the machine's namespace only
	remove_cgroups
	# The loop devices detach once the namespace holding their file systems is gone.
	local img deadline=$((SECONDS + 15))
	for img in "$DIR"/*.img; do
		[[ -f $img ]] || continue
		while [[ -n $(losetup -j "$img") ]]; do
			((SECONDS < deadline)) || die "loop device $(losetup -j "$img") is still attached"
			sleep 0.1
		done
	done
	if awk -v s="$DIR/" 'index($2, s) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
		die "mounts are left below $DIR"
	fi
}

cmd_destroy() {
	[[ -d $1 ]] || return 0
	cmd_down "$1"
	rm -rf "$DIR"
}

cmd_status() {
	load "$1"
	if nspawn_pid >/dev/null; then
		echo "$MACHINE_NAME running ($(in_machine systemctl is-system-running 2>/dev/null || true)) at $MACHINE_ADDRESS"
	else
		echo "$MACHINE_NAME stopped"
		return 1
	fi
}

main() {
	local cmd=${1:-}
	[[ $# -ge 2 ]] || {
		echo "usage: $0 up|down|destroy|status|exec DIR [CMD...]" >&2
		exit 2
	}
	case $cmd in
	up | down | status | launch) "cmd_$cmd" "$2" ;;
	destroy) cmd_destroy "$2" ;;
	exec)
		load "$2"
		shift 2
		in_machine "$@"
		;;
	enter-cgroups)
		load "$2"
		enter_cgroups "$3"
		;;
	cgroups-make)
		# For a node that runs on the host (cluster.sh's node 1): its kubelet's cgroup root.
		MACHINE_NAME=$2
		make_cgroups
		;;
	cgroups-remove)
		MACHINE_NAME=$2
		remove_cgroups
		;;
	*)
		echo "usage: $0 up|down|destroy|status|exec DIR [CMD...]" >&2
		exit 2
		;;
	esac
}

main "$@"
