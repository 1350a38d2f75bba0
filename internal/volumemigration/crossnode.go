package volumemigration

// The copy between nodes. A copy pod mounts both volumes, so it needs one node that can mount
// both; node-local volumes (local PVs, hostPath and OpenEBS hostpath classes, local-path) are
// each pinned to one node, and a move onto another node has none. Then each side gets a pod on
// its own node: an rsync daemon (scripts/rsyncd.sh) on the new volume's node mounting the new
// claim, and on the source's node a client running copy.sh, the source mounted read-only, whose
// destination is the daemon (REMOTE). They talk over the pod network, the daemon reached by its
// pod IP (no Service), its port derived from its name (with host_network several migrations may
// share a node's ports). The client authenticates with a password from a Secret the migration
// makes (one per migration, found again by name and reused by a resumed run) and removes after
// the final copy and at a rollback. The daemon protocol is NOT encrypted: the data crosses the
// network in the clear (the docs say so).
//
// The phases do not change: the first copy while the workload runs, the delta and the
// verification with it stopped; the verification compares every file's content on both ends
// (rsync --checksum through the daemon: the daemon sums its files, the client the source's),
// without the record of unchanged files a copy pod keeps (that needs both sides' inodes and
// ctimes in one place). A resumed run deletes a daemon or client an earlier run left and makes
// them again; a stale one is removed by sweep like any copy pod (both carry the heartbeat).

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// rsyncdScript runs in the daemon pod of a copy between nodes (scripts/rsyncd.sh).
//
//go:embed scripts/rsyncd.sh
var rsyncdScript string

const (
	// rsyncUser is the daemon's one user.
	rsyncUser = "migrate"
	// secretKeyPassword holds the password (the client's RSYNC_PASSWORD), secretKeySecrets the
	// daemon's secrets file ("user:password").
	secretKeyPassword = "password"
	secretKeySecrets  = "rsyncd.secrets"
	secretsMount      = "/etc/clusterstorage-rsync"
	// The daemon listens on a port in [daemonPortBase, daemonPortBase+daemonPorts).
	daemonPortBase = 20000
	daemonPorts    = 10000
	// daemonTries is how many ports a daemon tries (daemonPortAt) before the copy fails.
	daemonTries = 5
	// daemonReadyTimeout bounds the wait, once the daemon's container runs, for it to say it
	// listens (its script gives up after a minute).
	daemonReadyTimeout = 2 * time.Minute
	// annotationDaemonPort, on the daemon pod, is the port it listens on.
	annotationDaemonPort = "clusterstorage.io/migration-rsync-port"
)

// daemonPodName is the name of the daemon pod of a mode.
func daemonPodName(targetClaim, mode string) string { return targetClaim + "-" + mode + "-rsyncd" }

// rsyncSecretName is the name of the Secret with the daemon's password.
func rsyncSecretName(targetClaim string) string { return targetClaim + "-rsync" }

// daemonPort is the first port of the daemon pod named name.
func daemonPort(name string) int32 { return daemonPortAt(name, 0) }

// daemonPortAt is the port of the daemon pod named name at its try (0 first), when the ports
// before were taken: a sequence that depends on the name only (with host_network several
// migrations share a node's ports, and a resumed run tries the same ports again).
func daemonPortAt(name string, try int) int32 {
	key := name
	if try > 0 {
		key += "#" + strconv.Itoa(try)
	}
	sum := sha256.Sum256([]byte(key))
	return daemonPortBase + int32(binary.BigEndian.Uint16(sum[:2])%daemonPorts)
}

// placement is where the two volumes of a copy are: the node the source is pinned to (or the
// node the workload mounts it on while it runs) and the node the new volume is (to be) on; ""
// where any node can mount it.
type placement struct{ Source, Target string }

// crossNode reports whether no one node can mount both volumes.
func (pl placement) crossNode() bool {
	return pl.Source != "" && pl.Target != "" && pl.Source != pl.Target
}

// place finds where the volumes of the copy are. live is the node the workload mounts the claim
// on while it runs ("" once it is stopped). With target_node, the new claim, once bound, must be
// on it: a volume elsewhere (a class of static volumes binding one of another node) fails.
func (m *Migrator) place(ctx context.Context, p progress, live string) (placement, error) {
	var pl placement
	if p.SourceVolume != "" {
		pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, p.SourceVolume, metav1.GetOptions{})
		if err != nil && !kube.IsNotFound(err) {
			return pl, fmt.Errorf("reading the source volume %s: %w", p.SourceVolume, err)
		}
		if err == nil {
			pl.Source = m.nodeNamed(ctx, volumes.Node(pv))
		}
	}
	if pl.Source == "" {
		pl.Source = live
	}
	target, err := m.targetVolumeNode(ctx, p.TargetClaim)
	if err != nil {
		return pl, err
	}
	pl.Target = m.Spec.TargetNode
	switch {
	case pl.Target == "":
		pl.Target = target
	case target != "" && target != pl.Target:
		return pl, fmt.Errorf("the new claim %s/%s is bound to a volume on node %s, not on target_node %s: StorageClass %s gave it a volume of another node. "+
			"Use a class that provisions on the node the claim is used on (WaitForFirstConsumer), or make a volume of the class on %s",
			m.Spec.Namespace, p.TargetClaim, target, pl.Target, m.Spec.StorageClass, pl.Target)
	}
	return pl, nil
}

// targetVolumeNode is the node the new claim's volume is pinned to: "" while it is not bound
// (a WaitForFirstConsumer class binds it where its first pod runs) or when any node can mount it.
// A claim of a class that binds at once (Immediate) is waited for until it is bound.
func (m *Migrator) targetVolumeNode(ctx context.Context, name string) (string, error) {
	claim, err := m.claims().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the new claim %s/%s: %w", m.Spec.Namespace, name, err)
	}
	if m.Spec.Volume != "" {
		claim.Spec.VolumeName = m.Spec.Volume // a restore: the claim is bound to it by name
	}
	if claim.Spec.VolumeName == "" {
		class, err := m.Client.StorageV1().StorageClasses().Get(ctx, m.Spec.StorageClass, metav1.GetOptions{})
		if err != nil {
			return "", nil //nolint:nilerr // the class is the plan's to check; unknown: the copy pod's scheduling decides
		}
		if class.VolumeBindingMode != nil && *class.VolumeBindingMode != "Immediate" {
			return "", nil
		}
		claim, err = kube.WaitFor(ctx, m.Client.CoreV1().PersistentVolumeClaims(m.Spec.Namespace), name, claim,
			kube.Wait{What: "the new claim " + m.Spec.Namespace + "/" + name + " to be bound (StorageClass " + m.Spec.StorageClass + " binds at once)", Timeout: unschedulableFor},
			func(c *corev1.PersistentVolumeClaim) (bool, string, error) {
				if c == nil {
					return false, "", fmt.Errorf("the new claim %s/%s was deleted", m.Spec.Namespace, name)
				}
				return c.Spec.VolumeName != "", "phase " + string(c.Status.Phase), nil
			})
		if err != nil {
			return "", err
		}
	}
	pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the new volume %s: %w", claim.Spec.VolumeName, err)
	}
	return m.nodeNamed(ctx, volumes.Node(pv)), nil
}

// copyData runs one copy of mode: one copy pod where one node can mount both volumes (node: the
// one it must run on, ""), else the copy between nodes. live is the workload's node while it
// runs.
func (m *Migrator) copyData(ctx context.Context, mode string, p progress, node, live string) (out copyOutput, err error) {
	pl, err := m.place(ctx, p, live)
	if err != nil {
		return copyOutput{}, err
	}
	if !pl.crossNode() {
		if m.Spec.TargetNode != "" {
			node = m.Spec.TargetNode
		}
		return m.runCopy(ctx, mode, p.TargetClaim, node)
	}
	if v, ssh, err := m.viaSSH(ctx, p, pl); err != nil {
		return copyOutput{}, err
	} else if ssh { // crossnode_ssh.go
		m.log("copying between nodes over SSH (encrypted, through the machine that runs Terraform)", map[string]any{
			"mode": mode, "source_node": pl.Source, "target_node": pl.Target})
		return m.runCrossSSH(ctx, mode, p.TargetClaim, pl, v)
	}
	if mode == modeFinal {
		// The last copy between nodes: its password is not needed after it, whatever its end
		// (but a test's run stopped as a killed provider would, which leaves it).
		defer func() {
			if errors.Is(err, errKilled) {
				return
			}
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			if err := m.deleteRsyncSecret(cctx, p.TargetClaim); err != nil {
				m.log("removing the copy's Secret failed", map[string]any{"error": err.Error()})
			}
		}()
	}
	m.log("copying between nodes over the pod network (rsync daemon protocol: not encrypted)", map[string]any{
		"mode": mode, "source_node": pl.Source, "target_node": pl.Target})
	return m.runCross(ctx, mode, p.TargetClaim, pl)
}

// runCross runs the daemon on the new volume's node and the client on the source's, until the
// client's script ends; both pods are removed before it returns. The client starts only once
// the daemon listens and answers as this run's (startDaemon).
func (m *Migrator) runCross(ctx context.Context, mode, targetClaim string, pl placement) (copyOutput, error) {
	secret, err := m.ensureRsyncSecret(ctx, targetClaim)
	if err != nil {
		return copyOutput{}, err
	}
	name := daemonPodName(targetClaim, mode)
	killed := false
	defer func() {
		if killed {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := m.deletePod(cctx, name); err != nil {
			m.log("removing the rsync daemon pod failed", map[string]any{"pod": name, "error": err.Error()})
		}
	}()
	d, err := m.startDaemon(ctx, name, targetClaim, secret, pl.Target)
	if err != nil {
		return copyOutput{}, err
	}
	defer d.stop()
	daemon := d.pod
	marker := newMarker()
	client := m.clientPod(copyPodName(targetClaim, mode), mode, marker, targetClaim, secret, pl.Source,
		"rsync://"+rsyncUser+"@"+net.JoinHostPort(daemon.Status.PodIP, strconv.Itoa(int(d.port))), d.id, activeDeadline(ctx))
	if m.killInCrossCopy && mode == modeCopy || m.killInCrossFinal && mode == modeFinal {
		killed = true
		return copyOutput{}, m.killInCopy(ctx, client)
	}
	out, err := m.runPod(ctx, mode, targetClaim, client, marker)
	if err != nil {
		return out, fmt.Errorf("%w\n\nThe rsync daemon's log (pod %s/%s on node %s):\n%s", err, m.Spec.Namespace, name, daemon.Spec.NodeName, m.podLog(ctx, name))
	}
	return out, nil
}

// startDaemon makes the daemon pod name on node and waits until it listens on its pod IP and
// answers as this run's (rsyncd.sh's "listening" line). A port something else on the node has
// (with the node's network every pod of the node shares its ports) fails the daemon's bind:
// then the pod is deleted and made again on the next port of its name's sequence (daemonPortAt),
// up to daemonTries ports. The sequence depends on the name only, so a resumed run tries the
// same ports in the same order; the port in use is on the pod (annotationDaemonPort) and in its
// command. An earlier run's pod of that name is deleted first.
func (m *Migrator) startDaemon(ctx context.Context, name, targetClaim, secret, node string) (runningDaemon, error) {
	pods := m.Client.CoreV1().Pods(m.Spec.Namespace)
	for try := 0; ; try++ {
		if err := m.deletePod(ctx, name); err != nil { // an earlier run's, or the try before
			return runningDaemon{}, err
		}
		d := runningDaemon{port: daemonPortAt(name, try), id: newMarker()}
		pod, err := pods.Create(ctx, m.daemonPod(name, targetClaim, secret, node, d.port, d.id, activeDeadline(ctx)), metav1.CreateOptions{})
		if err != nil {
			return runningDaemon{}, fmt.Errorf("creating the rsync daemon pod %s/%s: %w", m.Spec.Namespace, name, err)
		}
		d.stop = m.heartbeat(ctx, name)
		if d.pod, err = m.waitListening(ctx, name, pod, d.id, d.port); err == nil {
			m.log("rsync daemon listening", map[string]any{"pod": name, "node": d.pod.Spec.NodeName, "address": d.pod.Status.PodIP, "port": d.port, "try": try + 1})
			return d, nil
		}
		d.stop()
		var taken *portTakenError
		if !errors.As(err, &taken) {
			return runningDaemon{}, m.explain(ctx, err, name, targetClaim)
		}
		if try+1 >= daemonTries {
			return runningDaemon{}, fmt.Errorf("%w; the %d ports tried (%s) were all taken on node %s: something there holds them (with host_network, "+
				"the node's own services and other pods with the node's network share its ports)", err, daemonTries, portList(name), node)
		}
		m.log("the rsync daemon's port is taken on the node; making the daemon again on another port", map[string]any{
			"pod": name, "node": node, "port": d.port, "next_port": daemonPortAt(name, try+1)})
	}
}

// runningDaemon is a daemon pod that listens: its port, the run's ID it answers with (the
// "target" module's comment, which the client checks too) and the function that stops its
// heartbeat.
type runningDaemon struct {
	pod  *corev1.Pod
	port int32
	id   string
	stop func()
}

// portList is the ports of the daemon pod name's sequence, for messages.
func portList(name string) string {
	ports := make([]string, 0, daemonTries)
	for try := range daemonTries {
		ports = append(ports, strconv.Itoa(int(daemonPortAt(name, try))))
	}
	return strings.Join(ports, ", ")
}

// portTakenError is a daemon whose bind failed: something else on the node has its port.
type portTakenError struct {
	pod, node string
	port      int32
	log       string
}

func (e *portTakenError) Error() string {
	return fmt.Sprintf("the rsync daemon pod %s on node %s could not listen on port %d: it is taken (%s)", e.pod, e.node, e.port, lastLines(e.log, 3))
}

// waitListening waits until the daemon pod runs and its script says its daemon listens
// ("ID listening"), following its log. A daemon that ended, or says it failed or cannot be
// reached, fails the wait (a *portTakenError when its log says the address is in use).
func (m *Migrator) waitListening(ctx context.Context, name string, pod *corev1.Pod, id string, port int32) (*corev1.Pod, error) {
	pod, err := m.waitPod(ctx, name, pod, "run", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" || kube.PodFinished(p)
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, daemonReadyTimeout)
	defer cancel()
	verdict := id + " "
	for {
		log, line := m.followUntil(ctx, name, func(l string) bool { return strings.HasPrefix(l, verdict) })
		if line == "" {
			// The stream ended without the verdict (the container ended, the connection was
			// lost): the pod's state and its whole log say what happened.
			p, err := m.Client.CoreV1().Pods(m.Spec.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("waiting for the rsync daemon pod %s/%s to listen: %w", m.Spec.Namespace, name, err)
			}
			pod = p
			log = m.podLog(ctx, name)
			for _, l := range strings.Split(log, "\n") {
				if strings.HasPrefix(l, verdict) {
					line = l
				}
			}
			if line == "" && !kube.PodFinished(p) {
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("the rsync daemon pod %s/%s on node %s did not report that it listens within %s: %s",
						m.Spec.Namespace, name, pod.Spec.NodeName, daemonReadyTimeout, lastLines(log, 20))
				case <-time.After(time.Second):
				}
				continue
			}
		}
		switch {
		case strings.HasPrefix(line, verdict+"listening "):
			return pod, nil
		case strings.Contains(log, "Address already in use"):
			return nil, &portTakenError{pod: m.Spec.Namespace + "/" + name, node: pod.Spec.NodeName, port: port, log: log}
		case strings.HasPrefix(line, verdict+"unreachable"):
			return nil, fmt.Errorf("the rsync daemon pod %s/%s on node %s runs, but its own listing at %s did not answer as this run's within a minute: %s",
				m.Spec.Namespace, name, pod.Spec.NodeName, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))), lastLines(log, 20))
		}
		return nil, fmt.Errorf("the rsync daemon pod %s/%s on node %s ended (%s) before it listened: %s", m.Spec.Namespace, name, pod.Spec.NodeName,
			pod.Status.Phase, lastLines(log, 20))
	}
}

// followUntil reads a pod's log as it is written until a line for which stop is true, and
// returns the log read and that line ("" when the stream ended first).
func (m *Migrator) followUntil(ctx context.Context, name string, stop func(string) bool) (log, line string) {
	limit := maxLogBytes
	stream, err := m.Client.CoreV1().Pods(m.Spec.Namespace).GetLogs(name, &corev1.PodLogOptions{Follow: true, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		return "", ""
	}
	defer stream.Close() //nolint:errcheck // read only; closing ends the request
	var b strings.Builder
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
		if stop(sc.Text()) {
			return b.String(), sc.Text()
		}
	}
	return b.String(), ""
}

// podLog is the last lines of a pod's log, or why it could not be read.
func (m *Migrator) podLog(ctx context.Context, name string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	limit := int64(64 << 10)
	b, err := m.Client.CoreV1().Pods(m.Spec.Namespace).GetLogs(name, &corev1.PodLogOptions{LimitBytes: &limit}).DoRaw(ctx)
	if err != nil {
		return "(not read: " + err.Error() + ")"
	}
	return lastLines(string(b), 20)
}

// daemonPod is the copy pod's image, security context and resources, mounting the new claim
// (and the Secret) only, on node, running rsyncdScript on port of its pod IP (ADDRESS, from the
// downward API), answering with id. It also has SYS_CHROOT and SETGID (both in Pod Security's
// baseline set): the daemon chroots into the volume and sets its groups (to root's) for each
// connection.
func (m *Migrator) daemonPod(name, targetClaim, secret, node string, port int32, id string, activeDeadline int64) *corev1.Pod {
	p := m.copyPod(name, "rsyncd", "", targetClaim, node, activeDeadline)
	p.Annotations[annotationDaemonPort] = strconv.Itoa(int(port))
	c := &p.Spec.Containers[0]
	c.Name = "rsyncd"
	c.Command = []string{"sh", "-c", rsyncdScript, "rsyncd.sh", strconv.Itoa(int(port)), secretsMount + "/" + secretKeySecrets, id}
	c.Env = []corev1.EnvVar{{Name: "ADDRESS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, "SYS_CHROOT", "SETGID")
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "target", MountPath: targetMount},
		{Name: "secret", MountPath: secretsMount, ReadOnly: true},
	}
	mode := int32(0o400)
	p.Spec.Volumes = []corev1.Volume{
		p.Spec.Volumes[1],
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: &mode, Items: []corev1.KeyToPath{{Key: secretKeySecrets, Path: secretKeySecrets}},
		}}},
	}
	return p
}

// clientPod is a copy pod that mounts the source only and copies to the daemon at remote
// (rsync://user@address:port), the password from the Secret, once the daemon there answers with
// daemonID.
func (m *Migrator) clientPod(name, mode, marker, targetClaim, secret, node, remote, daemonID string, activeDeadline int64) *corev1.Pod {
	p := m.copyPod(name, mode, marker, targetClaim, node, activeDeadline)
	c := &p.Spec.Containers[0]
	c.VolumeMounts = c.VolumeMounts[:1]
	c.Env = []corev1.EnvVar{
		{Name: "REMOTE", Value: remote},
		{Name: "DAEMON_ID", Value: daemonID},
		{Name: "RSYNC_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: secretKeyPassword}}},
	}
	p.Spec.Volumes = p.Spec.Volumes[:1]
	return p
}

// ensureRsyncSecret returns the name of the migration's Secret with the daemon's password,
// making it (a random password) unless an earlier run did.
func (m *Migrator) ensureRsyncSecret(ctx context.Context, targetClaim string) (string, error) {
	name := rsyncSecretName(targetClaim)
	secrets := m.Client.CoreV1().Secrets(m.Spec.Namespace)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if s.Labels[labelComponent] != component || s.Annotations[AnnotationMigratedTo] != m.ref() || len(s.Data[secretKeyPassword]) == 0 {
			return "", fmt.Errorf("a Secret %s/%s exists that is not this migration's: the copy between nodes needs that name; rename or remove it", m.Spec.Namespace, name)
		}
		return name, nil
	case !kube.IsNotFound(err):
		return "", fmt.Errorf("reading Secret %s/%s: %w", m.Spec.Namespace, name, err)
	}
	password := rand.Text()
	immutable := true
	_, err = secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: m.Spec.Namespace,
			Labels:      map[string]string{labelManagedBy: managedBy, labelComponent: component},
			Annotations: map[string]string{AnnotationMigratedTo: m.ref()},
		},
		Immutable: &immutable,
		Type:      corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			secretKeyPassword: []byte(password),
			secretKeySecrets:  []byte(rsyncUser + ":" + password + "\n"),
		},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return m.ensureRsyncSecret(ctx, targetClaim)
	}
	if err != nil {
		return "", fmt.Errorf("creating Secret %s/%s for the copy between nodes: %w", m.Spec.Namespace, name, err)
	}
	m.log("made the Secret of the copy between nodes", map[string]any{"secret": name})
	return name, nil
}

// deleteRsyncSecret removes the migration's Secret (only when it is the migration's).
func (m *Migrator) deleteRsyncSecret(ctx context.Context, targetClaim string) error {
	name := rsyncSecretName(targetClaim)
	secrets := m.Client.CoreV1().Secrets(m.Spec.Namespace)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if kube.IsNotFound(err) {
		return nil
	}
	if apierrors.IsForbidden(err) {
		// A role without Secrets (older examples/rbac) made none: a copy between nodes cannot
		// have run with it, and a migration on one node is not to fail its rollback for that.
		m.log("not allowed to read Secrets: no Secret of a copy between nodes to remove", map[string]any{"secret": name})
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", m.Spec.Namespace, name, err)
	}
	if s.Labels[labelComponent] != component || s.Annotations[AnnotationMigratedTo] != m.ref() {
		return nil // not the migration's: never deleted
	}
	uid := s.UID
	if err := secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !kube.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s/%s: %w", m.Spec.Namespace, name, err)
	}
	return nil
}

// killInCopy (tests) starts the client pod, waits until it runs and returns errKilled, leaving
// it, the daemon and the Secret as a killed provider would.
func (m *Migrator) killInCopy(ctx context.Context, client *corev1.Pod) error {
	if err := m.deletePod(ctx, client.Name); err != nil {
		return err
	}
	pod, err := m.Client.CoreV1().Pods(m.Spec.Namespace).Create(ctx, client, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if _, err := m.waitPod(ctx, client.Name, pod, "start", started); err != nil {
		return err
	}
	return errKilled
}

// movesOn reports whether a done migration recorded on a claim that stayed on its class is not
// what this run asks for: a restore (Spec.Volume) while the claim is on another volume, or a
// target_node other than the node of the volume the claim is on (a move between nodes on one
// class). Then the run is a new migration, not the adoption of the one recorded.
func (m *Migrator) movesOn(ctx context.Context, claim *corev1.PersistentVolumeClaim) bool {
	if m.Spec.Volume != "" {
		return claim.Spec.VolumeName != m.Spec.Volume
	}
	if m.Spec.TargetNode == "" || claim.Spec.VolumeName == "" {
		return false
	}
	pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return false // unknown: the record stands
	}
	node := m.nodeNamed(ctx, volumes.Node(pv))
	return node != "" && node != m.Spec.TargetNode
}
