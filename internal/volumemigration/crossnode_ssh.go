package volumemigration

// The copy between nodes over SSH (cross_node_transfer "ssh", or "auto" with the provider's ssh
// block). Where both volumes are directories on their nodes (a local PV's spec.local.path, a
// hostPath volume's path: static local volumes, OpenEBS hostpath, rancher local-path), the
// provider reaches both nodes over SSH and needs no pod network:
//
//   - on the new volume's node, over its SSH connection, an rsync daemon (scripts/rsyncd.sh, run
//     by scripts/rsyncd-ssh.sh with sudo as every node command) listens on 127.0.0.1 only, on a
//     port it could bind, writing into the new volume's directory; its configuration and a
//     secrets file with a random password are in a directory the migration makes (mode 700) and
//     removes;
//   - on the source's node, the provider asks sshd to listen on 127.0.0.1 (a remote forward,
//     ssh -R) and carries every connection made to it to the daemon through the target's SSH
//     connection (a direct-tcpip channel, ssh -L);
//   - on the source's node, copy.sh runs on the source volume's directory with the forwarded
//     port as its REMOTE: the same rsync passes, delta, --checksum verification and sync as the
//     copy over the pod network.
//
// So the data is encrypted on both legs (SSH), and it passes through the machine that runs
// Terraform: the copy's throughput is bounded by that machine's links to the two nodes. No
// Secret, Service or pod is made for it (only, for a class that binds at the first consumer, a
// pod that mounts the new claim on its node until it is bound). The daemon lives as long as the
// SSH session that started it (its stdin, which the provider holds open, ends with the session:
// a killed provider or a cut connection ends it once sshd notices). Its directory is named after
// the migration: a resumed run also stops a daemon an earlier run left and makes it again, and a
// run that copies over the pod network instead removes it.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	sshnode "github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// rsyncdSSHScript is the nodes' side of the copy over SSH (scripts/rsyncd-ssh.sh).
//
//go:embed scripts/rsyncd-ssh.sh
var rsyncdSSHScript string

// Values of cross_node_transfer.
const (
	transferAuto       = "auto"
	transferPodNetwork = "pod_network"
	transferSSH        = "ssh"
)

// transfers are cross_node_transfer's values, for its validator.
var transfers = []string{transferAuto, transferPodNetwork, transferSSH}

// crossNodeTransferDescription is cross_node_transfer's description.
const crossNodeTransferDescription = "How a copy between nodes (see `target_node`) moves the data: `pod_network`, `ssh` or `auto` " +
	"(default: `auto`). `pod_network`: an rsync daemon pod on the new volume's node and a client pod on the source's, over the pod " +
	"network, NOT encrypted (TCP ports 20000-29999 between the migration's pods). `ssh`: no pod network; both volumes must be " +
	"directories on their nodes (local PVs, hostPath, OpenEBS hostpath, local-path) and the provider's `ssh` block must reach both nodes: " +
	"an rsync daemon on the new volume's node listens on its 127.0.0.1 only, and the provider carries the source node's rsync to it " +
	"through its two SSH connections (a remote forward on the source's sshd, a local one on the target's; both sshds must allow TCP " +
	"forwarding). Encrypted on both legs, but every byte passes through the machine that runs Terraform, so that machine's links " +
	"bound the copy's speed. `auto`: `ssh` when the provider has an `ssh` block and both volumes have a directory on their node, " +
	"else `pod_network`. Checked at plan: `ssh` without the `ssh` block, or with a source volume or a target class without node " +
	"directories, is refused. It does not change a copy on one node (one copy pod)."

// nodePathProvisioners make volumes that are directories on one node (hostPath or local PVs):
// with no-provisioner, the class of static local volumes.
var nodePathProvisioners = map[string]bool{
	"kubernetes.io/no-provisioner": true,
	"openebs.io/local":             true,
	"rancher.io/local-path":        true,
}

// sshDaemonStart bounds waiting for the daemon to listen.
const sshDaemonStart = time.Minute

// nodePath is the directory a volume is on its node: a local PV's path or a hostPath volume's;
// "" for any other volume.
func nodePath(pv *corev1.PersistentVolume) string {
	switch {
	case pv == nil:
		return ""
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	}
	return ""
}

// checkTransfer is the plan's check of cross_node_transfer = "ssh": the provider's ssh block, a
// source volume that is a directory on its node and a target class that makes such volumes.
// sourcePV is nil when it is not known (no claim, not bound); class nil when it does not exist.
func checkTransfer(transfer string, sshReady bool, sourcePV *corev1.PersistentVolume, class string, provisioner string) *problem {
	if transfer != transferSSH {
		return nil
	}
	if !sshReady {
		return &problem{"cross_node_transfer", "cross_node_transfer = \"ssh\" needs the provider's ssh block",
			"The copy between nodes over SSH runs rsync on both nodes through the provider's SSH connections: configure the provider's ssh block " +
				"(and nodes entries where a node's address is not the one Kubernetes reports), or use cross_node_transfer = \"pod_network\" or \"auto\"."}
	}
	if sourcePV != nil && nodePath(sourcePV) == "" {
		return &problem{"cross_node_transfer", "The source volume " + sourcePV.Name + " is not a directory on its node",
			"cross_node_transfer = \"ssh\" reads the source from its directory on its node, which only local PVs and hostPath volumes (OpenEBS hostpath, " +
				"local-path) have. Use cross_node_transfer = \"pod_network\" or \"auto\"."}
	}
	if provisioner != "" && !nodePathProvisioners[provisioner] {
		return &problem{"cross_node_transfer", "StorageClass " + class + " does not make volumes that are directories on a node",
			"cross_node_transfer = \"ssh\" writes the new volume through its directory on its node; StorageClass " + class + "'s provisioner is " +
				provisioner + ", not one of local volumes or hostPath directories (kubernetes.io/no-provisioner, openebs.io/local, rancher.io/local-path). " +
				"Use cross_node_transfer = \"pod_network\" or \"auto\"."}
	}
	return nil
}

// planTransfer reads what checkTransfer needs and runs it (ModifyPlan).
func (m *Migrator) planTransfer(ctx context.Context, sshReady bool) *problem {
	if m.Spec.Transfer != transferSSH {
		return nil
	}
	var source *corev1.PersistentVolume
	claim, err := m.claims().Get(ctx, m.Spec.Claim, metav1.GetOptions{})
	if err == nil && claim.Spec.VolumeName != "" {
		if pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{}); err == nil {
			source = pv
		}
	}
	provisioner := ""
	if class, err := m.Client.StorageV1().StorageClasses().Get(ctx, m.Spec.StorageClass, metav1.GetOptions{}); err == nil {
		provisioner = class.Provisioner
	}
	return checkTransfer(m.Spec.Transfer, sshReady, source, m.Spec.StorageClass, provisioner)
}

// sshVolumes are the directories of a copy over SSH, or why it cannot be one.
type sshVolumes struct{ Source, Target string }

// viaSSH decides the transfer of a copy between nodes: the two volumes' directories when it is
// to go over SSH, ok false for the pod network. With "ssh" a volume without a directory is an
// error; "auto" then takes the pod network. A new claim not bound yet (a class that binds at the
// first consumer) is bound first, on the target node, by a pod that mounts it.
func (m *Migrator) viaSSH(ctx context.Context, p progress, pl placement) (sshVolumes, bool, error) {
	var v sshVolumes
	switch {
	case m.Spec.Transfer == transferPodNetwork:
		return v, false, nil
	case m.Hosts == nil && m.Spec.Transfer == transferSSH:
		return v, false, errors.New("cross_node_transfer = \"ssh\" needs the provider's ssh block: the copy between nodes over SSH runs on both nodes through it")
	case m.Hosts == nil:
		return v, false, nil
	}
	must := m.Spec.Transfer == transferSSH
	refuse := func(format string, args ...any) (sshVolumes, bool, error) {
		if must {
			return v, false, fmt.Errorf("cross_node_transfer = \"ssh\": "+format+"; use cross_node_transfer = \"pod_network\" or \"auto\"", args...)
		}
		m.stopSSHDaemon(ctx, p.TargetClaim, pl.Target)
		return v, false, nil
	}
	src, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, p.SourceVolume, metav1.GetOptions{})
	if err != nil {
		return v, false, fmt.Errorf("reading the source volume %s: %w", p.SourceVolume, err)
	}
	if v.Source = nodePath(src); v.Source == "" {
		return refuse("the source volume %s is not a directory on its node (not a local PV or hostPath volume)", src.Name)
	}
	if m.Spec.Volume == "" {
		class, err := m.Client.StorageV1().StorageClasses().Get(ctx, m.Spec.StorageClass, metav1.GetOptions{})
		if err != nil {
			return v, false, fmt.Errorf("reading StorageClass %s: %w", m.Spec.StorageClass, err)
		}
		if !nodePathProvisioners[class.Provisioner] {
			return refuse("StorageClass %s's provisioner %s does not make volumes that are directories on a node", class.Name, class.Provisioner)
		}
	}
	dst, err := m.bindOn(ctx, p.TargetClaim, pl.Target)
	if err != nil {
		return v, false, err
	}
	if v.Target = nodePath(dst); v.Target == "" {
		return refuse("the new volume %s is not a directory on its node", dst.Name)
	}
	return v, true, nil
}

// bindOn returns the new claim's volume, binding the claim first when it is not bound: a pod on
// node mounts it (the scheduler binds a WaitForFirstConsumer claim there, the kubelet makes a
// hostPath directory) and is removed once it ran.
func (m *Migrator) bindOn(ctx context.Context, targetClaim, node string) (*corev1.PersistentVolume, error) {
	claim, err := m.claims().Get(ctx, targetClaim, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the new claim %s/%s: %w", m.Spec.Namespace, targetClaim, err)
	}
	volume := claim.Spec.VolumeName
	if m.Spec.Volume != "" {
		volume = m.Spec.Volume
	}
	if volume == "" {
		name := targetClaim + "-bind"
		p := m.copyPod(name, "bind", "", targetClaim, node, activeDeadline(ctx))
		c := &p.Spec.Containers[0]
		c.Name = "bind"
		c.Command = []string{"true"}
		c.VolumeMounts = c.VolumeMounts[1:]
		p.Spec.Volumes = p.Spec.Volumes[1:]
		if err := m.deletePod(ctx, name); err != nil {
			return nil, err
		}
		pod, err := m.Client.CoreV1().Pods(m.Spec.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating pod %s/%s to bind the new claim on node %s: %w", m.Spec.Namespace, name, node, err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			if err := m.deletePod(cctx, name); err != nil {
				m.log("removing the pod that bound the new claim failed", map[string]any{"pod": name, "error": err.Error()})
			}
		}()
		stop := m.heartbeat(ctx, name)
		defer stop()
		if _, err := m.waitPod(ctx, name, pod, "mount the new claim", kube.PodFinished); err != nil {
			return nil, m.explain(ctx, err, name, targetClaim)
		}
		if claim, err = m.claims().Get(ctx, targetClaim, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("reading the new claim %s/%s: %w", m.Spec.Namespace, targetClaim, err)
		}
		if volume = claim.Spec.VolumeName; volume == "" {
			return nil, fmt.Errorf("the new claim %s/%s is not bound after pod %s mounted it on node %s", m.Spec.Namespace, targetClaim, name, node)
		}
	}
	pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the new volume %s: %w", volume, err)
	}
	return pv, nil
}

// stopSSHDaemon stops a daemon over SSH a killed run left on node and removes its directory,
// when this run copies over the pod network instead (a change of cross_node_transfer, a volume
// that changed): best effort, logged.
func (m *Migrator) stopSSHDaemon(ctx context.Context, targetClaim, node string) {
	if m.Hosts == nil || node == "" {
		return
	}
	h, err := m.Hosts(ctx, node)
	if err == nil {
		_, err = h.Run(ctx, sshnode.Script(rsyncdSSHScript, "cleanup", m.sshDir(targetClaim)))
	}
	if err != nil {
		m.log("removing a copy over SSH an earlier run left failed", map[string]any{"node": node, "error": err.Error()})
	}
}

// sshDir is the directory of the migration's daemon on the target node.
func (m *Migrator) sshDir(targetClaim string) string {
	sum := sha256.Sum256([]byte(m.Spec.Namespace + "/" + targetClaim))
	return "/tmp/clusterstorage-rsyncd-" + hex.EncodeToString(sum[:8])
}

// runCrossSSH runs one copy of mode between nodes over SSH (see the top of this file). The
// daemon is stopped and its directory removed before it returns.
func (m *Migrator) runCrossSSH(ctx context.Context, mode, targetClaim string, pl placement, v sshVolumes) (copyOutput, error) {
	src, err := m.Hosts(ctx, pl.Source)
	if err != nil {
		return copyOutput{}, fmt.Errorf("reaching the source's node %s over SSH: %w", pl.Source, err)
	}
	dst, err := m.Hosts(ctx, pl.Target)
	if err != nil {
		return copyOutput{}, fmt.Errorf("reaching the new volume's node %s over SSH: %w", pl.Target, err)
	}
	dir := m.sshDir(targetClaim)
	password := rand.Text()
	if _, err := dst.Exec(ctx, sshnode.Script(rsyncdSSHScript, "prepare", dir), sshnode.ExecOptions{Stdin: strings.NewReader(rsyncUser + ":" + password + "\n")}); err != nil {
		return copyOutput{}, fmt.Errorf("preparing the rsync daemon's directory %s on node %s: %w", dir, pl.Target, err)
	}
	dctx, stopDaemon := context.WithCancel(context.WithoutCancel(ctx))
	killed := false
	var daemonDone chan error
	defer func() {
		if killed {
			return // as a killed provider: the daemon and its directory are left for the next run
		}
		stopDaemon()
		if daemonDone != nil {
			if err := <-daemonDone; err != nil && !errors.Is(err, context.Canceled) {
				m.log("the rsync daemon ended with an error", map[string]any{"node": pl.Target, "error": err.Error()})
			}
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if _, err := dst.Run(cctx, sshnode.Script(rsyncdSSHScript, "cleanup", dir)); err != nil {
			m.log("removing the rsync daemon's directory failed", map[string]any{"node": pl.Target, "dir": dir, "error": err.Error()})
		}
	}()
	port, daemonLog, done, err := m.startSSHDaemon(ctx, dctx, dst, dir, targetClaim, v.Target)
	daemonDone = done
	if err != nil {
		return copyOutput{}, err
	}
	m.log("rsync daemon listening on the new volume's node (127.0.0.1 only)", map[string]any{"node": pl.Target, "port": port, "path": v.Target})

	fwd, err := forward(ctx, src, dst, "127.0.0.1:"+strconv.Itoa(port), m.log)
	if err != nil {
		return copyOutput{}, err
	}
	defer fwd.close()
	m.log("forwarding the source node's port to the daemon through SSH", map[string]any{"source_node": pl.Source, "port": fwd.port})

	marker := newMarker()
	args := []string{"client", v.Source, "rsync://" + rsyncUser + "@" + net.JoinHostPort("127.0.0.1", strconv.Itoa(fwd.port)), copyScript, mode, marker}
	if m.Spec.CopyXattrs {
		args = append(args, "xattrs")
	}
	if m.killInSSH == mode {
		killed = true
		return copyOutput{}, m.killInSSHCopy(ctx, src, args, password, fwd)
	}
	res, err := src.Exec(ctx, sshnode.Script(rsyncdSSHScript, args...), sshnode.ExecOptions{
		Stdin: strings.NewReader(password + "\n"), Timeout: time.Until(deadline(ctx)),
	})
	var exitErr *sshnode.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return copyOutput{}, fmt.Errorf("the copy over SSH from node %s failed: %w\n\nThe rsync daemon's log (node %s):\n%s", pl.Source, err, pl.Target, lastLines(daemonLog.String(), 20))
	}
	out, err := parseCopyOutput(string(res.Stdout), marker)
	if err != nil {
		return out, err
	}
	where := "node " + pl.Source + " (over SSH to node " + pl.Target + ")"
	m.log("copy over SSH finished", map[string]any{"mode": mode, "files": out.Files, "bytes": out.Bytes, "forwarded_bytes": fwd.bytes.Load(),
		"copy_seconds": out.CopySeconds, "verify_seconds": out.VerifySeconds, "source_node": pl.Source, "target_node": pl.Target})
	m.forwardedBytes += fwd.bytes.Load()
	tail := lastLines(string(res.Stdout)+string(res.Stderr), 20) + "\n\nThe rsync daemon's log:\n" + lastLines(daemonLog.String(), 20)
	switch {
	case !out.Ended:
		return out, fmt.Errorf("the copy on %s ended before its script did: %s", where, tail)
	case out.Exit != 0:
		return out, fmt.Errorf("the copy failed: rsync exited with status %d on %s: %s", out.Exit, where, tail)
	case mode == modeFinal && !out.Verified:
		return out, fmt.Errorf("the copy on %s did not verify the copy", where)
	case len(out.Differs) > 0:
		return out, fmt.Errorf("verifying the copy failed: %d entries differ from the source after the copy (rsync --checksum): %s", len(out.Differs), strings.Join(firstN(out.Differs, 20), "; "))
	}
	return out, nil
}

// startSSHDaemon starts the daemon on the target node, on the first port of a few it can bind
// (another program may hold one), and returns once it listens and answers as this run's
// (rsyncd.sh's "ID listening PORT"): the port, its log, and a channel that receives its end.
func (m *Migrator) startSSHDaemon(ctx, dctx context.Context, dst *sshnode.Host, dir, targetClaim, path string) (int, *syncBuffer, chan error, error) {
	var last error
	for attempt := range 5 {
		port := int(daemonPort(dir + "/" + targetClaim + "/" + strconv.Itoa(attempt)))
		id := newMarker()
		log := &syncBuffer{want: []byte(id + " listening "), ready: make(chan struct{})}
		done := make(chan error, 1)
		// The daemon's stdin stays open until dctx ends: then, or when the connection ends, the
		// script stops the daemon.
		stdin, hold := io.Pipe()
		stop := context.AfterFunc(dctx, func() { _ = hold.Close() }) //nolint:errcheck // a pipe's Close does not fail
		go func() {
			defer stop()
			_, err := dst.Exec(dctx, sshnode.Script(rsyncdSSHScript, "daemon", dir, strconv.Itoa(port), path, rsyncdScript, id),
				sshnode.ExecOptions{Stdin: stdin, Stdout: log, Stderr: log, Timeout: time.Until(deadline(ctx)) + cleanupTimeout})
			_ = hold.Close() //nolint:errcheck // as above
			done <- err
		}()
		timer := time.NewTimer(sshDaemonStart)
		select {
		case <-log.ready:
			timer.Stop()
			return port, log, done, nil
		case err := <-done:
			timer.Stop()
			if strings.Contains(log.String(), "Address already in use") {
				last = fmt.Errorf("port %d is taken on the node", port)
				continue
			}
			return 0, log, nil, fmt.Errorf("the rsync daemon on the new volume's node ended before it listened: %v: %s", err, lastLines(log.String(), 20))
		case <-timer.C:
			return 0, log, done, fmt.Errorf("the rsync daemon on the new volume's node did not listen within %s: %s", sshDaemonStart, lastLines(log.String(), 20))
		case <-ctx.Done():
			timer.Stop()
			return 0, log, done, context.Cause(ctx)
		}
	}
	return 0, nil, nil, fmt.Errorf("the rsync daemon on the new volume's node found no port it could listen on: %w", last)
}

// syncBuffer keeps what a command writes (for its log) and closes ready once want appeared.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  []byte
	ready chan struct{}
	seen  bool
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<20 {
		b.buf.Write(p)
	}
	if !b.seen && bytes.Contains(b.buf.Bytes(), b.want) {
		b.seen = true
		close(b.ready)
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// forwarder carries the connections made to a port on the source node's 127.0.0.1 to an
// address on the target node, through the provider's SSH connections to both.
type forwarder struct {
	port     int
	listener net.Listener
	bytes    atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

// forward starts a forwarder from a new port on src's 127.0.0.1 to to on dst.
func forward(ctx context.Context, src, dst *sshnode.Host, to string, log func(string, map[string]any)) (*forwarder, error) {
	l, err := src.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok || addr.Port == 0 {
		_ = l.Close() //nolint:errcheck // the listener is not usable anyway
		return nil, fmt.Errorf("the source node's sshd listens on %v, not on a TCP port", l.Addr())
	}
	f := &forwarder{port: addr.Port, listener: l, conns: map[net.Conn]bool{}}
	fctx := context.WithoutCancel(ctx)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				d, err := dst.Dial(fctx, to)
				if err != nil {
					log("forwarding a connection to the rsync daemon failed", map[string]any{"error": err.Error()})
					_ = c.Close() //nolint:errcheck // the client sees the connection end
					return
				}
				if !f.track(c, d) {
					return
				}
				defer f.untrack(c, d)
				var both sync.WaitGroup
				both.Add(1)
				go func() {
					defer both.Done()
					f.pipe(d, c)
				}()
				f.pipe(c, d)
				both.Wait()
			}()
		}
	}()
	return f, nil
}

// pipe copies from r to w until r ends, then ends w's sending side.
func (f *forwarder) pipe(w, r net.Conn) {
	n, _ := io.Copy(w, r) //nolint:errcheck // an end of either side ends the copy; rsync reports what it means
	f.bytes.Add(n)
	if cw, ok := w.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite() //nolint:errcheck // the connection may be gone already
	} else {
		_ = w.Close() //nolint:errcheck // as above
	}
}

// track records a pair of connections to close with the forwarder; false when it is closed.
func (f *forwarder) track(c ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		for _, x := range c {
			_ = x.Close() //nolint:errcheck // the forwarder is closed
		}
		return false
	}
	for _, x := range c {
		f.conns[x] = true
	}
	return true
}

func (f *forwarder) untrack(c ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range c {
		_ = x.Close() //nolint:errcheck // done with it
		delete(f.conns, x)
	}
}

// close stops listening, ends the connections in flight and waits for its goroutines.
func (f *forwarder) close() {
	_ = f.listener.Close() //nolint:errcheck // the node's listener ends with the connection anyway
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close() //nolint:errcheck // ending it is the point
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}

// killInSSHCopy (tests) starts the client, waits until data goes through the forwarder and
// cuts it, as the end of a killed provider's SSH connections would, and returns errKilled: the
// daemon and its directory stay on the target node, the client ends on its broken connection.
func (m *Migrator) killInSSHCopy(ctx context.Context, src *sshnode.Host, args []string, password string, fwd *forwarder) error {
	go func() {
		_, err := src.Exec(context.WithoutCancel(ctx), sshnode.Script(rsyncdSSHScript, args...), sshnode.ExecOptions{Stdin: strings.NewReader(password + "\n"), Timeout: time.Minute})
		m.log("the killed run's client ended", map[string]any{"error": fmt.Sprint(err)})
	}()
	until := time.Now().Add(time.Minute)
	for fwd.bytes.Load() == 0 && len(fwd.open()) == 0 {
		if time.Now().After(until) {
			return errors.New("no data went through the forwarder within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fwd.close()
	return errKilled
}

// open returns the connections the forwarder carries now.
func (f *forwarder) open() []net.Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]net.Conn, 0, len(f.conns))
	for c := range f.conns {
		out = append(out, c)
	}
	return out
}
