package volumemigration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	sshnode "github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "terraform-provider-clusterstorage"
	labelComponent = "app.kubernetes.io/component"
	component      = "volume-migration"
	// pollInterval is how often a condition without a watch (no pod mounts the claim) is read.
	pollInterval = 250 * time.Millisecond
	// rollbackTimeout bounds a rollback, which runs after the apply's own context ended.
	rollbackTimeout = 5 * time.Minute
)

// bindingAnnotations are the annotations the controllers set on a claim when it is bound; the
// claim made again on the new volume does not carry them over.
var bindingAnnotations = []string{
	"pv.kubernetes.io/bind-completed",
	"pv.kubernetes.io/bound-by-controller",
	"volume.beta.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
	corev1.BetaStorageClassAnnotation,
	AnnotationProgress,
}

// Spec is what to migrate: the plain form of the resource's plan.
type Spec struct {
	Namespace, Claim, StorageClass string
	// Size of the new volume; nil for the source's.
	Size         *resource.Quantity
	DeleteSource bool
	Image        string
	PullPolicy   string
	HostNetwork  bool
	// Resources are the copy pods' requests and limits.
	Resources corev1.ResourceRequirements
	// CopyXattrs copies and verifies extended attributes and ACLs too (rsync -X -A).
	CopyXattrs bool
	// ControllersPaused says the user paused the actors that drive the workload's replica count
	// (Argo CD or Flux self-heal, KEDA, an operator): the plan does not refuse them. The apply
	// still checks, before the swap, that nothing started the workload again.
	ControllersPaused bool
	// TargetNode, when set, is the node the new volume is to be on: the copy's pods run there
	// (a WaitForFirstConsumer class provisions it there), between nodes when the source is
	// pinned to another (crossnode.go).
	TargetNode string
	// Transfer is cross_node_transfer: how a copy between nodes goes (transferAuto when empty;
	// crossnode_ssh.go).
	Transfer string
	// Volume, when set, is the existing volume to move the claim onto in place of a new volume
	// of StorageClass (then that volume's class): the restore of restore_on_destroy, onto the
	// source volume a migration kept (RestoreSpec makes it).
	Volume string
}

// Result is what a finished migration reports.
type Result struct {
	SourceVolume, TargetVolume string
	Files, Bytes               int64
	// Downtime is the seconds the workload was stopped.
	Downtime   float64
	MigratedAt time.Time
	// SourceDeleted is set when the source volume is gone (delete_source).
	SourceDeleted bool
	// XattrFiles is how many files had extended attributes or ACLs that were not copied
	// (without CopyXattrs, as the first copy found them).
	XattrFiles int64
}

// Migrator runs one migration.
type Migrator struct {
	Client kubernetes.Interface
	Spec   Spec
	// Log receives progress messages (tflog in the provider).
	Log func(msg string, fields map[string]any)
	// Now is the clock (tests set it).
	Now func() time.Time
	// Measure, when set, measures the filesystem holding path on the node named node (over SSH,
	// the nearest existing ancestor when path does not exist yet): the room of a hostPath
	// class's base path. Without it (the provider has no ssh block) that room is not checked.
	Measure func(ctx context.Context, node, path string) (capacity.Filesystem, error)
	// Hosts, when set, reaches a node over SSH (the provider's ssh block): a copy between nodes
	// whose volumes both have a path on their node can then go over SSH (crossnode_ssh.go).
	Hosts func(ctx context.Context, node string) (*sshnode.Host, error)
	// killAt, in tests, stops the run as a killed provider would, right after the progress of
	// that phase is recorded on the claim: no rollback, nothing cleaned up.
	killAt phase
	// killAfterDelete, in tests, stops the run the same way once the source claim is deleted,
	// before it is made again; killAfterCopy once the copy made while the workload runs is done
	// and the owners to stop are recorded, before any is stopped.
	killAfterDelete, killAfterCopy bool
	// killInCrossCopy, in tests, stops the run the same way in the first copy between nodes,
	// once its daemon and client pods run: both pods and the Secret are left; killInCrossFinal
	// in the final copy (the delta and the verification), the workload stopped.
	killInCrossCopy, killInCrossFinal bool
	// killInSSH, in tests, stops the run the same way in the copy over SSH of that mode, once
	// its daemon listens: the daemon and its directory are left on the target node.
	killInSSH string
	// forwardedBytes counts the bytes the copies over SSH carried through the provider (tests).
	forwardedBytes int64
}

// errKilled is what a run stopped by killAt returns.
var errKilled = errors.New("stopped as if the provider was killed (test)")

func (m *Migrator) log(msg string, fields map[string]any) {
	if m.Log != nil {
		if fields == nil {
			fields = map[string]any{}
		}
		fields["claim"] = m.ref()
		m.Log(msg, fields)
	}
}

func (m *Migrator) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Migrator) ref() string { return m.Spec.Namespace + "/" + m.Spec.Claim }

func (m *Migrator) claims() typedClaims {
	return m.Client.CoreV1().PersistentVolumeClaims(m.Spec.Namespace)
}

type typedClaims = interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error)
	Create(ctx context.Context, c *corev1.PersistentVolumeClaim, opts metav1.CreateOptions) (*corev1.PersistentVolumeClaim, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.PersistentVolumeClaim, error)
}

// Observe reads what the checks need and what an earlier run recorded: the claim (nil when it
// does not exist), the progress recorded on it or on its new volume, the target class, the
// workloads that mount the claim.
func (m *Migrator) Observe(ctx context.Context) (planInput, error) {
	in := planInput{Namespace: m.Spec.Namespace, ClaimName: m.Spec.Claim, StorageClass: m.Spec.StorageClass, Volume: m.Spec.Volume}
	claim, err := m.claims().Get(ctx, m.Spec.Claim, metav1.GetOptions{})
	switch {
	case kube.IsNotFound(err):
	case err != nil:
		return in, fmt.Errorf("reading claim %s: %w", m.ref(), err)
	default:
		in.Claim = claim
		if in.Progress, err = progressOf(claim.Annotations); err != nil {
			return in, fmt.Errorf("claim %s: %w", m.ref(), err)
		}
		if !in.Progress.belongsTo(claim) {
			m.log("ignoring a migration record of another claim of this name (its UID differs): a new migration", map[string]any{"record": in.Progress.value()})
			in.Progress = progress{}
		}
	}
	if in.Claim == nil || in.Progress.Phase == phaseNone || in.Progress.Phase == phaseStopped {
		// From the swap on, the new volume may know more than the claim (or the claim is gone).
		pvp, err := m.volumeProgress(ctx, in.Claim, in.Progress)
		if err != nil {
			return in, err
		}
		in.Progress = further(in.Progress, pvp)
	}
	if in.Progress.Phase == phaseDone && (in.Claim == nil || volumes.ClassOf(in.Claim) != m.Spec.StorageClass || m.movesOn(ctx, in.Claim)) {
		in.Progress = progress{} // migrated once, moved on since: a new migration
	}
	classes, err := m.Client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("listing StorageClasses: %w", err)
	}
	for i := range classes.Items {
		in.Classes = append(in.Classes, classes.Items[i].Name)
		if classes.Items[i].Name == m.Spec.StorageClass {
			in.Class = &classes.Items[i]
		}
	}
	sort.Strings(in.Classes)
	inv, err := volumes.Scan(ctx, m.Client, m.Spec.Namespace)
	if err != nil {
		return in, fmt.Errorf("namespace %s: %w", m.Spec.Namespace, err)
	}
	// The migration's own pods (a killed run's copy pods, not stale yet, which the copy removes
	// before it makes its own) are not workloads to stop.
	inv.Pods = slices.DeleteFunc(inv.Pods, func(p corev1.Pod) bool {
		return p.Labels[labelComponent] == component && p.Labels[labelManagedBy] == managedBy
	})
	in.Workloads = inv.Mounting(m.Spec.Namespace, m.Spec.Claim)
	if in.TargetNode = m.Spec.TargetNode; in.TargetNode != "" && in.Progress.Phase == phaseNone {
		nodes, err := m.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return in, fmt.Errorf("listing the nodes: %w", err)
		}
		for _, n := range nodes.Items {
			in.Nodes = append(in.Nodes, n.Name)
			in.TargetNodeFound = in.TargetNodeFound || n.Name == in.TargetNode
		}
		sort.Strings(in.Nodes)
	}
	in.ControllersPaused = m.Spec.ControllersPaused
	if in.Progress.Phase == phaseNone && in.Claim != nil {
		if err := m.observeActors(ctx, inv, &in); err != nil {
			return in, err
		}
	}
	if in.Class != nil && in.Claim != nil && in.Progress.Phase == phaseNone && in.Volume == "" {
		if err := m.observeRoom(ctx, &in); err != nil {
			return in, err
		}
	}
	return in, nil
}

// copyNode is the node the copy pod must run on while the workload runs: the one node of the
// one workload that mounts the claim (a ReadWriteOnce volume mounts a second time only there);
// "" when the scheduler may choose.
func copyNode(ws []volumes.Workload) string {
	if len(ws) == 1 && len(ws[0].Nodes) == 1 {
		return ws[0].Nodes[0]
	}
	return ""
}

// nodeNamed is the name of the node whose kubernetes.io/hostname label is hostname ("" when
// none, or hostname is "").
func (m *Migrator) nodeNamed(ctx context.Context, hostname string) string {
	if hostname == "" {
		return ""
	}
	nodes, err := m.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: volumes.HostnameLabel + "=" + hostname})
	if err != nil || len(nodes.Items) != 1 {
		return ""
	}
	return nodes.Items[0].Name
}

// volumeProgress finds the progress recorded on a volume for this claim (from the swap on): claim
// is the claim (nil when it does not exist) and onClaim the record on it; a volume's record that
// belongs to another migration (volumeRecordBelongs) is ignored.
func (m *Migrator) volumeProgress(ctx context.Context, claim *corev1.PersistentVolumeClaim, onClaim progress) (progress, error) {
	pvs, err := m.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return progress{}, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	var found progress
	for i := range pvs.Items {
		p, err := progressOf(pvs.Items[i].Annotations)
		if err != nil || p.Claim != m.ref() || p.TargetVolume != pvs.Items[i].Name {
			continue
		}
		if !volumeRecordBelongs(p, claim, onClaim) {
			m.log("ignoring a migration record on a volume: it belongs to a migration that was rolled back or to another claim of this name", map[string]any{"volume": pvs.Items[i].Name})
			continue
		}
		found = further(found, p)
	}
	return found, nil
}

// Check returns the problems the plan checks find, as one error, or nil.
func Check(in planInput) error {
	problems := checkPlan(in)
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// Run migrates the claim, resuming what an earlier run recorded. A failure before the swap
// undoes what this run and the recorded ones did (the new claim removed, the owners scaled
// back); a failure from the swap on leaves the progress recorded for the next run to finish.
func (m *Migrator) Run(ctx context.Context) (Result, error) {
	m.sweep(ctx)
	in, err := m.Observe(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := Check(in); err != nil {
		return Result{}, err
	}
	p := in.Progress
	if p.Phase == phaseDone {
		m.log("the claim was migrated already; adopting it", map[string]any{"source_volume": p.SourceVolume})
		return m.finish(ctx, p)
	}
	if p.Phase != phaseNone {
		m.log("resuming a migration an earlier run left", map[string]any{"phase": string(p.Phase)})
	}
	if p.Phase.beforeSwap() {
		p, err = m.beforeSwap(ctx, in.Claim, p, in.Workloads)
		if errors.Is(err, errKilled) {
			return Result{}, err
		}
		if err != nil {
			return Result{}, m.rolledBack(ctx, p, err)
		}
	}
	if p.Phase == phaseSwapping {
		var nq *notQuietError
		if p, err = m.swap(ctx, p); errors.Is(err, errKilled) {
			return Result{}, err
		} else if errors.As(err, &nq) {
			// Something started the workload after the verification, before the claim was
			// deleted: the copy may lack its writes, so the swap is given up.
			return Result{}, m.rolledBack(ctx, p, err)
		} else if err != nil {
			return Result{}, fmt.Errorf("%w\n\nThe copy was verified while nothing else mounted the claim, and the progress is recorded (annotation %s on the claim and on volume %s): apply again to finish the swap", err, AnnotationProgress, p.TargetVolume)
		}
	}
	if p.Phase == phaseStarting {
		if p, err = m.startOwners(ctx, p); err != nil {
			return Result{}, fmt.Errorf("%w\n\nThe claim is on the new volume %s; apply again to start the workload and finish", err, p.TargetVolume)
		}
	}
	return m.finish(ctx, p)
}

// beforeSwap copies while the workload runs, stops it, copies the delta and verifies. It returns
// the progress in phaseSwapping, or the last progress recorded and an error.
func (m *Migrator) beforeSwap(ctx context.Context, claim *corev1.PersistentVolumeClaim, p progress, ws []volumes.Workload) (progress, error) {
	var err error
	if p.Phase == phaseNone {
		p = progress{Phase: phaseCopying, Claim: m.ref(), ClaimUID: claim.UID, StorageClass: m.Spec.StorageClass, SourceClass: volumes.ClassOf(claim),
			TargetClaim: targetClaimName(claim), SourceVolume: claim.Spec.VolumeName}
		if err = m.recordOnClaim(ctx, p); err != nil {
			return progress{}, err
		}
	}
	if p.Phase == phaseCopying {
		// Before anything else changes: from here on nothing can delete the source's data, not
		// a StatefulSet that deletes its claims at a scale-down, not a claim deleted by anyone.
		// The policy it had is recorded on it and given back by a rollback or after the swap.
		if err = m.retain(ctx, p.SourceVolume); err != nil {
			return p, err
		}
	}
	if err = m.ensureTargetClaim(ctx, claim, p); err != nil {
		return p, err
	}
	if p.Phase == phaseCopying && p.Owners == nil {
		if readWriteOncePod(claim) {
			m.log("the claim is ReadWriteOncePod: no copy while the workload runs", nil)
		} else {
			node := copyNode(ws)
			m.log("copying while the workload runs", map[string]any{"target_claim": p.TargetClaim, "node": node})
			out, err := m.copyData(ctx, modeCopy, p, node, node)
			if err != nil {
				return p, err
			}
			p.Files += out.Files
			p.Bytes += out.Bytes
			if out.XattrFiles > 0 {
				p.XattrFiles = out.XattrFiles
				m.log("files with extended attributes or ACLs are copied without them (copy_xattrs = false)", map[string]any{"files": out.XattrFiles})
			}
		}
		if p.Owners, err = m.owners(ctx, ws); err != nil {
			return p, err
		}
		// Recorded before anything is scaled: a run killed while scaling knows what to restore.
		if err = m.recordOnClaim(ctx, p); err != nil {
			return p, err
		}
		if m.killAfterCopy {
			return p, errKilled
		}
	}
	if p.Phase == phaseCopying {
		for _, o := range p.Owners {
			m.log("stopping the workload", map[string]any{"kind": o.Kind, "name": o.Name, "replicas": o.Replicas})
			if err = m.stop(ctx, o); err != nil {
				return p, err
			}
		}
		now := m.now()
		p.StoppedAt = &now
		if p, err = p.to(phaseStopped); err != nil {
			return p, err
		}
		if err = m.recordOnClaim(ctx, p); err != nil {
			return p, err
		}
	}
	if err = m.waitUnmounted(ctx, p.Owners); err != nil {
		return p, err
	}
	m.log("copying the delta and verifying the copy", map[string]any{"target_claim": p.TargetClaim})
	out, err := m.copyData(ctx, modeFinal, p, "", "")
	if err != nil {
		return p, err
	}
	p.Files += out.Files
	p.Bytes += out.Bytes
	// The copy is verified: it is the source as it was while nothing ran. Still so?
	if err = m.checkQuiet(ctx, p.Owners); err != nil {
		return p, err
	}
	target, err := m.claims().Get(ctx, p.TargetClaim, metav1.GetOptions{})
	if err != nil {
		return p, fmt.Errorf("reading the new claim %s/%s: %w", m.Spec.Namespace, p.TargetClaim, err)
	}
	if target.Spec.VolumeName == "" {
		return p, fmt.Errorf("the new claim %s/%s is not bound after the copy", m.Spec.Namespace, p.TargetClaim)
	}
	p.TargetVolume = target.Spec.VolumeName
	live, err := m.claims().Get(ctx, m.Spec.Claim, metav1.GetOptions{})
	if err != nil {
		return p, fmt.Errorf("reading claim %s: %w", m.ref(), err)
	}
	tmpl, err := claimTemplate(live, target)
	if err != nil {
		return p, err
	}
	swapping, err := p.to(phaseSwapping)
	if err != nil {
		return p, err
	}
	// The new volume first: from here on it is where the progress survives the claim's deletion.
	if err = m.annotateVolume(ctx, p.TargetVolume, map[string]*string{AnnotationProgress: ptr(swapping.value()), AnnotationClaim: &tmpl}); err != nil {
		return p, err
	}
	if err = m.recordOnClaim(ctx, swapping); err != nil {
		return p, err
	}
	return swapping, nil
}

// swap keeps both volumes (Retain), deletes the new claim and the source claim, and makes the
// claim again bound to the new volume. Every step checks what is already done, so a run killed
// anywhere in it is finished by the next.
func (m *Migrator) swap(ctx context.Context, p progress) (progress, error) {
	for _, pv := range []string{p.SourceVolume, p.TargetVolume} {
		if err := m.retain(ctx, pv); err != nil {
			return p, err
		}
	}
	if err := m.deleteClaim(ctx, p.TargetClaim, ""); err != nil {
		return p, err
	}
	claim, err := m.claims().Get(ctx, m.Spec.Claim, metav1.GetOptions{})
	switch {
	case kube.IsNotFound(err):
		claim = nil
	case err != nil:
		return p, fmt.Errorf("reading claim %s: %w", m.ref(), err)
	}
	if claim != nil && claim.Spec.VolumeName != p.TargetVolume {
		// The last check before the step that cannot be undone: once the claim is being
		// deleted, no pod can start on it (the kubelet refuses a claim being deleted).
		if err := m.checkQuiet(ctx, p.Owners); err != nil {
			return p, err
		}
		m.log("deleting the claim (its volume is kept: Retain)", map[string]any{"volume": claim.Spec.VolumeName})
		if err := m.deleteClaim(ctx, m.Spec.Claim, claim.UID); err != nil {
			return p, err
		}
		if m.killAfterDelete {
			return p, errKilled
		}
		claim = nil
	}
	if claim == nil {
		pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, p.TargetVolume, metav1.GetOptions{})
		if err != nil {
			return p, fmt.Errorf("reading the new volume %s: %w", p.TargetVolume, err)
		}
		var tmpl corev1.PersistentVolumeClaim
		if err := json.Unmarshal([]byte(pv.Annotations[AnnotationClaim]), &tmpl); err != nil {
			return p, fmt.Errorf("volume %s: annotation %s does not hold the claim to make again: %v", p.TargetVolume, AnnotationClaim, err)
		}
		// Reserve the volume for the claim by name: without the old claim's UID the volume
		// controller binds it to the claim made next.
		if _, err := m.reserve(ctx, p.TargetVolume, m.Spec.Claim); err != nil {
			return p, err
		}
		tmpl.Namespace, tmpl.Name = m.Spec.Namespace, m.Spec.Claim
		tmpl.Spec.VolumeName = p.TargetVolume
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		tmpl.Annotations[AnnotationProgress] = p.value()
		m.log("making the claim again on the new volume", map[string]any{"volume": p.TargetVolume})
		if _, err := m.claims().Create(ctx, &tmpl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return p, fmt.Errorf("making claim %s again on volume %s: %w", m.ref(), p.TargetVolume, err)
		}
	}
	_, err = kube.WaitFor(ctx, m.Client.CoreV1().PersistentVolumeClaims(m.Spec.Namespace), m.Spec.Claim, nil,
		kube.Wait{What: "claim " + m.ref() + " to bind to volume " + p.TargetVolume, Timeout: time.Until(deadline(ctx))},
		func(c *corev1.PersistentVolumeClaim) (bool, string, error) {
			if c == nil {
				return false, "", fmt.Errorf("claim %s was deleted while it was being bound", m.ref())
			}
			if c.Spec.VolumeName != p.TargetVolume {
				return false, "", fmt.Errorf("claim %s names volume %q, not the new volume %s: something else made it; delete it and apply again", m.ref(), c.Spec.VolumeName, p.TargetVolume)
			}
			return c.Status.Phase == corev1.ClaimBound, "phase " + string(c.Status.Phase), nil
		})
	if err != nil {
		return p, err
	}
	starting, err := p.to(phaseStarting)
	if err != nil {
		return p, err
	}
	if err := m.annotateVolume(ctx, p.TargetVolume, map[string]*string{AnnotationProgress: ptr(starting.value())}); err != nil {
		return p, err
	}
	if err := m.recordOnClaim(ctx, starting); err != nil {
		return p, err
	}
	return starting, nil
}

// startOwners gives the new volume its reclaim policy back, marks the source volume, deletes it with
// delete_source, scales the owners back and waits for them to be Ready.
func (m *Migrator) startOwners(ctx context.Context, p progress) (progress, error) {
	if err := m.restorePolicy(ctx, p.TargetVolume); err != nil {
		return p, err
	}
	if err := m.annotateVolume(ctx, p.SourceVolume, map[string]*string{AnnotationMigratedTo: ptr(m.ref() + " " + p.TargetVolume)}); err != nil && !kube.IsNotFound(err) {
		return p, err
	}
	var started []owner
	for _, o := range p.Owners {
		ok, err := m.start(ctx, o)
		if err != nil {
			return p, fmt.Errorf("starting the workload again: %w", err)
		}
		if ok {
			m.log("started the workload again", map[string]any{"kind": o.Kind, "name": o.Name, "replicas": o.Replicas})
			started = append(started, o)
		} else {
			m.log("the workload stays stopped: migrations of its other claims are under way; the last one starts it", map[string]any{"kind": o.Kind, "name": o.Name})
		}
	}
	for _, o := range started {
		if err := m.waitReady(ctx, o); err != nil {
			return p, err
		}
	}
	now := m.now()
	if p.StoppedAt != nil {
		p.Downtime = now.Sub(*p.StoppedAt).Seconds()
	}
	p.MigratedAt = &now
	done, err := p.to(phaseDone)
	if err != nil {
		return p, err
	}
	if err := m.recordOnClaim(ctx, done); err != nil {
		return p, err
	}
	if err := m.annotateVolume(ctx, p.TargetVolume, map[string]*string{AnnotationProgress: nil, AnnotationClaim: nil}); err != nil {
		return done, err
	}
	return done, nil
}

// finish deletes the source volume when asked and reports the result.
func (m *Migrator) finish(ctx context.Context, p progress) (Result, error) {
	r := Result{SourceVolume: p.SourceVolume, TargetVolume: p.TargetVolume, Files: p.Files, Bytes: p.Bytes, Downtime: p.Downtime, XattrFiles: p.XattrFiles}
	if p.MigratedAt != nil {
		r.MigratedAt = *p.MigratedAt
	}
	if m.Spec.Volume != "" {
		return r, m.finishRestore(ctx, p)
	}
	if m.Spec.DeleteSource {
		if err := DeleteSource(ctx, m.Client, p.SourceVolume, m.ref(), m.log); err != nil {
			return r, err
		}
		r.SourceDeleted = true
	}
	return r, nil
}

// DeleteSource removes the source volume a migration of claim (<namespace>/<name>) kept: its
// reclaim policy before the migration is restored, so a volume that was Delete is removed by
// its provisioner with its data (waited for, until ctx's deadline); one that was Retain has its
// PersistentVolume object deleted and its data left where it is, as Retain says. A volume already
// gone is deleted.
func DeleteSource(ctx context.Context, client kubernetes.Interface, pvName, claim string, log func(string, map[string]any)) error {
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if kube.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the source volume %s: %w", pvName, err)
	}
	if to := pv.Annotations[AnnotationMigratedTo]; !strings.HasPrefix(to, claim+" ") {
		return fmt.Errorf("volume %s is not the kept source of a migration of %s (its annotation %s is %q): not deleting it", pvName, claim, AnnotationMigratedTo, to)
	}
	if ref := pv.Spec.ClaimRef; ref != nil && pv.Status.Phase == corev1.VolumeBound {
		return fmt.Errorf("volume %s is bound to claim %s/%s again: not deleting it", pvName, ref.Namespace, ref.Name)
	}
	policy := corev1.PersistentVolumeReclaimPolicy(pv.Annotations[AnnotationReclaimPolicy])
	if policy == corev1.PersistentVolumeReclaimDelete {
		log("deleting the source volume through its provisioner (reclaim policy Delete restored)", map[string]any{"volume": pvName})
		patch := fmt.Appendf(nil, `{"spec":{"persistentVolumeReclaimPolicy":"Delete"},"metadata":{"annotations":{%q:null}}}`, AnnotationReclaimPolicy)
		_, err = client.CoreV1().PersistentVolumes().Patch(ctx, pvName, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !kube.IsNotFound(err) {
			return fmt.Errorf("restoring reclaim policy Delete on the source volume %s: %w", pvName, err)
		}
		// Waited for: a backend's destroy guard in the same apply (Longhorn removed once its
		// volumes are gone) must not find it still there.
		return kube.Poll(ctx, 500*time.Millisecond, time.Until(deadline(ctx)), "the provisioner to delete the source volume "+pvName,
			func(ctx context.Context) (bool, string, error) {
				pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
				switch {
				case kube.IsNotFound(err):
					return true, "", nil
				case err != nil:
					return false, "", err
				case pv.Status.Phase == corev1.VolumeFailed:
					return false, "", fmt.Errorf("the source volume %s could not be deleted by its provisioner (phase Failed: %s); its claim is on the new volume, nothing else was changed", pvName, pv.Status.Message)
				}
				return false, "phase " + string(pv.Status.Phase), nil
			})
	}
	log("deleting the source volume object (its reclaim policy was Retain: the data stays on the backend)", map[string]any{"volume": pvName})
	if err := client.CoreV1().PersistentVolumes().Delete(ctx, pvName, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
		return fmt.Errorf("deleting the source volume %s: %w", pvName, err)
	}
	// Waited for as the Delete case is: the object goes once the pv-protection controller has
	// taken its finalizer off, and a backend's guard in the same apply must not find it.
	return kube.Poll(ctx, 250*time.Millisecond, time.Until(deadline(ctx)), "the source volume "+pvName+" to be deleted",
		func(ctx context.Context) (bool, string, error) {
			_, err := client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
			if kube.IsNotFound(err) {
				return true, "", nil
			}
			if err != nil {
				return kube.KeepPolling(err)
			}
			return false, "it still exists", nil
		})
}

// rollback undoes a migration before the source claim is deleted: the copy pods and the new
// claim removed (the new volume first given back its reclaim policy and cleared of the records,
// so nothing later takes it for a copy in progress), the owners scaled back to their recorded
// counts, the source volume given back its reclaim policy, the progress removed from the claim.
// It runs on a context of its own: the apply's may have ended.
func (m *Migrator) rollback(ctx context.Context, p progress) error {
	if p.Phase == phaseNone {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	m.log("rolling back", map[string]any{"phase": string(p.Phase)})
	var errs []error
	for _, mode := range []string{modeCopy, modeFinal} {
		errs = append(errs, m.deletePod(ctx, copyPodName(p.TargetClaim, mode)), m.deletePod(ctx, daemonPodName(p.TargetClaim, mode)))
	}
	errs = append(errs, m.deleteRsyncSecret(ctx, p.TargetClaim))
	if p.TargetVolume != "" {
		// A restore's target is the kept source of the migration before, whose recorded
		// policy is that migration's to give back: only a volume made for this run gets its own.
		if m.Spec.Volume == "" {
			if err := m.restorePolicy(ctx, p.TargetVolume); err != nil && !kube.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		err := m.annotateVolume(ctx, p.TargetVolume, map[string]*string{AnnotationProgress: nil, AnnotationClaim: nil})
		if err != nil && !kube.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, m.deleteClaim(ctx, p.TargetClaim, ""))
	for _, o := range p.Owners {
		if _, err := m.start(ctx, o); err != nil {
			errs = append(errs, fmt.Errorf("starting the workload again: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p.SourceVolume != "" {
		if err := m.restorePolicy(ctx, p.SourceVolume); err != nil && !kube.IsNotFound(err) {
			return err
		}
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, AnnotationProgress)
	if _, err := m.claims().Patch(ctx, m.Spec.Claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !kube.IsNotFound(err) {
		return fmt.Errorf("removing the progress from claim %s: %w", m.ref(), err)
	}
	return nil
}

// rolledBack rolls back after err and returns the error to report: err, then what the rollback
// did and what was checked afterwards, so the message says "untouched" only where the claim
// and its volume were read back as they were.
func (m *Migrator) rolledBack(ctx context.Context, p progress, err error) error {
	if rbErr := m.rollback(ctx, p); rbErr != nil {
		return fmt.Errorf("%w\n\nRolling back failed too: %v. The progress stays recorded on the claim (annotation %s) and the source volume %s keeps reclaim policy Retain; "+
			"the next apply resumes or rolls back from the record", err, rbErr, AnnotationProgress, p.SourceVolume)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	return fmt.Errorf("%w\n\nRolled back: the new claim removed, the workload scaled back. %s%s", err, m.checkSource(ctx, p), m.targetLeft(ctx, p))
}

// targetLeft says what a rollback left of the new volume when its reclaim policy keeps it (a
// static local volume, a class with reclaim Retain): Released, with a partial copy of the claim's
// data, so the next apply needs another free volume of the class, or this one made free again.
// A restore's target is the kept source of the migration before, which stays as it was.
func (m *Migrator) targetLeft(ctx context.Context, p progress) string {
	if p.TargetVolume == "" || m.Spec.Volume != "" {
		return ""
	}
	pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, p.TargetVolume, metav1.GetOptions{})
	if err != nil || pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
		return ""
	}
	return fmt.Sprintf(" The new volume %s stays (reclaim policy %s), Released, with a partial copy of the claim's data: the next apply needs a free volume "+
		"of class %s again. To use %s again, empty it and remove its claimRef (kubectl patch pv %s --type json -p '[{\"op\":\"remove\",\"path\":\"/spec/claimRef\"}]').",
		pv.Name, pv.Spec.PersistentVolumeReclaimPolicy, m.Spec.StorageClass, pv.Name, pv.Name)
}

// checkSource reads the claim and its volume after a rollback and says what it found.
func (m *Migrator) checkSource(ctx context.Context, p progress) string {
	claim, err := m.claims().Get(ctx, m.Spec.Claim, metav1.GetOptions{})
	switch {
	case kube.IsNotFound(err):
		return fmt.Sprintf("Checked afterwards: claim %s is GONE: something else deleted it during the migration. Its volume %s was set to reclaim policy Retain "+
			"before anything else, so it keeps the data (Released): make a claim bound to it (spec.volumeName %s, after clearing the volume's claimRef) to get the data back.",
			m.ref(), p.SourceVolume, p.SourceVolume)
	case err != nil:
		return fmt.Sprintf("The claim could not be read back to check it (%v): look at claim %s and volume %s before applying again.", err, m.ref(), p.SourceVolume)
	case p.ClaimUID != "" && claim.UID != p.ClaimUID:
		return fmt.Sprintf("Checked afterwards: claim %s is not the claim the migration began with (its UID changed: something deleted it and made it again) and is bound to %q. "+
			"The source volume %s was kept (Retain) with its data.", m.ref(), claim.Spec.VolumeName, p.SourceVolume)
	case claim.Spec.VolumeName != p.SourceVolume:
		return fmt.Sprintf("Checked afterwards: claim %s is bound to %q, not to its volume %s: look at both before applying again.", m.ref(), claim.Spec.VolumeName, p.SourceVolume)
	}
	pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, p.SourceVolume, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("Checked afterwards: claim %s is still bound to volume %s, which could not be read (%v).", m.ref(), p.SourceVolume, err)
	}
	return fmt.Sprintf("Checked afterwards: claim %s (the same claim) is bound to its volume %s, which exists (reclaim policy %s); applying again starts the migration over.",
		m.ref(), p.SourceVolume, pv.Spec.PersistentVolumeReclaimPolicy)
}

// targetInfix is in the name of every temporary claim.
const targetInfix = "-migrating-"

// targetClaimName is the temporary claim's name: the claim's, shortened, and a hash of its UID.
func targetClaimName(c *corev1.PersistentVolumeClaim) string {
	sum := sha256.Sum256([]byte(string(c.UID)))
	name := c.Name
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-.")
	}
	return name + targetInfix + hex.EncodeToString(sum[:])[:8]
}

// ensureTargetClaim creates the new claim on the target class unless it exists.
func (m *Migrator) ensureTargetClaim(ctx context.Context, source *corev1.PersistentVolumeClaim, p progress) error {
	_, err := m.claims().Get(ctx, p.TargetClaim, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !kube.IsNotFound(err) {
		return fmt.Errorf("reading the new claim %s/%s: %w", m.Spec.Namespace, p.TargetClaim, err)
	}
	if source == nil {
		return fmt.Errorf("claim %s is gone before its copy", m.ref())
	}
	size := sourceSize(source)
	if m.Spec.Size != nil {
		size = *m.Spec.Size
	}
	class := m.Spec.StorageClass
	if m.Spec.Volume != "" {
		// A restore: the new claim is bound by name to the kept volume, reserved for it first.
		pv, err := m.reserve(ctx, m.Spec.Volume, p.TargetClaim)
		if err != nil {
			return err
		}
		size = pv.Spec.Capacity[corev1.ResourceStorage]
	}
	vac, err := m.attributesClass(ctx, source)
	if err != nil {
		return err
	}
	fs := corev1.PersistentVolumeFilesystem
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.TargetClaim, Namespace: m.Spec.Namespace,
			Labels:      map[string]string{labelManagedBy: managedBy, labelComponent: component},
			Annotations: map[string]string{AnnotationMigratedTo: m.ref()},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      source.Spec.AccessModes,
			VolumeMode:       &fs,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeName:       m.Spec.Volume,
			// The source's, where the target's driver is the one it is for.
			VolumeAttributesClassName: vac,
		},
	}
	m.log("creating the new claim", map[string]any{"target_claim": p.TargetClaim, "storage_class": class, "size": size.String()})
	if _, err := m.claims().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the new claim %s/%s on StorageClass %s: %w", m.Spec.Namespace, p.TargetClaim, class, err)
	}
	return nil
}

// attributesClass is the source claim's VolumeAttributesClass when it is for the driver of the
// target class (the new volume then gets the same attributes), nil otherwise (logged: the class
// of another driver would make the new claim fail).
func (m *Migrator) attributesClass(ctx context.Context, source *corev1.PersistentVolumeClaim) (*string, error) {
	name := source.Spec.VolumeAttributesClassName
	if name == nil || *name == "" || m.Spec.Volume != "" {
		return nil, nil
	}
	vac, err := m.Client.StorageV1().VolumeAttributesClasses().Get(ctx, *name, metav1.GetOptions{})
	if err != nil {
		if kube.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading VolumeAttributesClass %s of claim %s: %w", *name, m.ref(), err)
	}
	class, err := m.Client.StorageV1().StorageClasses().Get(ctx, m.Spec.StorageClass, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading StorageClass %s: %w", m.Spec.StorageClass, err)
	}
	if vac.DriverName != class.Provisioner {
		m.log("the claim's VolumeAttributesClass is for another driver; the new volume gets none", map[string]any{"volume_attributes_class": *name, "driver": vac.DriverName, "provisioner": class.Provisioner})
		return nil, nil
	}
	return name, nil
}

// sourceSize is the size of the source: its bound capacity, else its request.
func sourceSize(c *corev1.PersistentVolumeClaim) resource.Quantity {
	if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		return q
	}
	return c.Spec.Resources.Requests[corev1.ResourceStorage]
}

func readWriteOncePod(c *corev1.PersistentVolumeClaim) bool {
	for _, a := range c.Spec.AccessModes {
		if a == corev1.ReadWriteOncePod {
			return true
		}
	}
	return false
}

// claimTemplate is the claim to make again on the new volume (JSON): the source claim's labels,
// annotations (not the binding ones), owner references (but a pod's: a pod that owns a claim
// is one a StatefulSet condemned, and the garbage collector would delete the new claim with it),
// finalizers, access modes, and the new claim's class, request and volume attributes class.
func claimTemplate(source, target *corev1.PersistentVolumeClaim) (string, error) {
	annotations := maps.Clone(source.Annotations)
	for _, k := range bindingAnnotations {
		delete(annotations, k)
	}
	var owners []metav1.OwnerReference
	for _, o := range source.OwnerReferences {
		if o.Kind != "Pod" {
			owners = append(owners, o)
		}
	}
	t := corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: source.Name, Namespace: source.Namespace,
			Labels: maps.Clone(source.Labels), Annotations: annotations,
			OwnerReferences: owners, Finalizers: slices.Clone(source.Finalizers),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName:          target.Spec.StorageClassName,
			AccessModes:               source.Spec.AccessModes,
			VolumeMode:                target.Spec.VolumeMode,
			Resources:                 target.Spec.Resources,
			VolumeAttributesClassName: target.Spec.VolumeAttributesClassName,
		},
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("recording claim %s/%s: %w", source.Namespace, source.Name, err)
	}
	return string(b), nil
}

// reserve points a volume's claimRef at the claim named claim in the namespace, by name only,
// so the volume controller binds it to the claim of that name made next (and to no other). It
// returns the volume.
func (m *Migrator) reserve(ctx context.Context, name, claim string) (*corev1.PersistentVolume, error) {
	var out *corev1.PersistentVolume
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading volume %s: %w", name, err)
		}
		out = pv
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == m.Spec.Namespace && ref.Name == claim {
			return nil // reserved already, or bound to that claim
		}
		pv.Spec.ClaimRef = &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: m.Spec.Namespace, Name: claim}
		if out, err = m.Client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("reserving volume %s for claim %s/%s: %w", name, m.Spec.Namespace, claim, err)
		}
		return nil
	})
	return out, err
}

// recordOnClaim writes the progress on the claim.
func (m *Migrator) recordOnClaim(ctx context.Context, p progress) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationProgress: p.value()}}})
	if err != nil {
		return err
	}
	if _, err := m.claims().Patch(ctx, m.Spec.Claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("recording the migration's progress (%s) on claim %s: %w", p.Phase, m.ref(), err)
	}
	m.log("progress recorded on the claim", map[string]any{"phase": string(p.Phase)})
	if m.killAt != phaseNone && m.killAt == p.Phase {
		return errKilled
	}
	return nil
}

// annotateVolume sets (nil: removes) annotations of a volume.
func (m *Migrator) annotateVolume(ctx context.Context, pv string, annotations map[string]*string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if _, err := m.Client.CoreV1().PersistentVolumes().Patch(ctx, pv, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotating volume %s: %w", pv, err)
	}
	return nil
}

// retain sets a volume's reclaim policy to Retain, recording the one it had (once).
func (m *Migrator) retain(ctx context.Context, name string) error {
	pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading volume %s: %w", name, err)
	}
	if _, recorded := pv.Annotations[AnnotationReclaimPolicy]; recorded && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain {
		return nil
	}
	before := string(pv.Spec.PersistentVolumeReclaimPolicy)
	if recorded, ok := pv.Annotations[AnnotationReclaimPolicy]; ok {
		before = recorded
	}
	m.log("keeping the volume: reclaim policy Retain", map[string]any{"volume": name, "was": before})
	patch := fmt.Appendf(nil, `{"spec":{"persistentVolumeReclaimPolicy":"Retain"},"metadata":{"annotations":{%q:%q}}}`, AnnotationReclaimPolicy, before)
	if _, err := m.Client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting reclaim policy Retain on volume %s: %w", name, err)
	}
	return nil
}

// restorePolicy gives a volume back the reclaim policy retain recorded.
func (m *Migrator) restorePolicy(ctx context.Context, name string) error {
	pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading volume %s: %w", name, err)
	}
	before, ok := pv.Annotations[AnnotationReclaimPolicy]
	if !ok {
		return nil
	}
	patch := fmt.Appendf(nil, `{"spec":{"persistentVolumeReclaimPolicy":%q},"metadata":{"annotations":{%q:null}}}`, before, AnnotationReclaimPolicy)
	if _, err := m.Client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("restoring reclaim policy %s on volume %s: %w", before, name, err)
	}
	return nil
}

// deleteClaim deletes a claim (only the one with uid, when set) and waits until it is gone.
func (m *Migrator) deleteClaim(ctx context.Context, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	if err := m.claims().Delete(ctx, name, opts); err != nil {
		if kube.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting claim %s/%s: %w", m.Spec.Namespace, name, err)
	}
	_, err := kube.WaitFor(ctx, m.Client.CoreV1().PersistentVolumeClaims(m.Spec.Namespace), name, nil,
		kube.Wait{What: "claim " + m.Spec.Namespace + "/" + name + " to be deleted", Timeout: time.Until(deadline(ctx))},
		func(c *corev1.PersistentVolumeClaim) (bool, string, error) {
			if c == nil || (uid != "" && c.UID != uid) {
				return true, "", nil
			}
			return false, "it still exists (a pod still uses it?)", nil
		})
	return err
}

// waitUnmounted waits until no pod that has not finished mounts the claim, but the copy pods.
// An owner the migration stopped that asks for replicas again (something scaled it back) fails
// the wait at once, naming it, instead of waiting for pods that keep coming back.
func (m *Migrator) waitUnmounted(ctx context.Context, owners []owner) error {
	return kube.Poll(ctx, pollInterval, time.Until(deadline(ctx)), "the workload's pods to stop using claim "+m.ref(), func(ctx context.Context) (bool, string, error) {
		pods, err := m.mountingPods(ctx)
		if err != nil {
			return kube.KeepPolling(err)
		}
		if len(pods) == 0 {
			return true, "", nil
		}
		if back, err := m.ownersBack(ctx, owners); err != nil {
			return kube.KeepPolling(err)
		} else if len(back) > 0 {
			return false, "", &notQuietError{found: back}
		}
		names := make([]string, 0, len(pods))
		for _, p := range pods {
			names = append(names, p.Name)
		}
		return false, "pods still using it: " + strings.Join(names, ", "), nil
	})
}

// mountingPods are the pods that have not finished and mount the claim, but the copy pods.
func (m *Migrator) mountingPods(ctx context.Context) ([]corev1.Pod, error) {
	pods, err := m.Client.CoreV1().Pods(m.Spec.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", m.Spec.Namespace, err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if kube.PodFinished(&p) || p.Labels[labelComponent] == component {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == m.Spec.Claim {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}

// deadline is ctx's deadline, or an hour from now.
func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}

func ptr[T any](v T) *T { return &v }
