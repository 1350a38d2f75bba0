package volumemigration

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const (
	sourceMount = "/source"
	targetMount = "/target"
	// maxLogBytes bounds the copy pod's log: rsync's statistics and the verification's list.
	maxLogBytes = int64(4 << 20)
	podGrace    = int64(5)
	// cleanupTimeout bounds removing a copy pod after its run.
	cleanupTimeout = 2 * time.Minute
)

// unschedulableFor is how long a copy pod may stay unschedulable before the migration gives up
// (the scheduler retries; a claim being provisioned makes it wait for a moment). Tests shorten it.
var unschedulableFor = 60 * time.Second

// copyPodName is the name of the copy pod of a mode.
func copyPodName(targetClaim, mode string) string { return targetClaim + "-" + mode }

// copyPod is the pod that copies the source claim (read-only) to the new claim. node, when set,
// pins it to that node (a ReadWriteOnce volume the workload mounts there).
func (m *Migrator) copyPod(name, mode, marker, targetClaim, node string, activeDeadline int64) *corev1.Pod {
	grace := podGrace
	noToken := false
	root := int64(0)
	no := false
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: m.Spec.Namespace,
			Labels:      map[string]string{labelManagedBy: managedBy, labelComponent: component},
			Annotations: map[string]string{AnnotationHeartbeat: kube.HeartbeatValue(time.Now()), AnnotationMigratedTo: m.ref()},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			HostNetwork:                   m.Spec.HostNetwork,
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &activeDeadline,
			AutomountServiceAccountToken:  &noToken,
			Containers: []corev1.Container{{
				Name:            "rsync",
				Image:           m.Spec.Image,
				ImagePullPolicy: corev1.PullPolicy(m.Spec.PullPolicy),
				Command:         m.copyCommand(mode, marker),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "source", MountPath: sourceMount, ReadOnly: true},
					{Name: "target", MountPath: targetMount},
				},
				// Requests and limits, which a namespace with a ResourceQuota on cpu or memory
				// requires.
				Resources: m.Spec.Resources,
				// Root with the capabilities a copy that keeps owners, modes and special files
				// needs, and no others: all of them in Pod Security's "baseline" set (DAC_OVERRIDE
				// reads and searches every file and directory, so DAC_READ_SEARCH is not needed).
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &root,
					AllowPrivilegeEscalation: &no,
					Privileged:               &no,
					Capabilities: &corev1.Capabilities{
						Drop: []corev1.Capability{"ALL"},
						Add:  []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "MKNOD"},
					},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "source", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.Spec.Claim, ReadOnly: true}}},
				{Name: "target", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: targetClaim}}},
			},
		},
	}
	if node != "" {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			},
		}}
	}
	return p
}

// copyCommand is the copy container's command: copyScript in mode, with copy_xattrs.
func (m *Migrator) copyCommand(mode, marker string) []string {
	cmd := []string{"sh", "-c", copyScript, "copy.sh", mode, marker}
	if m.Spec.CopyXattrs {
		cmd = append(cmd, "xattrs")
	}
	return cmd
}

// runCopy runs one copy pod to its end and returns what its script reported. The pod is removed
// before runCopy returns, whatever happened.
func (m *Migrator) runCopy(ctx context.Context, mode, targetClaim, node string) (copyOutput, error) {
	marker := newMarker()
	return m.runPod(ctx, mode, targetClaim, m.copyPod(copyPodName(targetClaim, mode), mode, marker, targetClaim, node, activeDeadline(ctx)), marker)
}

// newMarker is a copy run's own random string, which begins every line its provider reads.
func newMarker() string { return "clusterstorage-copy-" + strings.ToLower(rand.Text()[:12]) }

// activeDeadline is the seconds left until ctx's deadline, at least 1: the copy pods' deadline.
func activeDeadline(ctx context.Context) int64 {
	return max(int64(time.Until(deadline(ctx))/time.Second), 1)
}

// runPod runs a pod that runs copyScript (a copy pod, or the client of a copy between nodes) to
// its end and returns what its script reported. The pod is removed before runPod returns,
// whatever happened.
func (m *Migrator) runPod(ctx context.Context, mode, targetClaim string, spec *corev1.Pod, marker string) (copyOutput, error) {
	name := spec.Name
	pods := m.Client.CoreV1().Pods(m.Spec.Namespace)
	if err := m.deletePod(ctx, name); err != nil { // a finished one of an earlier run
		return copyOutput{}, err
	}
	pod, err := pods.Create(ctx, spec, metav1.CreateOptions{})
	if err != nil {
		return copyOutput{}, fmt.Errorf("creating copy pod %s/%s: %w", m.Spec.Namespace, name, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := m.deletePod(cctx, name); err != nil {
			m.log("removing the copy pod failed", map[string]any{"pod": name, "error": err.Error()})
		}
	}()
	stop := m.heartbeat(ctx, name)
	defer stop()

	// The script's log is followed from its start: its last line (the exit status) tells the
	// result a second or two before the kubelet reports the pod finished. Without that line
	// (the stream was cut), the pod's end is waited for and its whole log read.
	if pod, err = m.waitPod(ctx, name, pod, "start", started); err != nil {
		return copyOutput{}, m.explain(ctx, err, name, targetClaim)
	}
	raw, whole := m.followLog(ctx, name, marker)
	if !whole {
		if pod, err = m.waitPod(ctx, name, pod, "finish", kube.PodFinished); err != nil {
			return copyOutput{}, m.explain(ctx, err, name, targetClaim)
		}
		limit := maxLogBytes
		b, err := pods.GetLogs(name, &corev1.PodLogOptions{LimitBytes: &limit}).DoRaw(ctx)
		if err != nil {
			return copyOutput{}, fmt.Errorf("reading the log of copy pod %s/%s: %w", m.Spec.Namespace, name, err)
		}
		raw = string(b)
	}
	out, err := parseCopyOutput(raw, marker)
	if err != nil {
		return out, err
	}
	fields := map[string]any{"pod": name, "mode": mode, "phase": string(pod.Status.Phase), "files": out.Files, "bytes": out.Bytes, "node": pod.Spec.NodeName,
		"copy_seconds": out.CopySeconds, "verify_seconds": out.VerifySeconds,
		"record_seconds": out.RecordSeconds, "unchanged_files": out.Unchanged}
	for _, cs := range pod.Status.ContainerStatuses {
		// Where the time went: from the pod's creation to its container's start (whole seconds).
		if r := cs.State.Running; r != nil {
			fields["start_seconds"] = r.StartedAt.Sub(pod.CreationTimestamp.Time).Seconds()
		} else if t := cs.State.Terminated; t != nil {
			fields["start_seconds"] = t.StartedAt.Sub(pod.CreationTimestamp.Time).Seconds()
		}
	}
	m.log("copy pod finished", fields)
	switch {
	case !out.Ended:
		return out, fmt.Errorf("copy pod %s/%s ended (%s) before its script did: %s", m.Spec.Namespace, name, pod.Status.Phase, lastLines(raw, 20))
	case out.Exit != 0:
		return out, fmt.Errorf("the copy failed: rsync exited with status %d in pod %s/%s: %s", out.Exit, m.Spec.Namespace, name, lastLines(raw, 20))
	case mode == modeFinal && !out.Verified:
		return out, fmt.Errorf("copy pod %s/%s did not verify the copy", m.Spec.Namespace, name)
	case len(out.Differs) > 0:
		return out, fmt.Errorf("verifying the copy failed: %d entries differ from the source after the copy (rsync --checksum): %s", len(out.Differs), strings.Join(firstN(out.Differs, 20), "; "))
	}
	return out, nil
}

// started reports whether a pod's container runs or ran: its log can be read.
func started(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning || kube.PodFinished(p)
}

// waitPod waits until the copy pod is as until wants (what names it for errors), failing on a
// container that cannot start and on a pod that stays unschedulable for unschedulableFor.
func (m *Migrator) waitPod(ctx context.Context, name string, pod *corev1.Pod, what string, until func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var unschedulableSince time.Time
	return kube.WaitFor(ctx, m.Client.CoreV1().Pods(m.Spec.Namespace), name, pod,
		kube.Wait{What: "copy pod " + m.Spec.Namespace + "/" + name + " to " + what, Timeout: time.Until(deadline(ctx)), Recheck: 2 * time.Second},
		func(p *corev1.Pod) (bool, string, error) {
			if p == nil {
				return false, "", fmt.Errorf("copy pod %s/%s was deleted while it ran", m.Spec.Namespace, name)
			}
			if until(p) {
				return true, "", nil
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					switch w.Reason {
					case "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "ImagePullBackOff", "ErrImagePull":
						return false, "", fmt.Errorf("the copy container cannot start: %s: %s (attribute image: an image with rsync 3.x and sh the nodes can get)", w.Reason, w.Message)
					}
				}
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					if unschedulableSince.IsZero() {
						unschedulableSince = time.Now()
					}
					if time.Since(unschedulableSince) > unschedulableFor {
						return false, "", fmt.Errorf("copy pod %s/%s cannot be scheduled: %s. Without target_node the new volume must be on a node that can mount the source too; "+
							"set target_node to the node the new volume is to be on to copy between nodes over the network", m.Spec.Namespace, name, strings.TrimSuffix(c.Message, "."))
					}
					return false, "unschedulable: " + c.Message, nil
				}
			}
			unschedulableSince = time.Time{}
			return false, "phase " + string(p.Status.Phase), nil
		})
}

// followLog reads a copy pod's log as it is written, until the script's last line (marker's
// exit status). whole is false when the stream ended or failed before that line (the connection
// was lost, the container was killed, the log outgrew maxLogBytes).
func (m *Migrator) followLog(ctx context.Context, name, marker string) (log string, whole bool) {
	limit := maxLogBytes
	stream, err := m.Client.CoreV1().Pods(m.Spec.Namespace).GetLogs(name, &corev1.PodLogOptions{Follow: true, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		m.log("following the copy pod's log failed; waiting for the pod to finish", map[string]any{"pod": name, "error": err.Error()})
		return "", false
	}
	defer stream.Close() //nolint:errcheck // read only; closing ends the request
	var b strings.Builder
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	last := marker + " exit "
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
		if strings.HasPrefix(sc.Text(), last) {
			return b.String(), true
		}
	}
	return b.String(), false
}

// explain adds the events of the copy pod and of the new claim to an error.
func (m *Migrator) explain(ctx context.Context, err error, pod, claim string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var b strings.Builder
	b.WriteString(err.Error())
	for _, o := range []struct{ kind, name string }{{"Pod", pod}, {"PersistentVolumeClaim", claim}} {
		if events := kube.EventsFor(ctx, m.Client, m.Spec.Namespace, o.kind, o.name); len(events) > 0 {
			fmt.Fprintf(&b, "\n\nEvents of %s %s/%s:\n  %s", strings.ToLower(o.kind), m.Spec.Namespace, o.name, strings.Join(events, "\n  "))
		}
	}
	return fmt.Errorf("%s", b.String())
}

// deletePod deletes a copy pod and waits until it is gone.
func (m *Migrator) deletePod(ctx context.Context, name string) error {
	pods := m.Client.CoreV1().Pods(m.Spec.Namespace)
	zero := int64(0)
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting copy pod %s/%s: %w", m.Spec.Namespace, name, err)
	}
	_, err := kube.WaitFor(ctx, pods, name, nil, kube.Wait{What: "copy pod " + m.Spec.Namespace + "/" + name + " to be deleted", Timeout: cleanupTimeout},
		func(p *corev1.Pod) (bool, string, error) { return p == nil, "it still exists", nil })
	return err
}

// heartbeat renews AnnotationHeartbeat on the pod until the returned function is called.
func (m *Migrator) heartbeat(ctx context.Context, pod string) (stop func()) {
	return kube.Heartbeat(ctx, AnnotationHeartbeat, func(ctx context.Context, patch []byte) error {
		_, err := m.Client.CoreV1().Pods(m.Spec.Namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}, func(err error) {
		m.log("renewing the copy pod's heartbeat failed; trying again", map[string]any{"pod": pod, "error": err.Error()})
	})
}

// stale reports whether a copy pod's heartbeat stopped: its provider is gone.
func stale(meta metav1.ObjectMeta, now time.Time) bool {
	return kube.HeartbeatStopped(meta, AnnotationHeartbeat, now)
}

// sweep removes the copy pods in the namespace whose provider is gone (their heartbeat stopped),
// so that their mounts do not hold the claims. Problems are logged: the run goes on.
func (m *Migrator) sweep(ctx context.Context) {
	pods, err := m.Client.CoreV1().Pods(m.Spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelComponent + "=" + component + "," + labelManagedBy + "=" + managedBy})
	if err != nil {
		m.log("listing copy pods left by killed runs failed", map[string]any{"error": err.Error()})
		return
	}
	for _, p := range pods.Items {
		if stale(p.ObjectMeta, time.Now()) {
			m.log("removing a copy pod a killed run left", map[string]any{"pod": p.Name})
			if err := m.deletePod(ctx, p.Name); err != nil {
				m.log("removing a copy pod a killed run left failed", map[string]any{"pod": p.Name, "error": err.Error()})
			}
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}
