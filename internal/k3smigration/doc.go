// Package k3smigration implements clusterstorage_k3s_data_dir_migration: moving a k3s node's
// data directory (/var/lib/rancher/k3s) to another disk over SSH, with rollback.
//
// # The procedure
//
// Migrate (steps.go) runs, each step logged with tflog and named in errors:
//
//   - preflight: the k3s unit (k3s or k3s-agent, the active one unless named); source is a real
//     directory holding server/ or agent/, not itself a mount point (except for switch_method
//     config); target absent, empty, or an unfinished copy of the same source (its marker file
//     says so); neither inside the other after resolving links; target's filesystem has room
//     for the data (the larger of du's allocated and apparent sizes) plus the margin. Both
//     filesystems are reported.
//   - with measure_write_speed, fio's sequential_write job (10 s, 256 MiB) on each filesystem,
//     in a directory of its own that is removed again.
//   - first copy while k3s runs: rsync -aHAXx --numeric-ids --modify-window=-1 --delete,
//     under flock on the marker file so two copies never write one target. rsync's "files
//     vanished" (exit 24) is expected here.
//   - stop: systemctl stop; k3s-killall.sh with K3S_DATA_DIR when installed; then every
//     containerd shim still holding a file below the data dir is stopped (TERM, then KILL after
//     15 s), with its children and process group; then every mount below the data dir is
//     unmounted (deepest first, never lazily). Any other process still holding the directory
//     fails the step, naming it: it is not k3s's to kill.
//   - final copy: the same rsync, now on a quiet directory.
//   - verify: rsync's dry run must find nothing to change; both sides must have the same number
//     of directories, files, links and other entries and the same bytes; and the SHA-256 of
//     every file of server/db, server/cred, server/tls, server/token, server/node-token and
//     agent's own keys must match.
//   - switch: symlink (source renamed to <source>.pre-migration-<UTC time>, a link to target in
//     its place), config (data-dir set in the config file, source renamed) or bind_mount (source
//     renamed, an empty directory with its mode and owner bind-mounted from target, the mount
//     added to fstab).
//   - start, then healthy: the unit active, and through the Kubernetes API the node Ready with a
//     node lease renewed after the one seen just before the stop (so a Ready condition left over
//     from before the stop does not count, and the node's clock is never compared with ours).
//
// Any failure after the stop rolls back, ignoring cancellation but with its own deadline: k3s
// is stopped again if it was started on the new directory, the switch is undone, and k3s starts
// on the original directory, which the migration only ever read. The error says which step
// failed and whether the rollback worked. Before the stop nothing needs undoing. The partial
// copy stays in target with its marker and is brought up to date by the next attempt. Restore
// (restore_on_destroy) is the same procedure in the other direction, through a staging
// directory <source>.clusterstorage-restore that replaces the link, mount or config setting.
//
// # How it is tested
//
// This machine has no systemd and no k3s. The tests (standin_test.go) build a stand-in node
// below a temporary directory and reach it through a real OpenSSH sshd whose PATH (sshd_config
// SetEnv) starts with the stand-in's bin directory:
//
//   - a data dir with k3s's layout: server/db/state.db (a real SQLite database in WAL mode),
//     server/token and the node-token link to it, server/tls, server/cred, server/manifests,
//     agent keys and kubeconfig, agent/containerd with content blobs, an overlayfs snapshot with
//     hard links (busybox, sh, ls), a trusted.overlay.opaque and a user.* extended attribute,
//     data/<hash>/bin with an absolute data/current link, and storage/pvc-* with a POSIX ACL
//     and a file owned by uid 1000;
//   - a systemctl shim (start, stop, is-active, cat) running a k3s stand-in that refuses to start
//     without a token or on a corrupt datastore, records the directory it runs on, keeps a file
//     open below it, and writes to the datastore five times a second;
//   - a containerd-shim stand-in, started from data/<hash>/bin like k3s's own, that mounts a
//     tmpfs as a container rootfs below the data dir, keeps it busy and outlives the service
//     (k3s's unit stops with KillMode=process);
//   - a k3s-killall.sh stand-in that stops the services but, unlike the real one, leaves the
//     shims running (as in the report that prompted this resource), so the migration's own shim
//     handling is what is tested.
//
// Real rsync, mounts, processes, signals and sshd are used throughout. Not tested here: real
// systemd units, a real k3s and containerd (and so real container mounts and the real
// k3s-killall.sh), drain against a cluster (the test cluster is shared), and the health
// check against a restarting kubelet: in the acceptance tests the Kubernetes node is the test
// cluster's node, whose real kubelet stays Ready and keeps renewing its lease while the
// stand-in k3s restarts, so the check passes on the next renewal.
//
// The fault matrix (TestMigrate_faults) checks, for each fault, that every file of the original
// is unchanged (contents, modes, owners, links, hard-link groups, extended attributes; the
// datastore, which the running service keeps writing to, is checked for integrity and no lost
// rows), that the service runs on it again, that the error names the step and says nothing was
// lost, and that a rerun succeeds: the SSH connection cut during the first and the final copy,
// a target filesystem too small at preflight and one filling up during the final copy, a
// verification mismatch, the service failing to start on the new directory, the node never
// becoming healthy on it, and cancellation during either copy.
//
// # Benchmark
//
// scripts/bench-k3s.sh (TestBenchK3sMigration) on the stand-in, 1 GiB (900 MiB of 1 MiB blobs,
// 10,000 files of 10 KiB), 1% rewritten between the copies, on this project's 2-core test VM
// (ext4 on virtio, load average about 3): the migration's rsync copies at 0.95x the speed of a
// plain `rsync -a` (median of three synced runs each; 0.98x for the first copy inside the
// migration); k3s was down 3.1 s against 12.3 s for a one-phase stop-copy-start (0.25). Of those
// 3.1 s the stand-in service's own stop and start take about 1.8 s (a one-phase move pays them
// too), the final copy 0.4 s, verification 0.45 s, the switch, the start and the health check
// 0.45 s. The downtime is nearly independent of the size (4 GiB: 4.5 s against 22.5 s, 0.20, on
// a busier machine), so the goal of at most 10% of a one-phase move's downtime is met
// only where the one-phase copy takes over about 30 s: larger data dirs or slower disks.
package k3smigration
