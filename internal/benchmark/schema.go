package benchmark

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// DefaultImage is the fio image pods use unless `image` says otherwise: a public image with fio and
// a POSIX shell on PATH.
const DefaultImage = "nixery.dev/shell/fio"

// Schema describes clusterstorage_storage_benchmark.
func (d *DataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "Key of this benchmark: a hash of the target and the fio job. Also names the cache ConfigMap (`clusterstorage-benchmark-<id>`).",
		},

		// Targets.
		"storage_class": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Benchmark a StorageClass: a temporary PersistentVolumeClaim of `volume_size` in `namespace` is created with it, " +
				"mounted by a fio pod, and deleted afterwards. Classes with `WaitForFirstConsumer` binding work (the claim binds when the pod is scheduled). " +
				"A statically provisioned volume (`kubernetes.io/no-provisioner`, reclaim policy `Retain`) that the claim bound is made `Available` again afterwards. " +
				"Exactly one of `storage_class`, `claim` and `node_path` must be set.",
			Validators: []validator.String{validate.DNSSubdomain()},
		},
		"claim": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Benchmark an existing PersistentVolumeClaim in `namespace`: a fio pod mounts it and works only in a directory of its own " +
				"(`.clusterstorage-benchmark-<run>`), which it removes afterwards; existing data is never touched. The claim needs free space for the test files " +
				"and must not be mounted `ReadWriteOnce` by a pod on another node.",
			Validators: []validator.String{validate.DNSSubdomain()},
		},
		"node_path": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Benchmark a directory on `node` directly: fio runs on the node over SSH (the provider's `ssh` block; fio must be installed there) " +
				"in a directory of its own below this path, which is removed afterwards. An absolute path of letters, digits, spaces and `/._-+@~,=`.",
			Validators: []validator.String{validate.NodePath(), directoryValidator{}},
		},
		"node": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Kubernetes node to run on. Required with `node_path`; with `storage_class` or `claim` it pins the fio pod to that node " +
				"(by its `kubernetes.io/hostname` label).",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 253)},
		},
		"namespace": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Namespace of the claim, the temporary claim and pod, and the cache ConfigMap (default: `" + defaultNamespace + "`).",
			Validators:          []validator.String{validate.DNSSubdomain()},
		},
		"volume_size": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Size requested by the temporary claim of a `storage_class` run, as a Kubernetes quantity (default: the space fio's files need " +
				"plus 25 %, rounded up to whole GiB, at least `" + minVolumeSize.String() + "`).",
			Validators: []validator.String{quantityValidator{}},
		},
		"image": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Container image of the fio pod: any image with `fio` 3.x and a POSIX `sh` on its PATH (default: `" + DefaultImage + "`). " +
				"Clusters without registry access use an image of their own.",
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
		},
		"image_pull_policy": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Pull policy of the fio container: `Always`, `IfNotPresent` or `Never` (default: Kubernetes' own default for the image's tag).",
			Validators:          []validator.String{stringvalidator.OneOf("Always", "IfNotPresent", "Never")},
		},
		"host_network": schema.BoolAttribute{
			Optional: true,
			MarkdownDescription: "Run the fio pod in the node's network namespace (`hostNetwork`; default: `false`). An escape hatch for clusters " +
				"without a pod network (no CNI plugin: a pod with a network namespace of its own never starts there). fio needs no network: on " +
				"any other cluster leave it unset.",
		},

		// The fio job.
		"profile": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "The fio job to start from (default: `" + fio.DefaultProfile + "`): " + fio.ProfilesMarkdown() + ". " +
				"Every other fio attribute overrides the profile's value.",
			Validators: []validator.String{stringvalidator.OneOf(fio.ProfileNames()...)},
		},
		"block_size": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "fio's `bs`: I/O size, a multiple of 512 bytes from `512` to `64M`, e.g. `4k`, `8k`, `1M` (default: the profile's).",
			Validators:          []validator.String{fioString("block size", fio.ValidBlockSize)},
		},
		"rw": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "fio's `rw`: one of `" + strings.Join(fio.RWModes, "`, `") + "` (default: the profile's).",
			Validators:          []validator.String{stringvalidator.OneOf(fio.RWModes...)},
		},
		"rw_mix_read": schema.Int64Attribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Percentage of reads in a mixed workload (`rw`, `readwrite`, `randrw`), `0` to `100` (default: the profile's).",
			Validators:          []validator.Int64{int64validator.Between(0, 100)},
		},
		"io_depth": schema.Int64Attribute{
			Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("I/Os kept in flight per job, `%d` to `%d` (default: the profile's). Only asynchronous engines (`libaio`, `io_uring`, `posixaio`) queue.", fio.MinIODepth, fio.MaxIODepth),
			Validators:          []validator.Int64{int64validator.Between(fio.MinIODepth, fio.MaxIODepth)},
		},
		"num_jobs": schema.Int64Attribute{
			Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("Parallel fio jobs, each on its own file of `size`, `%d` to `%d` (default: `1`).", fio.MinNumJobs, fio.MaxNumJobs),
			Validators:          []validator.Int64{int64validator.Between(fio.MinNumJobs, fio.MaxNumJobs)},
		},
		"size": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Size of each fio job's file, `1M` to `16T`, e.g. `200M`, `1G` (default: `200M`). Sizes use fio's syntax: `k`, `M`, `G`, `T` are powers of 1024.",
			Validators:          []validator.String{fioString("size", fio.ValidSize)},
		},
		"runtime": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "How long fio measures, whole seconds from `1s` to `1h`, e.g. `30s`, `2m` (default: `60s`).",
			Validators:          []validator.String{durationValidator{check: fio.ValidRuntime}},
		},
		"ramp_time": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "How long fio runs before it starts measuring, whole seconds from `0s` to `10m` (default: `0s`).",
			Validators:          []validator.String{durationValidator{check: fio.ValidRampTime}},
		},
		"direct": schema.BoolAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Bypass the page cache with O_DIRECT (default: `true`, except for the `fsync` profile). With `false` and files that fit in the node's memory, the data source warns that the numbers may describe memory.",
		},
		"ioengine": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "fio's `ioengine`: one of `" + strings.Join(fio.IOEngines, "`, `") + "` (default: `libaio`, `sync` for the `fsync` profile).",
			Validators:          []validator.String{stringvalidator.OneOf(fio.IOEngines...)},
		},
		"fsync": schema.Int64Attribute{
			Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("Writes between two fdatasync calls, `0` (never) to `%d` (default: `0`, `1` for the `fsync` profile).", fio.MaxFsync),
			Validators:          []validator.Int64{int64validator.Between(0, fio.MaxFsync)},
		},

		// Cost control.
		"max_age": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Reuse a result measured with the same target and job if it is younger than this duration, e.g. `24h` (default: `0s`, always run fio). " +
				"Results are kept in a ConfigMap `clusterstorage-benchmark-<id>` in `namespace`, written only when `max_age` is set. Data sources are read on every plan: " +
				"without it every plan runs fio.",
			Validators: []validator.String{durationValidator{check: nonNegative}},
		},
		"rounds": RoundsAttribute("the job runs, one round after another on the same volume or directory", DefaultRounds),
		"include_raw_json": schema.BoolAttribute{
			Optional:            true,
			MarkdownDescription: "Fill `raw_json` with fio's whole JSON output (default: `false`).",
		},
		"timeouts": timeouts.Attributes(ctx),

		// Results.
		"cached": schema.BoolAttribute{
			Computed:            true,
			MarkdownDescription: "`true` when this read reused a cached result (`max_age`) and did not run fio.",
		},
		"read":  ioAttribute("Reads"),
		"write": ioAttribute("Writes"),
		"sync": schema.SingleNestedAttribute{
			Computed:            true,
			MarkdownDescription: "fsync/fdatasync calls (the `fsync` profile, or `fsync` > 0): `count` and `latency_us`.",
			Attributes: map[string]schema.Attribute{
				"count":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of sync calls."},
				"latency_us": latencyAttribute("Latency of the sync calls"),
			},
		},
		"cpu": schema.SingleNestedAttribute{
			Computed:            true,
			MarkdownDescription: "CPU time fio used, as a percentage of one CPU: `user_percent` and `system_percent`.",
			Attributes: map[string]schema.Attribute{
				"user_percent":   schema.Float64Attribute{Computed: true, MarkdownDescription: "User CPU, percent of one CPU."},
				"system_percent": schema.Float64Attribute{Computed: true, MarkdownDescription: "System CPU, percent of one CPU."},
			},
		},
		"fio_version":     schema.StringAttribute{Computed: true, MarkdownDescription: "fio's version, e.g. `fio-3.33`."},
		"runtime_seconds": schema.Float64Attribute{Computed: true, MarkdownDescription: "How long fio measured, in seconds."},
		"measured_at":     schema.StringAttribute{Computed: true, MarkdownDescription: "When fio ran (RFC 3339, UTC)."},
		"summary": schema.StringAttribute{Computed: true, MarkdownDescription: "One readable line, e.g. `read 7757 IOPS 60.6 MiB/s p99 1.47 ms; write 3325 IOPS 26.0 MiB/s p99 2.31 ms`; " +
			"with several rounds followed by their spread, e.g. `; 3 rounds: read IOPS 7500-7900 (CV 2.6 %), write IOPS 3200-3400 (CV 3.0 %)`."},
		"spread":   SpreadAttribute(),
		"raw_json": schema.StringAttribute{Computed: true, MarkdownDescription: "fio's JSON output (of the first round), when `include_raw_json` is `true`; otherwise null."},
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Measures storage with [fio](https://fio.readthedocs.io): through a StorageClass (a temporary claim and pod), an existing claim, " +
			"or a directory on a node over SSH. Everything the benchmark creates (pod, claim, test files) is removed, and waited for, whatever the outcome: " +
			"success, fio error, timeout or cancellation. Data sources are read on every plan, so set `max_age` to reuse a recent result.",
		Attributes: attrs,
	}
}

func ioAttribute(what string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Computed:            true,
		MarkdownDescription: what + ": `iops`, `bandwidth_bytes_per_second` and `latency_us`. Zero when the job did not do any.",
		Attributes: map[string]schema.Attribute{
			"iops":                       schema.Float64Attribute{Computed: true, MarkdownDescription: "I/O operations per second."},
			"bandwidth_bytes_per_second": schema.Float64Attribute{Computed: true, MarkdownDescription: "Bytes per second."},
			"latency_us":                 latencyAttribute("Total latency (submission to completion) of one I/O"),
		},
	}
}

func latencyAttribute(what string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Computed: true,
		MarkdownDescription: what + ", in microseconds: `mean`, `p50`, `p95`, `p99`, `p99_9` and `max`. " +
			"Percentiles come from fio's latency histogram (within about 1.6 %) and are capped at `max`.",
		Attributes: map[string]schema.Attribute{
			"mean":  schema.Float64Attribute{Computed: true, MarkdownDescription: "Mean, µs."},
			"p50":   schema.Float64Attribute{Computed: true, MarkdownDescription: "50th percentile (median), µs."},
			"p95":   schema.Float64Attribute{Computed: true, MarkdownDescription: "95th percentile, µs."},
			"p99":   schema.Float64Attribute{Computed: true, MarkdownDescription: "99th percentile, µs."},
			"p99_9": schema.Float64Attribute{Computed: true, MarkdownDescription: "99.9th percentile, µs."},
			"max":   schema.Float64Attribute{Computed: true, MarkdownDescription: "Maximum, µs."},
		},
	}
}

// fioString wraps one of fio's Valid* checks as a validator.
func fioString(what string, check func(string) error) validator.String {
	return stringValidator{
		description: "a valid fio " + what,
		check:       check,
	}
}

type stringValidator struct {
	description string
	check       func(string) error
}

func (v stringValidator) Description(context.Context) string { return v.description }
func (v stringValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (v stringValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+strings.TrimPrefix(v.description, "a valid "),
			fmt.Sprintf("%q %s.", req.ConfigValue.ValueString(), err))
	}
}

// directoryValidator checks node_path with fio's own rule for directories; control characters
// are validate.NodePath's to report.
type directoryValidator struct{}

func (directoryValidator) Description(context.Context) string {
	return "an absolute path of letters, digits, spaces and /._-+@~,="
}
func (v directoryValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (directoryValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || validate.CheckNodePath(req.ConfigValue.ValueString()) != nil {
		return // validate.NodePath says what is wrong
	}
	if err := fio.ValidDirectory(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid node_path", fmt.Sprintf("%q %s.", req.ConfigValue.ValueString(), err))
	}
}

// durationValidator checks a Go duration string ("60s", "2m", "24h") with check.
type durationValidator struct {
	check func(time.Duration) error
}

func (durationValidator) Description(context.Context) string {
	return "a duration such as `30s`, `5m` or `24h`"
}
func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	d, err := time.ParseDuration(s)
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf("%q is not a duration: write it like `30s`, `5m` or `24h`.", s))
		return
	}
	if err := v.check(d); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf("%q %s.", s, err))
	}
}

func nonNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative")
	}
	return nil
}

type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string {
	return "a positive Kubernetes quantity such as `10Gi`"
}
func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (quantityValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := k8sresource.ParseQuantity(req.ConfigValue.ValueString())
	if err != nil || q.Sign() <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid volume_size",
			fmt.Sprintf("%q is not a positive Kubernetes quantity; write it like `10Gi` or `500Mi`.", req.ConfigValue.ValueString()))
	}
}
