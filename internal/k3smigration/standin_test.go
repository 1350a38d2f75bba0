package k3smigration_test

// The stand-in k3s node. This machine has no systemd and no k3s, so tests build one that behaves
// like a k3s node where the migration can tell: a data dir with k3s's layout, a k3s "service"
// driven through a systemctl shim, a containerd shim that outlives the service and holds a mount
// below the data dir, and a k3s-killall.sh. Everything lives below one temporary directory and is
// reached through a real sshd whose PATH starts with the stand-in's bin directory.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// standinHash is the name of the stand-in's data/<hash> directory.
const standinHash = "0c0ffee1234567890abcdef"

type standin struct {
	t *testing.T
	// Root holds everything; Bin is first on sshd's PATH; State is the service's state.
	Root, Bin, State string
	// Source is the k3s data dir; Config the k3s config file; Fstab the fstab bind_mount edits;
	// EnvFile the unit's environment file (k3s.service.env), which sets K3S_DATA_DIR; Run stands
	// for /run/k3s (containerd's state: the container rootfs mounts live there, as on a real node).
	Source, Config, Fstab, EnvFile, Run string
	SSHD                                *acctest.SSHD
	shimScript                          string
	Pool                                *node.Pool
	Host                                *node.Host
}

type standinOptions struct {
	// NoKillall leaves k3s-killall.sh off the node.
	NoKillall bool
	// Killall is the k3s-killall.sh stand-in's form: "" stops the services and leaves the shims
	// running; "old" is the form of installs before mid-2024: it ignores K3S_DATA_DIR and
	// force-unmounts and removes every mount whose path starts with the default data dir (here
	// Source); "fail" stops the services and exits 1.
	Killall string
	// Systemd makes the stand-in answer like a node running systemd: `systemctl
	// is-system-running` says running, and a systemd-run stand-in makes --on-active timers (a
	// background sleep that runs the command unless `systemctl stop <unit>.timer` came first).
	Systemd bool
	// SourceDiskMiB, when set, makes Source a mount point of its own: an ext4 disk of that size.
	SourceDiskMiB int
	// Service is the unit ("k3s" by default).
	Service string
	// FillMB adds that many MiB of random files (container layers) to the data dir.
	FillMB int
	// SmallFiles adds that many 10 KiB files (unpacked image layers) to the data dir.
	SmallFiles int
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "the stand-in k3s node mounts filesystems: run as root")
	}
	for _, tool := range []string{"rsync", "sqlite3", "setfattr", "setfacl", "flock", "mountpoint"} {
		testenv.LookPath(t, tool)
	}
}

// newStandin builds the stand-in node, starts its sshd and its k3s service.
func newStandin(t *testing.T, opts standinOptions) *standin {
	t.Helper()
	requireRoot(t)
	if opts.Service == "" {
		opts.Service = "k3s"
	}
	root := t.TempDir()
	s := &standin{t: t, Root: root, Bin: filepath.Join(root, "bin"), State: filepath.Join(root, "state"),
		Source: filepath.Join(root, "var/lib/rancher/k3s"), Config: filepath.Join(root, "etc/rancher/k3s/config.yaml"),
		Fstab: filepath.Join(root, "etc/fstab"), EnvFile: filepath.Join(root, "etc/systemd/system", opts.Service+".service.env"),
		Run: filepath.Join(root, "run/k3s")}
	// Registered after TempDir: runs before the directory is removed, also when the test failed.
	t.Cleanup(s.cleanup)
	for _, d := range []string{s.Bin, s.State, filepath.Join(s.State, "units"), filepath.Dir(s.Config), filepath.Dir(s.EnvFile), s.Run} {
		mustMkdir(t, d)
	}
	mustWrite(t, s.Fstab, "# stand-in fstab\n", 0o644)
	s.writeScripts(opts)
	// The unit as k3s's install script writes it (the directives the migration reads).
	mustWrite(t, filepath.Join(s.State, "units", opts.Service), "[Service]\nType=notify\nEnvironmentFile=-/etc/default/%N\nEnvironmentFile=-"+s.EnvFile+
		"\nKillMode=process\nDelegate=yes\nRestart=always\nExecStart=/usr/local/bin/k3s \\\n    server\n", 0o644)
	mustWrite(t, s.EnvFile, "K3S_DATA_DIR="+s.Source+"\n", 0o600)
	if opts.SourceDiskMiB > 0 {
		mustMkdir(t, s.Source)
		s.mountDisk(s.Source, opts.SourceDiskMiB)
	}
	s.buildDataDir(opts.FillMB, opts.SmallFiles)

	s.SSHD = acctest.StartSSHDWith(t, acctest.SSHDOptions{ExtraConfig: []string{
		"SetEnv PATH=" + s.Bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	}})
	var logger node.Logger
	if os.Getenv("K3SMIGRATION_DEBUG") != "" {
		logger = func(_ context.Context, msg string, fields map[string]any) {
			cmd, _ := fields["command"].(string)
			if len(cmd) > 100 {
				cmd = cmd[:100]
			}
			t.Logf("%s %s: %v ms %q", time.Now().Format("15:04:05.000"), msg, fields["duration_ms"], cmd)
		}
	}
	s.Pool = node.NewPool(node.PoolOptions{Logger: logger})
	t.Cleanup(func() { _ = s.Pool.Close() })
	host, err := s.Pool.Host(node.Target{Endpoint: node.Endpoint{
		Host: s.SSHD.Host, Port: s.SSHD.Port, User: s.SSHD.User,
		Auth:    node.Auth{PrivateKey: s.SSHD.ClientKeyPEM},
		HostKey: node.HostKeyPolicy{KnownHostsFile: s.SSHD.KnownHostsPath},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Host = host
	res, err := host.Run(context.Background(), node.NewCommand("sh", "-c", "command -v systemctl"))
	if err != nil || strings.TrimSpace(string(res.Stdout)) != filepath.Join(s.Bin, "systemctl") {
		t.Fatalf("sshd does not put the stand-in's bin first on PATH (SetEnv): %v %v", res, err)
	}
	s.systemctl("start", opts.Service)
	return s
}

// systemctl runs the shim locally (the same script the node runs).
func (s *standin) systemctl(args ...string) {
	s.t.Helper()
	out, err := exec.Command(filepath.Join(s.Bin, "systemctl"), args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("systemctl %s: %v: %s\nservice log:\n%s", strings.Join(args, " "), err, out, s.serviceLog())
	}
}

// isActive is the k3s unit's state.
func (s *standin) isActive() string {
	out, _ := exec.Command(filepath.Join(s.Bin, "systemctl"), "is-active", "k3s").Output() //nolint:errcheck // exits 3 when inactive.
	return strings.TrimSpace(string(out))
}

// dataDirInUse is the real path the running service opened its data dir at.
func (s *standin) dataDirInUse(unit string) string {
	b, err := os.ReadFile(filepath.Join(s.State, unit+".datadir"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (s *standin) serviceLog() string {
	b, _ := os.ReadFile(filepath.Join(s.State, "k3s.log")) //nolint:errcheck // for messages only.
	return string(b)
}

// failStartOn makes the service refuse to start when its data dir resolves to dir.
func (s *standin) failStartOn(dir string) {
	mustWrite(s.t, filepath.Join(s.State, "fail-start-on"), dir+"\n", 0o644)
}

func (s *standin) writeScripts(opts standinOptions) {
	t := s.t
	q := strconv.Quote
	systemctl := `#!/bin/sh
# systemctl stand-in: start/stop/is-active/cat for units listed in $STATE/units.
STATE=` + q(s.State) + `
BIN=` + q(s.Bin) + `
cmd=$1; shift
while [ "${1#-}" != "$1" ]; do shift; done
if [ "$cmd" = is-system-running ]; then
	if [ -f "$STATE/systemd" ]; then echo running; exit 0; fi
	echo offline; exit 1
fi
case $1 in *.timer)
	# Transient timers made by the systemd-run stand-in.
	t=$STATE/timers/${1%.timer}
	case $cmd in
	stop) rm -f "$t"; exit 0 ;;
	is-active) if [ -f "$t" ]; then echo active; exit 0; fi; echo inactive; exit 3 ;;
	esac
	echo "systemctl stand-in: unsupported $cmd $1" >&2; exit 1 ;;
esac
unit=${1%.service}
if [ ! -f "$STATE/units/$unit" ]; then
	if [ "$cmd" = is-active ]; then echo inactive; exit 3; fi
	echo "Unit $unit.service could not be found." >&2; exit 1
fi
pidf=$STATE/$unit.pid
alive() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }
case $cmd in
cat) cat "$STATE/units/$unit" ;;
is-active)
	# Type=notify, as k3s's unit: active once the service said it is ready.
	if alive && [ -f "$STATE/$unit.ready" ]; then echo active; exit 0; fi
	if alive; then echo activating; exit 3; fi
	if [ -f "$STATE/$unit.failed" ]; then echo failed; exit 3; fi
	echo inactive; exit 3 ;;
start)
	if alive; then exit 0; fi
	rm -f "$STATE/$unit.ready" "$STATE/$unit.failed"
	# EnvironmentFile= lines, as systemd reads them ("-": may be missing).
	for f in $(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$STATE/units/$unit"); do
		f=$(printf '%s' "$f" | sed "s/%N/$unit/g")
		if [ -f "$f" ]; then set -a; . "$f"; set +a; fi
	done
	setsid "$BIN/k3s-standin" "$unit" </dev/null >>"$STATE/$unit.log" 2>&1 &
	echo $! > "$pidf"
	i=0
	while [ $i -lt 150 ]; do
		if [ -f "$STATE/$unit.ready" ]; then exit 0; fi
		if ! alive; then touch "$STATE/$unit.failed"; echo "Job for $unit.service failed because the control process exited with error code." >&2; exit 1; fi
		sleep 0.1; i=$((i+1))
	done
	echo "Job for $unit.service timed out." >&2; exit 1 ;;
stop)
	if alive; then
		kill -TERM "$(cat "$pidf")"
		while alive; do sleep 0.05; done
	fi
	rm -f "$pidf" "$STATE/$unit.ready" "$STATE/$unit.datadir"; exit 0 ;;
*) echo "systemctl stand-in: unsupported command $cmd" >&2; exit 1 ;;
esac
`
	service := `#!/bin/sh
# k3s stand-in: checks its data dir like k3s would need it, keeps files open below it, starts a
# containerd shim that outlives it and holds a mount, and writes to its SQLite datastore.
STATE=` + q(s.State) + `
RUN=` + q(s.Run) + `
cfg=` + q(s.Config) + `
# k3s's order: K3S_DATA_DIR from the environment, then config.yaml, then config.yaml.d/*.yaml
# (later files win).
dd=${K3S_DATA_DIR:-/var/lib/rancher/k3s}
for f in "$cfg" "$cfg".d/*.yaml; do
	[ -f "$f" ] || continue
	v=$(sed -n 's/^data-dir: *//p' "$f" | tr -d '"')
	if [ -n "$v" ]; then dd=$v; fi
done
real=$(realpath -e "$dd") || { echo "k3s: data dir $dd missing" >&2; exit 1; }
if [ -f "$STATE/fail-start-on" ] && [ "$(cat "$STATE/fail-start-on")" = "$real" ]; then echo "k3s: failing on purpose on $real" >&2; exit 1; fi
[ -s "$dd/server/token" ] || { echo "k3s: no token in $dd" >&2; exit 1; }
[ "$(sqlite3 "$dd/server/db/state.db" 'PRAGMA integrity_check;')" = ok ] || { echo "k3s: datastore corrupt" >&2; exit 1; }
printf '%s\n' "$real" > "$STATE/$1.datadir.new" && mv "$STATE/$1.datadir.new" "$STATE/$1.datadir"
cd "$dd/server" || exit 1
exec 3>>"$dd/server/db/k3s-standin.log"
# containerd's state is /run/k3s/containerd: the container rootfs mounts live there, not below the data dir.
rootfs=$RUN/containerd/io.containerd.runtime.v2.task/k8s.io/standin0/rootfs
if [ -z "$(cat "$STATE/shim.pid" 2>/dev/null)" ] || ! kill -0 "$(cat "$STATE/shim.pid")" 2>/dev/null; then
	setsid "$dd/data/` + standinHash + `/bin/containerd-shim-runc-v2" "$rootfs" "$STATE" </dev/null >>"$STATE/shim.log" 2>&1 &
	i=0; while [ ! -f "$STATE/shim.ready" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
fi
touch "$STATE/$1.ready"
stop=
trap 'stop=1' TERM
while [ -z "$stop" ]; do
	sqlite3 -cmd ".timeout 5000" "$dd/server/db/state.db" "INSERT INTO kine(name, value) VALUES ('/registry/standin/tick', hex(randomblob(32)));" || echo "k3s: write failed" >&2
	echo tick >&3
	sleep 0.2
done
exit 0
`
	// The shim lives in the data dir, like k3s's own (data/<hash>/bin), so it holds files there.
	shim := `#!/bin/sh
# containerd-shim stand-in: mounts the container's root filesystem below containerd's state dir
# (/run/k3s/containerd on a real node) and keeps it busy (working directory) until killed; its
# executable lives in the data dir, so it holds the data dir.
rootfs=$1 STATE=$2
mkdir -p "$rootfs"
mountpoint -q "$rootfs" || mount -t tmpfs -o size=1m standin-rootfs "$rootfs" || exit 1
echo $$ > "$STATE/shim.pid"
cd "$rootfs" || exit 1
echo "container data" > container-file
touch "$STATE/shim.ready"
while :; do sleep 1; done
`
	killall := `#!/bin/sh
# k3s-killall.sh stand-in: stops the services like the real one (which reads K3S_DATA_DIR). Unlike
# the real one it leaves the containerd shims running, as happened in the issue ("shim processes
# held mounts"): the migration must stop them itself.
echo "K3S_DATA_DIR=$K3S_DATA_DIR" >> ` + q(filepath.Join(s.State, "killall.log")) + `
for u in k3s k3s-agent; do systemctl stop "$u" 2>/dev/null; done
exit 0
`
	switch opts.Killall {
	case "old":
		// What the killall of installs before mid-2024 does to mounts (read from k3s's install.sh
		// history): no K3S_DATA_DIR; every mount whose path starts with the default data dir is
		// force-unmounted and removed.
		killall = `#!/bin/sh
for u in k3s k3s-agent; do systemctl stop "$u" 2>/dev/null; done
do_unmount_and_remove() {
	while read -r _ path _; do
		case "$path" in $1*) echo "$path" ;; esac
	done < /proc/self/mounts | sort -r | xargs -r -t -n 1 sh -c 'umount -f "$0" && rm -rf "$0"'
}
do_unmount_and_remove ` + "'" + s.Source + "'" + `
exit 0
`
	case "fail":
		killall = `#!/bin/sh
for u in k3s k3s-agent; do systemctl stop "$u" 2>/dev/null; done
echo "iptables-restore: line 1 failed" >&2
exit 1
`
	}
	mustWrite(t, filepath.Join(s.Bin, "systemctl"), systemctl, 0o755)
	if opts.Systemd {
		mustWrite(t, filepath.Join(s.State, "systemd"), "", 0o644)
		mustMkdir(t, filepath.Join(s.State, "timers"))
		mustWrite(t, filepath.Join(s.Bin, "systemd-run"), `#!/bin/sh
# systemd-run stand-in: --unit=NAME --on-active=<n>s [--...] COMMAND...: runs COMMAND after n
# seconds unless the timer was stopped (systemctl stop NAME.timer) meanwhile.
STATE=`+q(s.State)+`
unit= delay=
while [ $# -gt 0 ]; do
	case $1 in
	--unit=*) unit=${1#--unit=} ;;
	--on-active=*) delay=${1#--on-active=}; delay=${delay%s} ;;
	--*) ;;
	*) break ;;
	esac
	shift
done
[ -n "$unit" ] && [ -n "$delay" ] || { echo "systemd-run stand-in: needs --unit and --on-active" >&2; exit 1; }
touch "$STATE/timers/$unit"
setsid sh -c 't=$1 d=$2; shift 2; sleep "$d"; [ -f "$t" ] || exit 0; rm -f "$t"; exec "$@"' sh "$STATE/timers/$unit" "$delay" "$@" </dev/null >>"$STATE/guard.log" 2>&1 &
echo "Running timer as unit: $unit.timer"
`, 0o755)
	}
	mustWrite(t, filepath.Join(s.Bin, "k3s-standin"), service, 0o755)
	if !opts.NoKillall {
		mustWrite(t, filepath.Join(s.Bin, "k3s-killall.sh"), killall, 0o755)
	}
	s.shimScript = shim
}

// buildDataDir lays out a k3s data dir: server/db with a SQLite datastore, server/token,
// server/tls, server/cred, agent/containerd with hard links and extended attributes,
// data/<hash>/bin with a current link, storage/pvc-* with an ACL.
func (s *standin) buildDataDir(fillMB, smallFiles int) {
	t := s.t
	dd := s.Source
	rnd := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	files := map[string][]byte{
		"server/token":              []byte("K10" + hex.EncodeToString(rnd(32)) + "::server:" + hex.EncodeToString(rnd(16)) + "\n"),
		"server/tls/server-ca.crt":  rnd(1200),
		"server/tls/server-ca.key":  rnd(227),
		"server/tls/client-ca.crt":  rnd(1200),
		"server/cred/passwd":        []byte("secret,node,node,k3s:agent\n"),
		"server/manifests/ccm.yaml": []byte("apiVersion: v1\nkind: ServiceAccount\n"),
		"agent/client-kubelet.crt":  rnd(1100),
		"agent/client-kubelet.key":  rnd(227),
		"agent/kubelet.kubeconfig":  []byte("server: https://127.0.0.1:6443\nclient-certificate: " + dd + "/agent/client-kubelet.crt\n"),
		"agent/containerd/io.containerd.content.v1.content/blobs/sha256/aa" + strings.Repeat("0", 62): rnd(300 << 10),
		"agent/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs/bin/busybox":          rnd(900 << 10),
		"agent/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs/etc/passwd":           []byte("root:x:0:0:root:/root:/bin/sh\n"),
		"data/" + standinHash + "/bin/k3s":                                     rnd(64 << 10),
		"storage/pvc-3f1e2d3c-0000-4000-8000-000000000001_default_data/db.dat": rnd(200 << 10),
	}
	for name, content := range files {
		mustMkdir(t, filepath.Dir(filepath.Join(dd, name)))
		mustWrite(t, filepath.Join(dd, name), string(content), 0o600)
	}
	mustWrite(t, filepath.Join(dd, "data", standinHash, "bin", "containerd-shim-runc-v2"), s.shimScript, 0o755)
	for i := 0; i < fillMB; i++ {
		p := filepath.Join(dd, "agent/containerd/io.containerd.content.v1.content/blobs/sha256", fmt.Sprintf("fill%04d", i))
		mustWrite(t, p, string(rnd(1<<20)), 0o644)
	}
	for i := 0; i < smallFiles; i++ {
		p := filepath.Join(dd, "agent/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs/usr/lib", fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d", i))
		if i%100 == 0 {
			mustMkdir(t, filepath.Dir(p))
		}
		mustWrite(t, p, string(rnd(10<<10)), 0o644)
	}
	snap := filepath.Join(dd, "agent/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs")
	must(t, os.Link(filepath.Join(snap, "bin/busybox"), filepath.Join(snap, "bin/sh")))
	must(t, os.Link(filepath.Join(snap, "bin/busybox"), filepath.Join(snap, "bin/ls")))
	must(t, os.Symlink("token", filepath.Join(dd, "server/node-token")))
	must(t, os.Symlink(filepath.Join(dd, "data", standinHash), filepath.Join(dd, "data/current")))
	run(t, "setfattr", "-n", "trusted.overlay.opaque", "-v", "y", filepath.Join(snap, "etc"))
	run(t, "setfattr", "-n", "user.containerd.test", "-v", "layer-1", filepath.Join(snap, "etc/passwd"))
	run(t, "setfacl", "-m", "u:65534:rwx", filepath.Join(dd, "storage/pvc-3f1e2d3c-0000-4000-8000-000000000001_default_data"))
	must(t, os.Chown(filepath.Join(dd, "storage/pvc-3f1e2d3c-0000-4000-8000-000000000001_default_data/db.dat"), 1000, 1000))
	mustMkdir(t, filepath.Join(dd, "server/db"))
	run(t, "sqlite3", filepath.Join(dd, "server/db/state.db"),
		"PRAGMA journal_mode=WAL; CREATE TABLE kine (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, value BLOB);"+
			" INSERT INTO kine(name, value) VALUES ('/registry/namespaces/default', 'ns'), ('/registry/pods/default/web', 'pod');")
}

// cleanup stops the service and the shim and unmounts everything below Root.
func (s *standin) cleanup() {
	for _, pidFile := range []string{"k3s.pid", "k3s-agent.pid", "shim.pid"} {
		if b, err := os.ReadFile(filepath.Join(s.State, pidFile)); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	// Anything else started from the stand-in (a shim's sleep, an orphaned rsync).
	killBelow(s.Root)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mounts := mountsBelowDir(s.Root)
		if len(mounts) == 0 {
			return
		}
		for _, mp := range mounts {
			if err := syscall.Unmount(mp, 0); err != nil && time.Now().After(deadline) {
				_ = syscall.Unmount(mp, syscall.MNT_DETACH)
			}
		}
		if time.Now().After(deadline.Add(5 * time.Second)) {
			s.t.Errorf("stand-in: could not unmount %v", mounts)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountDisk mounts a new ext4 disk of sizeMiB (a sparse image below Root, loop-mounted) on dir.
// No reserved blocks and no journal: its free space is what a test computes.
func (s *standin) mountDisk(dir string, sizeMiB int) {
	s.t.Helper()
	img := filepath.Join(s.Root, "disks", strings.ReplaceAll(strings.TrimPrefix(dir, s.Root+"/"), "/", "_")+".img")
	mustMkdir(s.t, filepath.Dir(img))
	f, err := os.Create(img)
	must(s.t, err)
	must(s.t, errors.Join(f.Truncate(int64(sizeMiB)<<20), f.Close()))
	run(s.t, "mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", img)
	mustMkdir(s.t, dir)
	run(s.t, "mount", "-o", "loop", img, dir)
}

// sameFile reports whether a and b name the same directory (through a link or a bind mount).
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// isMountPoint reports whether p is a mount point.
func isMountPoint(p string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}

// mountsBelowDir lists the mount points below dir, deepest first.
func mountsBelowDir(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// killBelow kills every process whose command line, working directory or executable mentions dir.
func killBelow(dir string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if bytes.Contains(cmdline, []byte(dir)) || strings.HasPrefix(cwd, dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// fileState is one entry of a snapshot.
type fileState struct {
	Mode    fs.FileMode
	UID     int
	GID     int
	Size    int64
	Sum     string
	Link    string
	Xattrs  string
	Inode   uint64
	NLink   uint64
	Content bool
}

// snapshot records every entry below dir (not crossing mounts): type, mode, owner, size, the
// SHA-256 of regular files, link targets and extended attributes (ACLs included), and which
// entries are hard links of one another. server/db is left out (the running service writes to it;
// dbRows checks it).
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	var rootDev uint64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		// The runtime state of containers (the shim's mounted rootfs) is not data: k3s makes it anew.
		if rel == k3smigration.MarkerName || strings.HasPrefix(rel, "agent/containerd/io.containerd.runtime.v2.task") ||
			rel == "server/db" || strings.HasPrefix(rel, "server/db/") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, _ := info.Sys().(*syscall.Stat_t)
		if rel == "." {
			rootDev = st.Dev
		} else if st.Dev != rootDev {
			return filepath.SkipDir // a mount (the shim's rootfs)
		}
		fsx := fileState{Mode: info.Mode(), UID: int(st.Uid), GID: int(st.Gid), Inode: st.Ino, NLink: st.Nlink}
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			fsx.Sum, fsx.Size = hex.EncodeToString(h[:]), info.Size()
		case info.Mode()&fs.ModeSymlink != 0:
			fsx.Link, _ = os.Readlink(p)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			x, _ := exec.Command("getfattr", "-h", "-d", "-m", "-", "--absolute-names", p).Output() //nolint:errcheck // no xattrs is empty output.
			lines := strings.Split(string(x), "\n")
			if len(lines) > 0 {
				lines = lines[1:] // "# file: ..."
			}
			fsx.Xattrs = strings.TrimSpace(strings.Join(lines, "\n"))
		}
		out[rel] = fsx
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", dir, err)
	}
	return out
}

// compareSnapshots reports the differences between two snapshots; inode numbers are compared
// only as hard-link groups (a copy has new inodes).
func compareSnapshots(a, b map[string]fileState) []string {
	var diffs []string
	groups := func(m map[string]fileState) map[string]string {
		byInode := map[uint64][]string{}
		for p, f := range m {
			if f.Mode.IsRegular() && f.NLink > 1 {
				byInode[f.Inode] = append(byInode[f.Inode], p)
			}
		}
		g := map[string]string{}
		for _, ps := range byInode {
			sort.Strings(ps)
			for _, p := range ps {
				g[p] = strings.Join(ps, ",")
			}
		}
		return g
	}
	ga, gb := groups(a), groups(b)
	for p, fa := range a {
		fb, ok := b[p]
		if !ok {
			diffs = append(diffs, "missing: "+p)
			continue
		}
		fa.Inode, fb.Inode = 0, 0
		if fa != fb {
			diffs = append(diffs, fmt.Sprintf("differs: %s: %+v != %+v", p, fa, fb))
		}
		if ga[p] != gb[p] {
			diffs = append(diffs, fmt.Sprintf("hard links differ: %s: %q != %q", p, ga[p], gb[p]))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			diffs = append(diffs, "extra: "+p)
		}
	}
	sort.Strings(diffs)
	return diffs
}

// dbRows counts the datastore's rows.
func dbRows(t *testing.T, dir string) int {
	t.Helper()
	// The running service writes meanwhile: wait for its lock rather than fail.
	out, err := exec.Command("sqlite3", "-cmd", ".timeout 10000", filepath.Join(dir, "server/db/state.db"), "SELECT count(*) FROM kine; PRAGMA integrity_check;").CombinedOutput()
	if err != nil {
		t.Fatalf("reading the datastore in %s: %v: %s", dir, err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || f[1] != "ok" {
		t.Fatalf("datastore in %s: %q", dir, out)
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// lastRow is the datastore's newest row: its id and value.
func lastRow(t *testing.T, dir string) (int, string) {
	t.Helper()
	out := run(t, "sqlite3", "-cmd", ".timeout 10000", filepath.Join(dir, "server/db/state.db"), "SELECT id || ' ' || hex(value) FROM kine ORDER BY id DESC LIMIT 1;")
	id, value, _ := strings.Cut(strings.TrimSpace(out), " ")
	n, err := strconv.Atoi(id)
	if err != nil {
		t.Fatalf("datastore in %s: %q", dir, out)
	}
	return n, value
}

// rowValue is the value of the datastore's row id ("" when there is none).
func rowValue(t *testing.T, dir string, id int) string {
	t.Helper()
	return strings.TrimSpace(run(t, "sqlite3", "-cmd", ".timeout 10000", filepath.Join(dir, "server/db/state.db"), fmt.Sprintf("SELECT hex(value) FROM kine WHERE id = %d;", id)))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
}

func mustWrite(t *testing.T, p, content string, mode fs.FileMode) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(content), mode))
	must(t, os.Chmod(p, mode))
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
