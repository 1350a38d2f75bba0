package benchmark

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const (
	mountPath     = "/data"
	containerName = "fio"
	// runDirPrefix begins the directory each run works in, inside the volume or node_path.
	runDirPrefix = ".clusterstorage-benchmark-"
	// cleanupTimeout bounds deleting and waiting for what a run created, after the run's own
	// context has ended.
	cleanupTimeout = 2 * time.Minute
	// podGrace is the pod's termination grace period: time for the script to stop fio and remove
	// its directory when the pod is deleted early.
	podGrace     = int64(10)
	pollInterval = 100 * time.Millisecond
	// maxLogBytes bounds the fio output read from the pod's log: fio's JSON for the largest job
	// this provider renders is far below it.
	maxLogBytes = int64(8 << 20)
	// eventsInterval is how often a waiting pod's events are read for failures that repeat.
	eventsInterval = 2 * time.Second
	// sandboxFailures and pullFailures are how often the same sandbox or image pull failure must
	// repeat for the pod to count as one that can never start.
	sandboxFailures = 3
	pullFailures    = 2
)

// podScript runs in the fio container: it makes the run directory ($1), runs fio with the
// arguments after $2, and removes the directory whatever happens, also when the pod is deleted
// while fio runs (SIGTERM). fio's JSON goes to stdout, its messages to stderr: both reach the
// pod's log. Once fio has exited and the directory is gone, it prints its end line, "$2 <fio's
// exit status>": the provider reads the log as it is written and is done at that line, without
// waiting for the kubelet to notice that the container exited (its relist of the containers runs
// once a second, and the pod's phase follows later still; DEVELOPMENT.md has the measurements).
const podScript = `dir=$1; end=$2; shift 2
if ! command -v fio >/dev/null 2>&1; then
	echo "fio: not found on the PATH of this image; use an image with fio 3.x and sh (attribute image)" >&2
	exit 127
fi
mkdir -p "$dir" || exit 1
pid=
trap 'if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null; wait "$pid"; fi; rm -rf "$dir"; exit 143' TERM INT
fio "$@" &
pid=$!
wait "$pid"
rc=$?
rm -rf "$dir"
printf '%s %s\n' "$end" "$rc"
exit "$rc"`

// podRun is one fio run in a pod on a volume: a temporary claim of a storage class, or an
// existing claim.
type podRun struct {
	Client kubernetes.Interface
	Target Target
	// Hostname is the kubernetes.io/hostname label of Target.Node; "" when the pod is not pinned.
	Hostname    string
	Spec        fio.Spec
	Image       string
	PullPolicy  string
	HostNetwork bool
	// RunID names the pod and claim (clusterstorage-benchmark-<RunID>) and labels them.
	RunID string
	// Log receives progress messages.
	Log func(msg string, fields map[string]any)
}

func (r podRun) name() string { return "clusterstorage-benchmark-" + r.RunID }

// endMarker begins podScript's end line. It carries the run's random ID, so fio's output cannot
// hold it.
func (r podRun) endMarker() string { return "clusterstorage-benchmark-end-" + r.RunID }

func (r podRun) labels() map[string]string {
	return map[string]string{labelManagedBy: managedBy, labelComponent: "benchmark", LabelRun: r.RunID}
}

func (r podRun) claimName() string {
	if r.Target.Kind == TargetClaim {
		return r.Target.Name
	}
	return r.name()
}

func (r podRun) log(msg string, fields map[string]any) {
	if r.Log != nil {
		r.Log(msg, fields)
	}
}

// claim is the temporary claim of a storage_class run.
func (r podRun) claim() *corev1.PersistentVolumeClaim {
	class := r.Target.Name
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: r.name(), Namespace: r.Target.Namespace, Labels: r.labels()},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: r.Target.VolumeSize,
			}},
		},
	}
}

// containerSecurity is the fio container's securityContext: no privilege escalation, a
// read-only root filesystem, the runtime's default seccomp profile, and every capability
// dropped but CAP_DAC_OVERRIDE, which root in the container needs to make its run directory in
// a volume owned by another user (an application's claim). fio itself needs none: O_DIRECT,
// libaio and io_uring work without capabilities.
func containerSecurity() *corev1.SecurityContext {
	no, yes := false, true
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		Privileged:               &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"DAC_OVERRIDE"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// pod is the fio pod: args are fio's arguments, runDir the directory fio works in, expires the
// AnnotationExpires value. activeDeadline (seconds) makes the kubelet stop the pod at the run's
// deadline even when the provider that made it is gone.
func (r podRun) pod(args []string, runDir, expires string, activeDeadline int64) *corev1.Pod {
	grace := podGrace
	noToken := false
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: r.name(), Namespace: r.Target.Namespace, Labels: r.labels(), Annotations: map[string]string{AnnotationExpires: expires, AnnotationHeartbeat: kube.HeartbeatValue(time.Now())}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			HostNetwork:                   r.HostNetwork,
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &activeDeadline,
			AutomountServiceAccountToken:  &noToken,
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           r.Image,
				ImagePullPolicy: corev1.PullPolicy(r.PullPolicy),
				Command:         append([]string{"sh", "-c", podScript, "sh", runDir, r.endMarker()}, args...),
				VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: mountPath}},
				SecurityContext: containerSecurity(),
			}},
			Volumes: []corev1.Volume{{
				Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: r.claimName(),
				}},
			}},
		},
	}
	if r.Hostname != "" {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{r.Hostname},
				}}}},
			},
		}}
	}
	return p
}

// Run creates the claim (storage_class) and the pod together, waits for the pod to finish, and
// returns its log: fio's JSON and messages. Whatever happens, including ctx ending, the pod and
// claim are deleted and waited for before Run returns (with a context of their own); a cleanup
// problem is returned as cleanupErr, separately from the run's error.
func (r podRun) Run(ctx context.Context) (out []byte, runErr, cleanupErr error) {
	runDir := mountPath + "/" + runDirPrefix + r.RunID
	args, err := fio.Args(r.Spec, runDir)
	if err != nil {
		return nil, err, nil
	}
	ns := r.Target.Namespace
	created := &cleanup{client: r.Client, namespace: ns, log: r.log}
	defer func() { cleanupErr = created.run(ctx) }()

	// The claim and the pod go in together: a WaitForFirstConsumer class binds the claim only
	// once a pod that uses it is scheduled.
	if r.Target.Kind == TargetStorageClass {
		r.log("creating the benchmark claim", map[string]any{"namespace": ns, "name": r.name(), "storage_class": r.Target.Name, "size": r.Target.VolumeSize.String()})
		// Recorded before the call: a request cut short by ctx may still have created it.
		created.claim = r.claim()
		created.claim.Annotations = map[string]string{AnnotationExpires: expiresAt(ctx), AnnotationHeartbeat: kube.HeartbeatValue(time.Now())}
		pvc, err := r.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, created.claim, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating claim %s/%s: %w", ns, r.name(), err), nil
		}
		created.claim = pvc
	}
	r.log("creating the fio pod", map[string]any{"namespace": ns, "name": r.name(), "image": r.Image, "claim": r.claimName(), "fio_args": strings.Join(args, " ")})
	created.pod = r.name()
	pod, err := r.createPod(ctx, r.pod(args, runDir, expiresAt(ctx), max(int64(time.Until(deadline(ctx))/time.Second), 1)))
	if err != nil {
		return nil, err, nil
	}
	// Deferred after the cleanup, so it stops first.
	stopHeartbeat := r.heartbeat(ctx, created.claim != nil)
	defer stopHeartbeat()

	pod, err = r.wait(ctx, pod, "to start", started)
	if err != nil {
		return nil, r.explain(err), nil
	}
	if pod.Status.Phase == corev1.PodRunning {
		if out, status, ok := r.follow(ctx); ok {
			r.log("fio finished (the script's end line is in the log)", map[string]any{"name": r.name(), "exit_status": status, "log_bytes": len(out)})
			if status != 0 {
				return out, r.failed(out, fmt.Sprintf("fio exited with status %d", status)), nil
			}
			return out, nil, nil
		}
	}
	// The end line never came (the container was stopped, the stream broke): the pod's phase
	// and its whole log say how the run ended.
	if pod, err = r.wait(ctx, pod, "to finish", kube.PodFinished); err != nil {
		return nil, r.explain(err), nil
	}
	out, err = r.readLog(ctx)
	if err != nil {
		return nil, err, nil
	}
	fields := map[string]any{"name": r.name(), "phase": string(pod.Status.Phase), "log_bytes": len(out), "pod_created": pod.CreationTimestamp.UTC().Format(time.RFC3339)}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			// Where the time went: the container's own start and end, as the node saw them.
			fields["container_started"] = t.StartedAt.UTC().Format(time.RFC3339)
			fields["container_finished"] = t.FinishedAt.UTC().Format(time.RFC3339)
		}
	}
	r.log("fio pod finished", fields)
	if pod.Status.Phase == corev1.PodFailed {
		return out, r.failed(out, terminated(pod)), nil
	}
	return out, nil, nil
}

// heartbeat renews AnnotationHeartbeat on the run's pod (and claim, withClaim) every
// kube.HeartbeatInterval until the returned function is called, which waits for it to stop. A
// renewal that fails (the API server restarting) is logged and tried again at the next tick.
func (r podRun) heartbeat(ctx context.Context, withClaim bool) (stop func()) {
	ns := r.Target.Namespace
	return kube.Heartbeat(ctx, AnnotationHeartbeat, func(ctx context.Context, patch []byte) error {
		_, err := r.Client.CoreV1().Pods(ns).Patch(ctx, r.name(), types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil && withClaim {
			_, err = r.Client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, r.name(), types.MergePatchType, patch, metav1.PatchOptions{})
		}
		return err
	}, func(err error) {
		r.log("renewing the run's heartbeat failed; trying again", map[string]any{"name": r.name(), "error": err.Error()})
	})
}

// failed is the error of a run whose fio exited with an error (how says how): fio's own message
// when the log has one, for the parser to find.
func (r podRun) failed(out []byte, how string) error {
	if _, perr := fio.Parse(out); perr != nil {
		return perr
	}
	return fmt.Errorf("pod %s/%s failed (%s) although fio reported results: %s", r.Target.Namespace, r.name(), how, lastLines(out, 20))
}

// follow reads the fio container's log as it is written, until podScript's end line. It returns
// the log before that line and fio's exit status; ok is false when the log ended or broke
// without it (the container was stopped, the API server restarted, the log outgrew
// maxLogBytes).
func (r podRun) follow(ctx context.Context) (out []byte, status int, ok bool) {
	limit := maxLogBytes + 1
	stream, err := r.Client.CoreV1().Pods(r.Target.Namespace).GetLogs(r.name(), &corev1.PodLogOptions{Container: containerName, Follow: true, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		r.log("cannot follow the fio pod's log; waiting for the pod to finish", map[string]any{"name": r.name(), "error": err.Error()})
		return nil, 0, false
	}
	defer stream.Close() //nolint:errcheck // read to the end line or to its failure either way.
	return endLine(bufio.NewReader(stream), r.endMarker())
}

// endLine reads lines from log until one holds marker followed by an exit status, and returns
// what came before the marker and that status.
func endLine(log *bufio.Reader, marker string) (out []byte, status int, ok bool) {
	var buf bytes.Buffer
	for {
		line, err := log.ReadBytes('\n')
		if i := bytes.Index(line, []byte(marker+" ")); i >= 0 {
			if status, convErr := strconv.Atoi(strings.TrimSpace(string(line[i+len(marker)+1:]))); convErr == nil {
				buf.Write(line[:i])
				return buf.Bytes(), status, true
			}
		}
		buf.Write(line)
		if err != nil {
			return nil, 0, false
		}
	}
}

// readLog reads the finished fio container's whole log.
func (r podRun) readLog(ctx context.Context) ([]byte, error) {
	ns := r.Target.Namespace
	var out []byte
	err := kube.Poll(ctx, pollInterval, 30*time.Second, "the log of pod "+ns+"/"+r.name(), func(ctx context.Context) (bool, string, error) {
		limit := maxLogBytes + 1
		var err error
		out, err = r.Client.CoreV1().Pods(ns).GetLogs(r.name(), &corev1.PodLogOptions{Container: containerName, LimitBytes: &limit}).DoRaw(ctx)
		if ended(ctx) || kube.Transient(err) {
			return false, fmt.Sprint(err), nil
		}
		if err != nil {
			return false, "", err
		}
		return true, "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the log of pod %s/%s: %w", ns, r.name(), err)
	}
	if int64(len(out)) > maxLogBytes {
		return nil, fmt.Errorf("the log of pod %s/%s is larger than %d MiB, more than fio's JSON output can be: the image's fio or sh prints something else", ns, r.name(), maxLogBytes>>20)
	}
	return out, nil
}

func started(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning || kube.PodFinished(p)
}

// createPod creates the pod. In a namespace made moments ago the ServiceAccount admission refuses
// pods until the namespace's default ServiceAccount exists: that refusal is retried until ctx ends.
func (r podRun) createPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	ns := r.Target.Namespace
	var created *corev1.Pod
	err := kube.Poll(ctx, pollInterval, time.Until(deadline(ctx)), "the default ServiceAccount of namespace "+ns, func(ctx context.Context) (bool, string, error) {
		p, err := r.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case err == nil:
			created = p
			return true, "", nil
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "serviceaccount") && strings.Contains(err.Error(), "not found"):
			return false, err.Error(), nil
		default:
			return false, "", err
		}
	})
	if err != nil || created == nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", ns, r.name(), err)
	}
	return created, nil
}

// wait watches the pod, from the version last, until done holds for it (it started, or
// finished), or ctx ends. A pod that can never start (an image the node cannot get, a sandbox
// that keeps failing) ends the wait at once.
func (r podRun) wait(ctx context.Context, last *corev1.Pod, what string, done func(*corev1.Pod) bool) (*corev1.Pod, error) {
	ns := r.Target.Namespace
	lastPhase := corev1.PodPhase("")
	nextEvents := time.Now().Add(eventsInterval)
	pod, err := kube.WaitFor(ctx, r.Client.CoreV1().Pods(ns), r.name(), last,
		kube.Wait{What: "pod " + ns + "/" + r.name() + " " + what, Timeout: time.Until(deadline(ctx)), Recheck: eventsInterval},
		func(p *corev1.Pod) (bool, string, error) {
			if p == nil {
				return false, "", fmt.Errorf("pod %s/%s was deleted while fio ran", ns, r.name())
			}
			if p.Status.Phase != lastPhase {
				lastPhase = p.Status.Phase
				r.log("fio pod phase", map[string]any{"name": r.name(), "phase": string(p.Status.Phase), "node": p.Spec.NodeName})
			}
			if done(p) {
				return true, "", nil
			}
			if p.Status.Phase == corev1.PodPending && time.Now().After(nextEvents) {
				nextEvents = time.Now().Add(eventsInterval)
				if err := r.cannotStart(ctx); err != nil {
					return false, "", err
				}
				r.sweepWhileWaiting(ctx)
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					switch w.Reason {
					case "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError":
						return false, "", fmt.Errorf("the fio container cannot start: %s: %s", w.Reason, w.Message)
					}
				}
			}
			return false, pendingReason(p), nil
		})
	if pod == nil {
		pod = last
	}
	return pod, err
}

// sweepWhileWaiting sweeps the namespace again while this run's pod waits: a run killed just
// before this one started still had a fresh heartbeat at the sweep before it, and may hold the
// only volume of a class of static volumes. Once its heartbeat is stale it is removed (its claim
// with it, so its volume is Available again and this run's claim binds). Problems are logged:
// the wait goes on, and its error names the runs that hold volumes (holders).
func (r podRun) sweepWhileWaiting(ctx context.Context) {
	if r.Target.Kind != TargetStorageClass {
		return
	}
	done, err := sweep(ctx, r.Client, r.Target.Namespace, time.Now(), r.log)
	if len(done) > 0 {
		r.log("removed what a killed run left while this run waited", map[string]any{"runs": strings.Join(done, "; ")})
	}
	if err != nil {
		r.log("sweeping while waiting failed", map[string]any{"error": err.Error()})
	}
}

// holders names the other runs of the namespace whose claims on the run's class are bound (they
// hold a volume this run's claim may be waiting for), with how long ago each one's heartbeat was
// renewed: alive, or about to be swept.
func (r podRun) holders(ctx context.Context) []string {
	sel := metav1.ListOptions{LabelSelector: LabelRun + "," + labelManagedBy + "=" + managedBy}
	claims, err := r.Client.CoreV1().PersistentVolumeClaims(r.Target.Namespace).List(ctx, sel)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range claims.Items {
		if c.Labels[LabelRun] == r.RunID || c.Spec.VolumeName == "" || c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != r.Target.Name {
			continue
		}
		beat := "no heartbeat"
		if t, err := time.Parse(time.RFC3339Nano, c.Annotations[AnnotationHeartbeat]); err == nil {
			beat = fmt.Sprintf("its heartbeat renewed %s ago", time.Since(t).Round(time.Second))
		}
		out = append(out, fmt.Sprintf("run %s holds volume %s with claim %s (%s; a run whose heartbeat is older than %s is removed by the next run)",
			c.Labels[LabelRun], c.Spec.VolumeName, c.Name, beat, kube.HeartbeatStale))
	}
	return out
}

// cannotStart reads the pod's events and returns an error when they show it can never start: the
// same sandbox failure sandboxFailures times, or the same image pull failure pullFailures times
// (the kubelet would retry with back-off until the read times out).
func (r podRun) cannotStart(ctx context.Context) error {
	sel := "involvedObject.kind=Pod,involvedObject.name=" + r.name()
	list, err := r.Client.CoreV1().Events(r.Target.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil //nolint:nilerr // events are a hint; the wait goes on without them
	}
	// The pod's name is its run's own, so every event of that name is about this pod.
	counts := map[string]int32{}
	for _, e := range list.Items {
		n := max(e.Count, 1)
		if e.Series != nil {
			n = max(n, e.Series.Count)
		}
		key := e.Reason + "\x00" + e.Message
		switch {
		case e.Reason == "FailedCreatePodSandBox":
			if counts[key] += n; counts[key] >= sandboxFailures {
				return fmt.Errorf("the fio pod cannot start: its sandbox failed %d times: %s", counts[key], e.Message)
			}
		case e.Reason == "Failed" && strings.HasPrefix(e.Message, "Failed to pull image"):
			if counts[key] += n; counts[key] >= pullFailures {
				return fmt.Errorf("the fio container cannot start: its image could not be pulled (%d times): %s; "+
					"set image to an image the nodes can pull (fio 3.x and sh), or image_pull_policy", counts[key], e.Message)
			}
		}
	}
	return nil
}

// ended reports whether ctx was cancelled or timed out: a request that failed then is not a
// failure of its own, and the poll around it reports why it stopped.
func ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// deadline returns ctx's deadline, or an hour from now when it has none.
func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}

// pendingReason says why a pod is not running yet: unscheduled, or a container waiting.
func pendingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return fmt.Sprintf("pod is %s: %s: %s", p.Status.Phase, c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("container is waiting: %s: %s", w.Reason, w.Message)
		}
	}
	if p.Status.Phase != "" {
		return "pod is " + string(p.Status.Phase)
	}
	return ""
}

// explain adds the events of the pod and the claim to a failed wait.
func (r podRun) explain(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	b.WriteString(err.Error())
	add := func(kind, name string) {
		events := kube.EventsFor(ctx, r.Client, r.Target.Namespace, kind, name)
		if len(events) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n\nEvents of %s %s/%s:\n  %s", strings.ToLower(kind), r.Target.Namespace, name, strings.Join(events, "\n  "))
	}
	add("Pod", r.name())
	add("PersistentVolumeClaim", r.claimName())
	if r.Target.Kind == TargetStorageClass {
		if pvc, gerr := r.Client.CoreV1().PersistentVolumeClaims(r.Target.Namespace).Get(ctx, r.name(), metav1.GetOptions{}); gerr == nil {
			fmt.Fprintf(&b, "\n\nThe claim was %s.", pvc.Status.Phase)
			if pvc.Status.Phase == corev1.ClaimPending {
				if held := r.holders(ctx); len(held) > 0 {
					fmt.Fprintf(&b, " Other benchmark runs hold volumes of StorageClass %s: %s.", r.Target.Name, strings.Join(held, "; "))
				}
			}
		}
	}
	return errors.New(b.String())
}

func terminated(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("exit code %d, %s", t.ExitCode, t.Reason)
		}
	}
	return string(p.Status.Phase)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cleanup deletes what a run created and waits until it is gone.
type cleanup struct {
	client    kubernetes.Interface
	namespace string
	log       func(string, map[string]any)
	pod       string
	claim     *corev1.PersistentVolumeClaim
}

// run deletes the pod and the claim, and waits for both to be gone, with a context that outlives
// ctx (which may have been cancelled or timed out). The claim's pvc-protection finalizer keeps it
// until the pod is gone. A statically provisioned volume the claim bound is made Available again;
// a dynamically provisioned one with reclaim policy Delete is waited for until its provisioner
// deleted it.
func (c *cleanup) run(ctx context.Context) error {
	if c.pod == "" && c.claim == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	pods := c.client.CoreV1().Pods(c.namespace)
	claims := c.client.CoreV1().PersistentVolumeClaims(c.namespace)
	var errs []error
	if c.pod != "" {
		c.log("deleting the fio pod", map[string]any{"namespace": c.namespace, "name": c.pod})
		errs = append(errs, c.delete(ctx, "pod", c.pod, func(ctx context.Context) error {
			return pods.Delete(ctx, c.pod, metav1.DeleteOptions{})
		}))
	}
	pvName := "" // the volume the claim bound, if any, read before the claim goes
	if c.claim != nil {
		name := c.claim.Name
		_ = kube.Poll(ctx, pollInterval, 30*time.Second, "claim "+name, func(ctx context.Context) (bool, string, error) { //nolint:errcheck // without it the volume is only not released
			pvc, err := claims.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return kube.IsNotFound(err), err.Error(), nil
			}
			pvName = pvc.Spec.VolumeName
			c.claim = pvc
			return true, "", nil
		})
		c.log("deleting the benchmark claim", map[string]any{"namespace": c.namespace, "name": name, "volume": pvName})
		errs = append(errs, c.delete(ctx, "claim", name, func(ctx context.Context) error {
			return claims.Delete(ctx, name, metav1.DeleteOptions{})
		}))
	}
	if c.pod != "" {
		errs = append(errs, gone(ctx, pods, c.pod, "pod "+c.namespace+"/"+c.pod))
	}
	if c.claim != nil {
		errs = append(errs, gone(ctx, claims, c.claim.Name, "claim "+c.namespace+"/"+c.claim.Name))
		if pvName != "" {
			errs = append(errs, c.releaseVolume(ctx, pvName))
		}
	}
	return errors.Join(errs...)
}

// delete deletes an object, repeating the request while it fails transiently (an API server
// restarting) until the cleanup deadline. An object already gone is deleted.
func (c *cleanup) delete(ctx context.Context, kind, name string, del func(context.Context) error) error {
	return kube.Poll(ctx, pollInterval, cleanupTimeout, "deleting "+kind+" "+c.namespace+"/"+name, func(ctx context.Context) (bool, string, error) {
		switch err := del(ctx); {
		case err == nil || kube.IsNotFound(err):
			return true, "", nil
		case kube.Transient(err):
			return kube.KeepPolling(err)
		default:
			return false, "", fmt.Errorf("deleting %s %s/%s: %w", kind, c.namespace, name, err)
		}
	})
}

// gone watches an object the cleanup deleted until it is gone (what names it for errors).
func gone[T kube.Object](ctx context.Context, client kube.Watched[T], name, what string) error {
	var zero T
	_, err := kube.WaitFor(ctx, client, name, zero, kube.Wait{What: what + " to be deleted", Timeout: cleanupTimeout},
		func(obj T) (bool, string, error) {
			return obj == zero, "it still exists", nil
		})
	return err
}

// releaseVolume deals with the volume the temporary claim bound, once the claim is gone: a static
// volume (no provisioned-by annotation) that was Released with reclaim policy Retain gets its
// claim reference removed, so it is Available again, as it was before the run; a volume with
// reclaim policy Delete is waited for until its provisioner removed it.
func (c *cleanup) releaseVolume(ctx context.Context, pvName string) error {
	claimUID := c.claim.UID
	// Recheck: an update that failed transiently is tried again without waiting for a change.
	_, err := kube.WaitFor(ctx, c.client.CoreV1().PersistentVolumes(), pvName, nil,
		kube.Wait{What: "volume " + pvName + " to be released", Timeout: cleanupTimeout, Recheck: time.Second},
		func(pv *corev1.PersistentVolume) (bool, string, error) {
			if pv == nil {
				return true, "", nil
			}
			if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != claimUID {
				return true, "", nil // bound to someone else now, or already Available
			}
			switch {
			case pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
				return false, "waiting for the provisioner to delete it (phase " + string(pv.Status.Phase) + ")", nil
			case pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain && pv.Annotations["pv.kubernetes.io/provisioned-by"] == "":
				if pv.Status.Phase != corev1.VolumeReleased {
					return false, "phase " + string(pv.Status.Phase), nil
				}
				available := pv.DeepCopy()
				available.Spec.ClaimRef = nil
				_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, available, metav1.UpdateOptions{})
				switch {
				case apierrors.IsConflict(err) || kube.Transient(err):
					return false, "making it Available again: " + err.Error(), nil // the next version, or the recheck, tries again
				case err != nil:
					return false, "", fmt.Errorf("making volume %s Available again: %w", pvName, err)
				}
				c.log("made the static volume Available again", map[string]any{"volume": pvName})
				return true, "", nil
			default:
				// A dynamically provisioned volume kept by its Retain policy: leave it to its owner.
				c.log("the benchmark claim's volume is retained by its reclaim policy", map[string]any{"volume": pvName})
				return true, "", nil
			}
		})
	return err
}
