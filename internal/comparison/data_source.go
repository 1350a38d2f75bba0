package comparison

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/tfconv"
)

var (
	_ datasource.DataSourceWithConfigure      = &DataSource{}
	_ datasource.DataSourceWithValidateConfig = &DataSource{}
)

// runAllowance is added to fio's runtime, per run, for the default read timeout of a comparison:
// a pod's scheduling, binding and cleanup.
const runAllowance = time.Minute

// NewDataSource returns the clusterstorage_storage_comparison data source.
func NewDataSource() datasource.DataSource {
	return &DataSource{}
}

// DataSource runs one fio job on several targets in interleaved rounds and compares them.
type DataSource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (d *DataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_storage_comparison"
}

// Configure receives the provider's shared clients and node access.
func (d *DataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig refuses, at plan time, no targets, an unknown baseline, rounds out of range, and
// whatever the benchmark refuses of a target or the fio job.
func (d *DataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	// targets built by an expression (merge(), a for over a resource's outputs) can be unknown
	// as a whole or per target until apply: check them then.
	config := req.Config
	if len(tfconv.Pending(&config.Raw, &resp.Diagnostics, "targets")) > 0 || resp.Diagnostics.HasError() {
		return
	}
	var m model
	resp.Diagnostics.Append(config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.anyUnknown() {
		return
	}
	_, _, diags := m.request()
	resp.Diagnostics.Append(diags...)
}

// Read runs the rounds and compares the targets.
func (d *DataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	targets, rounds, diags := m.request()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec := targets[0].Request.Spec
	runs := rounds * len(targets)
	timeout, diags := m.Timeouts.Read(ctx, time.Duration(runs)*(benchmark.TotalRuntime(spec)+runAllowance)+benchmark.SetupAllowance)
	resp.Diagnostics.Append(diags...)
	client := d.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	baseline := m.Baseline.ValueString()

	// Every target must exist before the first run.
	hostnames := map[string]string{}
	memByNode := map[string]int64{}
	for _, t := range targets {
		var check diag.Diagnostics
		hostname, memBytes, ok := benchmark.CheckTarget(ctx, client, t.Request.Target, &check)
		resp.Diagnostics.Append(repath(check, targetPath(t.Name))...)
		if !ok {
			continue
		}
		hostnames[t.Name] = hostname
		memByNode[t.Request.Target.Node] = memBytes
	}
	if resp.Diagnostics.HasError() {
		return
	}
	namespaces := make([]string, 0, len(targets))
	for _, t := range targets {
		namespaces = append(namespaces, t.Request.Target.Namespace)
	}
	benchmark.SweepNamespaces(ctx, client, namespaces, &resp.Diagnostics)
	var warnings []string
	seen := map[string]bool{}
	for _, t := range targets {
		for _, w := range fio.Warnings(spec, memByNode[t.Request.Target.Node]) {
			if !seen[w] {
				seen[w] = true
				warnings = append(warnings, w)
			}
		}
	}

	order := benchmark.Interleave(len(targets), rounds)
	m.Order = make([][]string, 0, len(order))
	for _, visit := range order {
		names := make([]string, 0, len(visit))
		for _, i := range visit {
			names = append(names, targets[i].Name)
		}
		m.Order = append(m.Order, names)
	}
	maxAge := targets[0].Request.MaxAge
	keys := cacheKeys(targets, rounds)
	var cached map[string]*benchmark.CachedResult
	startedAt := time.Now()
	if maxAge > 0 {
		var reason string
		var err error
		cached, startedAt, reason, err = cachedResults(ctx, client, targets, keys, maxAge, time.Now())
		if err != nil {
			resp.Diagnostics.AddWarning("Result cache not readable", err.Error()+"\nfio runs instead.")
		}
		tflog.Debug(ctx, "comparison cache lookup", map[string]any{"hit": cached != nil, "reason": reason})
		if cached == nil {
			startedAt = time.Now()
		}
	}
	results := map[string][]fio.Result{}
	if cached == nil {
		tflog.Info(ctx, "comparing storage", map[string]any{"targets": len(targets), "rounds": rounds, "job_hash": fio.Hash(spec),
			"runtime": benchmark.TotalRuntime(spec).String(), "timeout": timeout.String()})
		for round, visit := range order {
			for _, i := range visit {
				t := targets[i]
				tflog.Debug(ctx, "comparison run", map[string]any{"round": round + 1, "target": t.Name})
				mt, diags := benchmark.Measure(ctx, d.data, client, t.Request, hostnames[t.Name], timeout, targetPath(t.Name).AtName("node"))
				resp.Diagnostics.Append(diags...)
				if resp.Diagnostics.HasError() {
					return
				}
				results[t.Name] = append(results[t.Name], mt.Result)
			}
		}
	}

	metricsAPI := kube.MetricsAPIServed(client)
	ms := make([]measured, 0, len(targets))
	for _, t := range targets {
		mt := measured{Name: t.Name, Kind: t.Request.Target.Kind, Node: t.Request.Target.Node}
		if c := cached[t.Name]; c != nil {
			mt.Median, mt.Spreads, mt.Rounds = c.Result, c.Spread, c.Rounds
		} else {
			rs := results[t.Name]
			mt.Median, mt.Spreads, mt.Rounds = benchmark.MedianResult(rs), benchmark.Spreads(rs), len(rs)
		}
		if t.BackendNamespace != "" {
			use, diags := backendMemory(ctx, client, t.BackendNamespace, targetPath(t.Name).AtName("backend_namespace"))
			resp.Diagnostics.Append(diags...)
			mt.Memory = use
		}
		ms = append(ms, mt)
	}
	if maxAge > 0 && cached == nil {
		if err := storeResults(ctx, client, targets, keys, ms, spec, startedAt); err != nil {
			resp.Diagnostics.AddWarning("Result not cached", err.Error()+"\nThe next read runs fio again.")
		}
	}
	warnings = append(warnings, cacheWarnings(ms, baseline)...)
	warnings = append(warnings, spreadWarnings(ms)...)
	if !metricsAPI {
		for _, mt := range ms {
			if mt.Memory != nil {
				warnings = append(warnings, "The cluster does not serve the metrics API (metrics.k8s.io): the memory the backends use is unknown, "+
					"only their requests are reported. Install metrics-server for working-set figures.")
				break
			}
		}
	}
	for _, w := range warnings {
		resp.Diagnostics.AddWarning("Storage comparison", w)
	}

	m.observed(targets, ms, baseline, spec, metricsAPI, warnings)
	m.Cached = types.BoolValue(cached != nil)
	m.MeasuredAt = types.StringValue(startedAt.UTC().Format(time.RFC3339))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func targetPath(name string) path.Path { return path.Root("targets").AtMapKey(name) }

// backendMemory sums the memory of the running pods in namespace: their requests, and their
// working set when the metrics API is served.
func backendMemory(ctx context.Context, client kubernetes.Interface, namespace string, at path.Path) (*memoryUse, diag.Diagnostics) {
	var diags diag.Diagnostics
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		diags.AddAttributeWarning(at, "Backend memory not read", fmt.Sprintf("Listing the pods of namespace %q failed: %v", namespace, err))
		return nil, diags
	}
	fp := kube.SumPods(list.Items)
	use := &memoryUse{Namespace: namespace, Pods: fp.Pods, RequestsBytes: fp.MemoryRequestsBytes}
	if fp.Pods == 0 {
		diags.AddAttributeWarning(at, "No backend pods", fmt.Sprintf("Namespace %q has no running pods: no memory is counted for this target.", namespace))
		use.UsageKnown = kube.MetricsAPIServed(client)
		return use, diags
	}
	use.UsageBytes, use.UsageKnown, err = kube.PodsMemoryUsage(ctx, client, list.Items)
	if err != nil {
		diags.AddAttributeWarning(at, "Backend memory usage not read", fmt.Sprintf("Reading the metrics of the pods of namespace %q failed: %v", namespace, err))
	}
	return use, diags
}

// observed writes the comparison into the model: effective job settings, per-target results,
// the table and warnings.
func (m *model) observed(targets []target, ms []measured, baseline string, spec fio.Spec, metricsAPI bool, warnings []string) {
	// The job's effective settings, as the benchmark fills them.
	b := m.benchModel(targetModel{TargetModel: benchmark.TargetModel{StorageClass: types.StringValue("x")}})
	r := targets[0].Request
	r.Target = benchmark.Target{Kind: benchmark.TargetStorageClass}
	b.Effective(r, "")
	m.JobModel = b.JobModel
	m.Image = b.Image
	m.Rounds = types.Int64Value(int64(ms[0].Rounds))

	var base measured
	for _, mt := range ms {
		if mt.Name == baseline {
			base = mt
		}
	}
	m.Results = make(map[string]resultModel, len(ms))
	for _, mt := range ms {
		res := resultModel{
			Kind:          types.StringValue(string(mt.Kind)),
			Rounds:        types.Int64Value(int64(mt.Rounds)),
			IOResultModel: benchmark.IOResultOf(mt.Median),
			Summary:       types.StringValue(benchmark.SummaryOf(mt.Median, mt.Rounds, mt.Spreads)),
			Spread:        benchmark.SpreadModelOf(mt.Spreads),
			VsBaseline:    map[string]ratioModel{},
		}
		for key, r := range ratios(mt, base) {
			rm := ratioModel{Ratio: types.Float64Null(), Significant: r.Significant && mt.Name != baseline}
			if r.Known {
				rm.Ratio = types.Float64Value(r.Value)
			}
			res.VsBaseline[key] = rm
		}
		if u := mt.Memory; u != nil {
			res.Memory = &memoryModel{Namespace: u.Namespace, Pods: int64(u.Pods), RequestsBytes: u.RequestsBytes, UsageBytes: types.Int64Null()}
			if u.UsageKnown {
				res.Memory.UsageBytes = types.Int64Value(u.UsageBytes)
			}
		}
		m.Results[mt.Name] = res
	}
	m.MetricsAPI = types.BoolValue(metricsAPI)
	m.Table = types.StringValue(table("fio "+spec.Jobs[0].Name, ms, baseline))
	m.Warnings = append([]string{}, warnings...)
}
