package comparison

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// jobAttributeNames are the benchmark's fio job attributes, which a comparison takes as they are.
var jobAttributeNames = []string{"profile", "block_size", "rw", "rw_mix_read", "io_depth", "num_jobs", "size", "runtime", "ramp_time", "direct", "ioengine", "fsync"}

// podAttributeNames are the benchmark's fio pod attributes, which a comparison applies to every
// target that runs in a pod.
var podAttributeNames = []string{"image", "image_pull_policy", "host_network"}

// targetAttributeNames are the benchmark's target attributes, which each comparison target takes.
var targetAttributeNames = []string{"storage_class", "claim", "node_path", "node", "namespace", "volume_size"}

// Schema describes clusterstorage_storage_comparison. The fio job, pod and target attributes are
// the benchmark's own (one definition, one set of validators).
func (d *DataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	var bench datasource.SchemaResponse
	(&benchmark.DataSource{}).Schema(ctx, datasource.SchemaRequest{}, &bench)
	from := bench.Schema.Attributes
	var nodeValidators []validator.String
	if node, ok := from["node"].(schema.StringAttribute); ok {
		nodeValidators = node.Validators
	}

	targetAttrs := map[string]schema.Attribute{}
	for _, name := range targetAttributeNames {
		targetAttrs[name] = from[name]
	}
	targetAttrs["node"] = schema.StringAttribute{
		Optional:            true,
		MarkdownDescription: "Kubernetes node of this target (default: the comparison's `node`). Required with `node_path`; pins a pod target's fio pod.",
		Validators:          nodeValidators,
	}
	targetAttrs["namespace"] = schema.StringAttribute{
		Optional:            true,
		MarkdownDescription: "Namespace of this target's claim, temporary claim and pod (default: the comparison's `namespace`).",
		Validators:          []validator.String{validate.DNSSubdomain()},
	}
	targetAttrs["backend_namespace"] = schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Namespace whose pods serve this target, e.g. a `clusterstorage_storage_backend`'s `namespace`: their memory is reported in `results` " +
			"(working set from the metrics API, `metrics.k8s.io`, next to their requests), as the memory overhead of this storage.",
		Validators: []validator.String{validate.DNSSubdomain()},
	}

	attrs := map[string]schema.Attribute{
		"targets": schema.MapNestedAttribute{
			Required: true,
			MarkdownDescription: "What to compare, by a name of your choice: each target sets exactly one of `storage_class`, `claim` and `node_path`, as " +
				"`clusterstorage_storage_benchmark` takes them. At least one target.",
			NestedObject: schema.NestedAttributeObject{Attributes: targetAttrs},
			Validators:   []validator.Map{mapvalidator.SizeAtLeast(1)},
		},
		"baseline": schema.StringAttribute{
			Required: true,
			MarkdownDescription: "Name of the target the others are compared with, usually the node's disk (a `node_path` target): every result has the ratio of " +
				"each figure to the baseline's. A target on the baseline's node that is faster than a `node_path` baseline beyond the spread is warned about (probably a cache).",
		},
		"rounds": benchmark.RoundsAttribute("the job runs on each target, interleaved: the first round visits the targets in name order (A B C), "+
			"the next starts one later (B C A), and so on, so drift on the machine hits every target alike", DefaultRounds),
		"node": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Kubernetes node of every target that does not name its own.",
			Validators:          nodeValidators,
		},
		"namespace": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Namespace of every target that does not name its own (default: `default`).",
			Validators:          []validator.String{validate.DNSSubdomain()},
		},
		"max_age": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Reuse the comparison's results if they are younger than this duration, e.g. `24h` (default: `0s`, always run fio), as " +
				"`clusterstorage_storage_benchmark`'s `max_age` does: each target's result is kept in a ConfigMap `clusterstorage-benchmark-<id>` in " +
				"its namespace, written only when `max_age` is set, and reused only when every target has one from the same targets, job and rounds " +
				"(a comparison never mixes a cached result with a new run). Data sources are read on every plan: without it every plan runs all the rounds.",
			Validators: maxAgeValidators(from),
		},
		"timeouts": timeouts.Attributes(ctx),

		"cached": schema.BoolAttribute{
			Computed:            true,
			MarkdownDescription: "`true` when this read reused cached results (`max_age`) and ran no fio.",
		},
		"measured_at": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "When the rounds started (RFC 3339, UTC); with `cached`, when the reused rounds started.",
		},
		"order": schema.ListAttribute{
			Computed:            true,
			ElementType:         types.ListType{ElemType: types.StringType},
			MarkdownDescription: "The order the targets ran in, one list of target names per round.",
		},
		"results": schema.MapNestedAttribute{
			Computed:            true,
			MarkdownDescription: "What each target measured, by target name.",
			NestedObject:        schema.NestedAttributeObject{Attributes: resultAttributes(from)},
		},
		"metrics_api": schema.BoolAttribute{
			Computed:            true,
			MarkdownDescription: "Whether the cluster serves the metrics API (`metrics.k8s.io`, e.g. metrics-server) that memory usage comes from.",
		},
		"table": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "The comparison as a table for people, as in the seed article: a column per target (the baseline first), the node each target ran on (when it names one), a row per headline " +
				"figure (median ± coefficient of variation), the IOPS ratio to the baseline (`~` marks a ratio within the spread), and the memory " +
				"of the pods serving each target.",
		},
		"warnings": schema.ListAttribute{
			Computed:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "The warnings of this comparison (also shown as Terraform warnings): caches, files that fit in memory, spreads too large to rank.",
		},
	}
	for _, name := range append(append([]string{}, jobAttributeNames...), podAttributeNames...) {
		attrs[name] = from[name]
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Compares storage fairly: the same fio job on several targets (storage classes, claims, directories on nodes), in " +
			"interleaved rounds, reporting for each the medians, the spread, the ratio of each figure to a `baseline` target, and the memory of the " +
			"pods that serve it. Each run is a `clusterstorage_storage_benchmark` run (same pods, same cleanup).\n\n" +
			"**When a difference counts.** A ratio is `significant` when the ranges the rounds covered do not overlap: the slowest round of the " +
			"faster target beat the fastest round of the slower one. With one round nothing is significant. Targets whose IOPS vary by more " +
			fmt.Sprintf("than %.0f %% (coefficient of variation) are warned about: their ranking says little.", 100*maxRankCV),
		Attributes: attrs,
	}
}

// resultAttributes is the schema of one target's result; from is the benchmark's schema.
func resultAttributes(from map[string]schema.Attribute) map[string]schema.Attribute {
	ratioKeys := make([]string, len(benchmark.Figures))
	for i, f := range benchmark.Figures {
		ratioKeys[i] = "`" + f.Key + "`"
	}
	return map[string]schema.Attribute{
		"kind":    schema.StringAttribute{Computed: true, MarkdownDescription: "`storage_class`, `claim` or `node_path`."},
		"rounds":  schema.Int64Attribute{Computed: true, MarkdownDescription: "Rounds measured."},
		"read":    from["read"],
		"write":   from["write"],
		"sync":    from["sync"],
		"cpu":     from["cpu"],
		"summary": from["summary"],
		"spread":  benchmark.SpreadAttribute(),
		"vs_baseline": schema.MapNestedAttribute{
			Computed: true,
			MarkdownDescription: "Each headline figure (" + strings.Join(ratioKeys, ", ") + ") over the baseline's: `ratio` (median over median; " +
				"null when the baseline's is 0; above 1 is faster for IOPS and bandwidth, slower for latency) and `significant` (the ranges of the rounds do not overlap).",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"ratio":       schema.Float64Attribute{Computed: true, MarkdownDescription: "This target's median over the baseline's."},
				"significant": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the difference is larger than the spread."},
			}},
		},
		"memory": schema.SingleNestedAttribute{
			Computed:            true,
			MarkdownDescription: "Memory of the pods in `backend_namespace` after the rounds; null without `backend_namespace`.",
			Attributes: map[string]schema.Attribute{
				"namespace":      schema.StringAttribute{Computed: true, MarkdownDescription: "The backend namespace."},
				"pods":           schema.Int64Attribute{Computed: true, MarkdownDescription: "Running pods counted."},
				"requests_bytes": schema.Int64Attribute{Computed: true, MarkdownDescription: "Sum of their containers' memory requests."},
				"usage_bytes":    schema.Int64Attribute{Computed: true, MarkdownDescription: "Sum of their working sets from the metrics API; null when the cluster does not serve it."},
			},
		},
	}
}

// maxAgeValidators are the benchmark's validators of max_age (one definition).
func maxAgeValidators(from map[string]schema.Attribute) []validator.String {
	if a, ok := from["max_age"].(schema.StringAttribute); ok {
		return a.Validators
	}
	return nil
}
