package benchmark

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

const defaultNamespace = "default"

// Model is the configuration and state of clusterstorage_storage_benchmark. A data source that
// runs the same benchmark on targets of its own builds one per target, from the parts it shares
// (TargetModel, PodModel, JobModel), to validate and fill them as the benchmark does.
type Model struct {
	ID types.String `tfsdk:"id"`

	TargetModel
	PodModel
	JobModel

	Rounds         types.Int64    `tfsdk:"rounds"`
	MaxAge         types.String   `tfsdk:"max_age"`
	IncludeRawJSON types.Bool     `tfsdk:"include_raw_json"`
	Timeouts       timeouts.Value `tfsdk:"timeouts"`

	Cached types.Bool `tfsdk:"cached"`
	IOResultModel
	FioVersion     types.String  `tfsdk:"fio_version"`
	RuntimeSeconds types.Float64 `tfsdk:"runtime_seconds"`
	MeasuredAt     types.String  `tfsdk:"measured_at"`
	Summary        types.String  `tfsdk:"summary"`
	Spread         *SpreadModel  `tfsdk:"spread"`
	RawJSON        types.String  `tfsdk:"raw_json"`
}

// TargetModel is where fio runs: the target attributes (storage_class, claim, node_path, node,
// namespace, volume_size).
type TargetModel struct {
	StorageClass types.String `tfsdk:"storage_class"`
	Claim        types.String `tfsdk:"claim"`
	NodePath     types.String `tfsdk:"node_path"`
	Node         types.String `tfsdk:"node"`
	Namespace    types.String `tfsdk:"namespace"`
	VolumeSize   types.String `tfsdk:"volume_size"`
}

// PodModel is the settings of the pod fio runs in: image, image_pull_policy, host_network.
type PodModel struct {
	Image           types.String `tfsdk:"image"`
	ImagePullPolicy types.String `tfsdk:"image_pull_policy"`
	HostNetwork     types.Bool   `tfsdk:"host_network"`
}

// JobModel is the settings of the fio job: the profile and the attributes that override it.
type JobModel struct {
	Profile   types.String `tfsdk:"profile"`
	BlockSize types.String `tfsdk:"block_size"`
	RW        types.String `tfsdk:"rw"`
	RWMixRead types.Int64  `tfsdk:"rw_mix_read"`
	IODepth   types.Int64  `tfsdk:"io_depth"`
	NumJobs   types.Int64  `tfsdk:"num_jobs"`
	Size      types.String `tfsdk:"size"`
	Runtime   types.String `tfsdk:"runtime"`
	RampTime  types.String `tfsdk:"ramp_time"`
	Direct    types.Bool   `tfsdk:"direct"`
	IOEngine  types.String `tfsdk:"ioengine"`
	Fsync     types.Int64  `tfsdk:"fsync"`
}

// IOResultModel is what fio measured: the read, write, sync and cpu attributes.
type IOResultModel struct {
	Read  *ioModel   `tfsdk:"read"`
	Write *ioModel   `tfsdk:"write"`
	Sync  *syncModel `tfsdk:"sync"`
	CPU   *cpuModel  `tfsdk:"cpu"`
}

type ioModel struct {
	IOPS                    float64       `tfsdk:"iops"`
	BandwidthBytesPerSecond float64       `tfsdk:"bandwidth_bytes_per_second"`
	LatencyUS               *latencyModel `tfsdk:"latency_us"`
}

type syncModel struct {
	Count     int64         `tfsdk:"count"`
	LatencyUS *latencyModel `tfsdk:"latency_us"`
}

type latencyModel struct {
	Mean float64 `tfsdk:"mean"`
	P50  float64 `tfsdk:"p50"`
	P95  float64 `tfsdk:"p95"`
	P99  float64 `tfsdk:"p99"`
	P999 float64 `tfsdk:"p99_9"`
	Max  float64 `tfsdk:"max"`
}

type cpuModel struct {
	UserPercent   float64 `tfsdk:"user_percent"`
	SystemPercent float64 `tfsdk:"system_percent"`
}

// TargetKind says where fio runs.
type TargetKind string

// The kinds of target, named as their attributes.
const (
	// TargetStorageClass is a temporary claim of a storage class, mounted by a fio pod.
	TargetStorageClass TargetKind = "storage_class"
	// TargetClaim is an existing claim, mounted by a fio pod.
	TargetClaim TargetKind = "claim"
	// TargetNodePath is a directory on a node, where fio runs over SSH.
	TargetNodePath TargetKind = "node_path"
)

// Target is the validated "where" of a benchmark, in plain Go.
type Target struct {
	Kind      TargetKind
	Name      string // the storage class, the claim or the node path
	Node      string // optional for pods, required for node_path
	Namespace string
	// VolumeSize is the temporary claim's request (storage_class only).
	VolumeSize k8sresource.Quantity
}

// String describes the target for messages, e.g. `storage class "local" (namespace default)`.
func (t Target) String() string {
	var s string
	switch t.Kind {
	case TargetStorageClass:
		s = fmt.Sprintf("storage class %q", t.Name)
	case TargetClaim:
		s = fmt.Sprintf("claim %s/%s", t.Namespace, t.Name)
	case TargetNodePath:
		s = fmt.Sprintf("%s on node %q", t.Name, t.Node)
	}
	if t.Node != "" && t.Kind != TargetNodePath {
		s += fmt.Sprintf(" on node %q", t.Node)
	}
	return s
}

// Request is everything a read needs, validated: the target, the fio spec and the pod settings.
type Request struct {
	Target         Target
	Spec           fio.Spec
	Image          string
	PullPolicy     string
	HostNetwork    bool
	MaxAge         time.Duration
	IncludeRawJSON bool
}

// cacheKey is a hex hash of the target and the fio job: what the result depends on.
func (r Request) cacheKey() string {
	var b strings.Builder
	fmt.Fprintf(&b, "clusterstorage-benchmark/v1\nkind=%s\nname=%s\nnode=%s\nnamespace=%s\n", r.Target.Kind, r.Target.Name, r.Target.Node, r.Target.Namespace)
	if r.Target.Kind == TargetStorageClass {
		fmt.Fprintf(&b, "volume_size=%d\n", r.Target.VolumeSize.Value())
	}
	fmt.Fprintf(&b, "job=%s\n", fio.Hash(r.Spec))
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:16]
}

// TotalRuntime is how long fio runs: every job's ramp and runtime, one after another.
func TotalRuntime(s fio.Spec) time.Duration {
	var d time.Duration
	for _, j := range s.Jobs {
		d += j.Runtime + j.RampTime
	}
	return d
}

// minVolumeSize is the smallest temporary claim defaultVolumeSize asks for.
var minVolumeSize = k8sresource.MustParse("1Gi")

// defaultVolumeSize is the space fio's files need plus 25 %, rounded up to whole GiB, at least
// minVolumeSize.
func defaultVolumeSize(s fio.Spec) k8sresource.Quantity {
	const gi = int64(1) << 30
	need := fio.SpaceBytes(s)
	need += need / 4
	n := max((need+gi-1)/gi, minVolumeSize.Value()/gi)
	return *k8sresource.NewQuantity(n*gi, k8sresource.BinarySI)
}

// Request turns the configuration into a request. Unknown values must have been ruled out by the
// caller (Terraform defers a data source with unknown configuration to apply, when all is known).
// Problems are attribute errors.
func (m Model) Request() (Request, diag.Diagnostics) {
	var diags diag.Diagnostics
	r := Request{
		Image:          DefaultImage,
		PullPolicy:     m.ImagePullPolicy.ValueString(),
		HostNetwork:    m.HostNetwork.ValueBool(),
		IncludeRawJSON: m.IncludeRawJSON.ValueBool(),
	}
	if !m.Image.IsNull() {
		r.Image = m.Image.ValueString()
	}
	r.Spec, diags = m.spec()
	t, targetDiags := m.target(r.Spec)
	diags.Append(targetDiags...)
	r.Target = t
	if !m.MaxAge.IsNull() {
		d, err := time.ParseDuration(m.MaxAge.ValueString())
		if err != nil || d < 0 {
			diags.AddAttributeError(path.Root("max_age"), "Invalid duration", fmt.Sprintf("%q is not a duration such as `24h`.", m.MaxAge.ValueString()))
		}
		r.MaxAge = d
	}
	return r, diags
}

// target reads and checks the target attributes: exactly one target, node with node_path.
func (m Model) target(s fio.Spec) (Target, diag.Diagnostics) {
	var diags diag.Diagnostics
	t := Target{Node: m.Node.ValueString(), Namespace: defaultNamespace}
	if !m.Namespace.IsNull() {
		t.Namespace = m.Namespace.ValueString()
	}
	var set []string
	for _, c := range []struct {
		kind TargetKind
		v    types.String
	}{{TargetStorageClass, m.StorageClass}, {TargetClaim, m.Claim}, {TargetNodePath, m.NodePath}} {
		if !c.v.IsNull() {
			set = append(set, string(c.kind))
			t.Kind, t.Name = c.kind, c.v.ValueString()
		}
	}
	if len(set) != 1 {
		diags.AddError("Exactly one target required",
			fmt.Sprintf("Set exactly one of storage_class, claim and node_path (set: %s).", strings.Join(orNone(set), ", ")))
		return t, diags
	}
	if t.Kind == TargetNodePath && t.Node == "" {
		diags.AddAttributeError(path.Root("node"), "node required with node_path",
			"node_path is a directory on a node: set node to the Kubernetes node it is on.")
	}
	if !m.VolumeSize.IsNull() && t.Kind != TargetStorageClass {
		diags.AddAttributeError(path.Root("volume_size"), "volume_size needs storage_class",
			"volume_size sizes the temporary claim of a storage_class benchmark; a claim or node_path target has its own size.")
	}
	if t.Kind == TargetNodePath {
		for name, v := range map[string]types.String{"image": m.Image, "image_pull_policy": m.ImagePullPolicy} {
			if !v.IsNull() {
				diags.AddAttributeError(path.Root(name), name+" needs a pod",
					name+" applies to the fio pod of a storage_class or claim benchmark; node_path runs fio on the node over SSH.")
			}
		}
	}
	if t.Kind == TargetStorageClass {
		t.VolumeSize = defaultVolumeSize(s)
		if !m.VolumeSize.IsNull() {
			q, err := k8sresource.ParseQuantity(m.VolumeSize.ValueString())
			switch {
			case err != nil:
				diags.AddAttributeError(path.Root("volume_size"), "Invalid volume_size", err.Error())
			case q.Value() < fio.SpaceBytes(s):
				diags.AddAttributeError(path.Root("volume_size"), "volume_size too small",
					fmt.Sprintf("volume_size %s is smaller than the %s fio's files need (size times num_jobs); raise it or lower size.",
						m.VolumeSize.ValueString(), fio.FormatSize(fio.SpaceBytes(s))))
			default:
				t.VolumeSize = q
			}
		}
	}
	return t, diags
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

// spec is the profile with the user's overrides applied, validated.
func (m Model) spec() (fio.Spec, diag.Diagnostics) {
	var diags diag.Diagnostics
	profile := fio.DefaultProfile
	if !m.Profile.IsNull() {
		profile = m.Profile.ValueString()
	}
	s, err := fio.Profile(profile)
	if err != nil {
		diags.AddAttributeError(path.Root("profile"), "Unknown profile", err.Error())
		return fio.Spec{}, diags
	}
	var o fio.Override
	str := func(v types.String) *string {
		if v.IsNull() {
			return nil
		}
		x := v.ValueString()
		return &x
	}
	num := func(v types.Int64) *int {
		if v.IsNull() {
			return nil
		}
		x := int(v.ValueInt64())
		return &x
	}
	dur := func(name string, v types.String) *time.Duration {
		if v.IsNull() {
			return nil
		}
		d, err := time.ParseDuration(v.ValueString())
		if err != nil {
			diags.AddAttributeError(path.Root(name), "Invalid duration", fmt.Sprintf("%q is not a duration such as `30s`.", v.ValueString()))
			return nil
		}
		return &d
	}
	o.BlockSize, o.RW, o.Size, o.IOEngine = str(m.BlockSize), str(m.RW), str(m.Size), str(m.IOEngine)
	o.RWMixRead, o.IODepth, o.NumJobs, o.Fsync = num(m.RWMixRead), num(m.IODepth), num(m.NumJobs), num(m.Fsync)
	o.Runtime, o.RampTime = dur("runtime", m.Runtime), dur("ramp_time", m.RampTime)
	if !m.Direct.IsNull() {
		d := m.Direct.ValueBool()
		o.Direct = &d
	}
	s = s.Apply(o)
	if err := s.Validate(); err != nil {
		m.jobErrors(err, &diags)
	}
	return s, diags
}

// fioAttribute finds the attribute a fio.Spec.Validate message names: `job "x": block_size ...`.
var fioAttribute = regexp.MustCompile(`^job "[^"]*": ([a-z_]+) `)

// jobErrors reports each problem fio.Spec.Validate found on the attribute it names. The attribute
// validators see every value alone, so what is left is values that do not fit together: a
// block_size larger than size is reported on whichever of the two the configuration sets.
func (m Model) jobErrors(err error, diags *diag.Diagnostics) {
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // the parts of errors.Join, not a wrapped error.
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		msg := e.Error()
		match := fioAttribute.FindStringSubmatch(msg)
		if match == nil {
			diags.AddError("Invalid fio job", msg+".")
			continue
		}
		attr := match[1]
		if attr == "block_size" && strings.Contains(msg, "is larger than size") {
			if m.BlockSize.IsNull() && !m.Size.IsNull() {
				attr = "size"
			}
			msg += `: each I/O must fit in the file. Make size larger or block_size smaller, e.g. block_size = "4k" with size = "200M"`
		}
		diags.AddAttributeError(path.Root(attr), "Invalid fio job", msg+".")
	}
}

// AnyUnknown reports whether an input attribute is not known yet (only at validation; Terraform
// reads data sources once everything is known).
func (m Model) AnyUnknown() bool {
	for _, v := range []interface{ IsUnknown() bool }{
		m.StorageClass, m.Claim, m.NodePath, m.Node, m.Namespace, m.VolumeSize, m.Image, m.ImagePullPolicy, m.HostNetwork,
		m.Profile, m.BlockSize, m.RW, m.RWMixRead, m.IODepth, m.NumJobs, m.Size, m.Runtime, m.RampTime, m.Direct, m.IOEngine, m.Fsync, m.MaxAge, m.Rounds,
	} {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}

// Effective writes the values the run r used into the attributes the user left out, and key
// into id.
func (m *Model) Effective(r Request, key string) {
	j := r.Spec.Jobs[0]
	m.ID = types.StringValue(key)
	setString := func(v *types.String, s string) {
		if v.IsNull() || v.IsUnknown() {
			*v = types.StringValue(s)
		}
	}
	setInt := func(v *types.Int64, n int) {
		if v.IsNull() || v.IsUnknown() {
			*v = types.Int64Value(int64(n))
		}
	}
	setString(&m.Namespace, r.Target.Namespace)
	if r.Target.Kind == TargetStorageClass {
		setString(&m.VolumeSize, r.Target.VolumeSize.String())
	} else {
		m.VolumeSize = types.StringNull()
	}
	if r.Target.Kind == TargetNodePath {
		m.Image = types.StringNull()
	} else {
		setString(&m.Image, r.Image)
	}
	setString(&m.Profile, j.Name)
	setString(&m.BlockSize, j.BlockSize)
	setString(&m.RW, j.RW)
	setInt(&m.RWMixRead, j.RWMixRead)
	setInt(&m.IODepth, j.IODepth)
	setInt(&m.NumJobs, j.NumJobs)
	setString(&m.Size, j.Size)
	setString(&m.Runtime, seconds(j.Runtime))
	setString(&m.RampTime, seconds(j.RampTime))
	if m.Direct.IsNull() || m.Direct.IsUnknown() {
		m.Direct = types.BoolValue(j.Direct)
	}
	setString(&m.IOEngine, j.IOEngine)
	setInt(&m.Fsync, j.Fsync)
}

// observed writes a result into the model.
func (m *Model) observed(s stored, cached, includeRaw bool) {
	r := s.Result
	m.Cached = types.BoolValue(cached)
	m.IOResultModel = IOResultOf(r)
	m.FioVersion = types.StringValue(r.FioVersion)
	m.RuntimeSeconds = types.Float64Value(r.RuntimeSeconds)
	m.MeasuredAt = types.StringValue(s.MeasuredAt.UTC().Format(time.RFC3339))
	sp := spreadOfStored(s)
	m.Summary = types.StringValue(SummaryOf(r, s.Rounds, sp))
	m.Spread = SpreadModelOf(sp)
	m.RawJSON = types.StringNull()
	if includeRaw && s.RawJSON != "" {
		m.RawJSON = types.StringValue(s.RawJSON)
	}
}

// IOResultOf writes what fio measured in r into the model.
func IOResultOf(r fio.Result) IOResultModel {
	return IOResultModel{
		Read:  ioOf(r.Read),
		Write: ioOf(r.Write),
		Sync:  &syncModel{Count: r.Sync.Count, LatencyUS: latencyOf(r.Sync.LatencyMicroseconds)},
		CPU:   &cpuModel{UserPercent: r.CPU.User, SystemPercent: r.CPU.System},
	}
}

func ioOf(s fio.IOStats) *ioModel {
	return &ioModel{IOPS: s.IOPS, BandwidthBytesPerSecond: s.BandwidthBytesPerSecond, LatencyUS: latencyOf(s.LatencyMicroseconds)}
}

// latencyOf converts a latency distribution. fio computes percentiles from a histogram and
// reports the upper edge of a bucket (up to about 1.6 % above the true value), so a high
// percentile can come out above the exactly measured maximum; percentiles are capped at the
// maximum, which no percentile can exceed.
func latencyOf(l fio.Latency) *latencyModel {
	capped := func(p float64) float64 {
		if l.Max > 0 && p > l.Max {
			return l.Max
		}
		return p
	}
	return &latencyModel{Mean: l.Mean, P50: capped(l.P50), P95: capped(l.P95), P99: capped(l.P99), P999: capped(l.P999), Max: l.Max}
}

// validateConfig reports, at plan time, what the attribute validators cannot see alone: the
// target combination, and the fio job as a whole (e.g. block_size larger than size).
func validateConfig(_ context.Context, m Model) diag.Diagnostics {
	if m.AnyUnknown() {
		return nil
	}
	_, diags := m.Request()
	return diags
}

// seconds writes a whole-second duration as Terraform users write it: "60s", "0s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(d/time.Second))
}
