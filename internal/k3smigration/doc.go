// Package k3smigration implements clusterstorage_k3s_data_dir_migration: moving a k3s node's
// data directory (/var/lib/rancher/k3s) to another disk over SSH, with rollback.
//
// # The contract
//
//   - Nothing the migration did not create is ever deleted, unmounted or written over. The
//     original directory is only read until k3s has run healthy on the copy; it is then renamed
//     (kept unless keep_backup = false). Filesystems mounted below it are the user's: refused by
//     name, or carried along as bind mounts (carry_mounts), never unmounted.
//   - A copy that k3s ran on is never discarded: a rollback after k3s was started on it copies
//     what k3s wrote there back over the original (verified) before starting k3s there again,
//     and a copy marked complete (after a healthy switch) is never the target of another copy. An
//     error after a failed rollback says which directory holds the newest data and what to run.
//   - Everything that can be refused is refused at the preflight, before anything changes: see
//     preflight.go (k3s's own configuration naming another directory, memory-backed targets,
//     targets in use or holding a finished migration, mounts below the source, a k3s-killall.sh
//     that would destroy the target, not enough room counting what an unfinished copy already
//     holds, an HA server whose cluster cannot lose it now: Hooks.Claim).
//   - Paths never reach a shell unquoted: every node-side script (scripts/*.sh, shellcheck-clean,
//     named by the script type) takes them as positional parameters and refuses control
//     characters, as CheckPath does at plan time.
//   - State is written only after success; the error of a failure names the step, and whether
//     k3s was stopped, started on the copy, and rolled back.
//
// # The procedure
//
// Migrate (steps.go) runs, each step logged with tflog and named in errors:
//
//   - preflight (preflight.go): the unit (k3s or k3s-agent, the active one unless named); the data
//     dir k3s uses, found as k3s finds it (the unit's --data-dir, config.yaml then
//     config.yaml.d/*.yaml, K3S_DATA_DIR in the unit's EnvironmentFile=s, the default), must be
//     source; source holds server/ or agent/ and is not itself a mount point (except for
//     switch_method config); target absent, empty, or an unfinished copy of the same source
//     (its marker names the source's real path); then the checks listed above. With
//     measure_write_speed, fio's sequential_write job on each filesystem.
//   - first copy while k3s runs: rsync -aHAXxS --numeric-ids --modify-window=-1 --delete under
//     flock on the marker; "files vanished" (exit 24) is expected here.
//   - stop: the node guard is armed first (systemd nodes, guard.go); systemctl stop;
//     k3s-killall.sh with K3S_DATA_DIR when installed (its failure fails the step); then every
//     containerd shim still holding a file below the data dir is stopped (TERM, then KILL after
//     15 s) with its children and process group. Any other process still holding the directory,
//     or a filesystem mounted below it that preflight did not carry, fails the step.
//   - final copy (the same rsync on a quiet directory, then the live datastore, server/db/state.db
//     with its -wal and -shm and server/db/etcd, copied again whatever its times say: sqlite
//     writes its -shm through mmap without always changing its modification time, and rewrites its
//     WAL in place at the same size, which rsync's size-and-time check misses; seen on the
//     k3s-shaped node with kine) and verify: rsync's dry run finds nothing to change and the
//     datastore's bytes are equal, both sides have the same counts of entries and bytes, and the
//     SHA-256 of every file of server/db, server/cred, server/tls, the tokens and agent's own keys
//     match; then the copy's sqlite datastore passes sqlite's integrity check (the node's sqlite3,
//     read-only: equal bytes do not prove a database sound when a writer still had it open while
//     it was read; a node without sqlite3 gets a warning). The copy back of a rollback and of the
//     node guard copies and checks the datastore the same way.
//   - switch (switch.go: one table of per-method steps, toTarget and toSource, which Migrate and
//     Restore use in opposite directions): the carried mounts are bind-mounted below the copy;
//     symlink (source renamed to <source>.pre-migration-<UTC time>, a link to target in its
//     place), config (the absolute links and kubeconfig paths k3s wrote are pointed at the new
//     path, data-dir set in the config file, source renamed unless it is a mount point) or
//     bind_mount (source renamed, an empty directory with its mode and owner bind-mounted from
//     target, the mount added to fstab).
//   - start, then healthy: the unit active, and through the Kubernetes API the node Ready with a
//     node lease renewed after the one seen just before the stop. The copy's marker is then
//     marked complete and the guard disarmed.
//
// Any failure after the stop rolls back, ignoring cancellation but with its own deadline. Restore
// (restore_on_destroy) is the same procedure in the other direction, through a staging directory
// <source>.clusterstorage-restore. A source that is a mount point (left in place by config) is not
// restored: it holds the data as of the migration, and replacing a mount point's contents is no
// single step a rollback or the guard could undo; Restore refuses before touching anything and
// says how to move back by hand (and Create warns when restore_on_destroy is set for one).
//
// The node guard (systemd nodes): a transient timer (systemd-run --on-active) armed before the
// stop, running scripts/guard.sh unless disarmed in time, told by a state file how far the
// migration got; it stops k3s (and, when k3s had been started on the copy, its containers, whose
// layers are there: k3s-killall.sh for that data dir, then its shims), undoes the switch, copies
// back what k3s wrote on the copy if it had been started there, and starts k3s on the original.
// Without systemd there is none (a warning).
//
// # How it is tested
//
// The tests (standin_test.go) build a stand-in node below a temporary directory, reached through
// a real OpenSSH sshd whose PATH (sshd_config SetEnv) starts with the stand-in's bin directory.
// It follows what k3s does, as read from k3s-io/k3s (install.sh: the units, k3s-killall.sh;
// the data dir layout):
//
//   - a data dir with k3s's layout: server/db/state.db (SQLite in WAL mode), server/token and the
//     node-token link, server/tls, server/cred, server/manifests, agent keys and kubeconfig with
//     absolute paths, agent/containerd with content blobs, an overlayfs snapshot with hard links,
//     a trusted.overlay.opaque and a user.* extended attribute, data/<hash>/bin with an absolute
//     data/current link, and storage/pvc-* with a POSIX ACL and a file owned by uid 1000;
//   - a unit with install.sh's directives (Type=notify, KillMode=process, EnvironmentFile=...
//     k3s.service.env holding K3S_DATA_DIR) run by a systemctl shim; a k3s stand-in that finds its
//     data dir as k3s does, refuses to start without a token or on a corrupt datastore, records
//     the directory it runs on, keeps a file open below it and writes to the datastore five times
//     a second;
//   - a containerd-shim stand-in started from data/<hash>/bin that mounts a container rootfs
//     below the /run/k3s stand-in (containerd's state dir, as on a real node, not below the data
//     dir) and outlives the service;
//   - k3s-killall.sh stand-ins: one that stops the services but leaves the shims running (so the
//     migration's own shim handling is tested), the pre-2024 form that force-unmounts and removes
//     every mount starting with the default data dir, and one that fails;
//   - user disks: loop-mounted ext4 images (below the source, as the source itself, as a small
//     or nearly full target).
//   - with Systemd set, `systemctl is-system-running` says running and a systemd-run stand-in
//     makes --on-active timers (a background sleep that runs the command unless the timer was
//     stopped): TestMigrate_nodeGuard cuts SSH for good (sshd killed) and the real guard script
//     brings k3s back.
//
// Real rsync, mounts, processes, signals and sshd are used throughout. What the stand-in lacks: a
// real systemd (the guard's timer is the stand-in's), real k3s, containerd or kubelet, and the
// health check in its acceptance tests sees the test cluster's own node (whose real kubelet stays
// Ready while the stand-in restarts) or a node object the test keeps Ready.
//
// realnode_test.go runs on the cluster's k3s-shaped node instead (tools/kube/cluster.sh makes
// node 3 one): a machine with a real systemd as PID 1, k3s.service as install.sh writes it, real
// containerd with shims and rootfs mounts under /run/k3s, the cluster's kubelet as that node, a
// real kine with sqlite at server/db/state.db kept busy by a client, our k3s-killall.sh, and the
// data dir a plain directory of the machine's system disk (as on most k3s nodes). There the
// resource migrates through the CLI with the default method, symlink (the datastore holds every
// row, the containers run again from the copy), and destroy with restore_on_destroy moves the data
// back; bind_mount migrates and restores; a data dir that is a mount point of its own (bound on
// itself by the test) refuses symlink before k3s is touched, migrates with config and refuses the
// restore. A failed health check after k3s wrote on the copy rolls back with the copy back (no row
// lost), and the node guard is tested on real systemd: sshd stopped and every session killed after
// the stop, or after k3s started on the copy, and the guard's transient timer puts k3s back
// (copying back what it wrote there); both with symlink and with config.
// realfaults_test.go runs the fault matrix there too, with symlink: SSH cut during the first and
// the final copy (every session's process tree killed, sshd left listening), a target too small, a
// target that fills up during the final copy and then a resume into it with room for the rest
// only, a verification mismatch, k3s.service failing to start on the target (a drop-in's
// ExecStartPre; with config too), k3s-killall.sh failing, cancellation during either copy, a source
// named through a linked parent; each checks that k3s runs on the original again (a plain
// directory, no data-dir configured), with the node Ready and the pod's containers on the
// original's layers, that the original's files are unchanged and its datastore holds every row,
// and that a migration without the fault then succeeds. tools/kube/k3s-standin.sh lists what that
// node still lacks (k3s's API server and controllers, embedded etcd, flannel). There too: a disk
// mounted below the data dir, and the old form of k3s-killall.sh (tools/kube/k3s-killall-old.sh)
// with a target on a disk it would destroy, both refused at the preflight, and carry_mounts with a
// disk of the user's at storage/ (bind-mounted below the target, the same filesystem, the original
// mount left below the renamed original).
//
// The tests that run no CLI against the cluster are named TestCluster* (make test runs them once,
// not once per CLI).
//
// The stand-in's fault matrix (TestMigrate_faults) checks for each fault that the original is unchanged
// (contents, modes, owners, links, hard-link groups, extended attributes; the datastore for
// integrity and no lost rows), that the service runs on it again, that the error names the step,
// and that a rerun succeeds. fixes_test.go has one test per data-loss case the issue found.
// Measured timings are the benchmark's (scripts/bench-k3s.sh, TestBenchK3sMigration) output.
package k3smigration
