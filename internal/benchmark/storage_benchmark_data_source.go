package benchmark

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var (
	_ datasource.DataSourceWithConfigure      = &DataSource{}
	_ datasource.DataSourceWithValidateConfig = &DataSource{}
)

// SetupAllowance is added to fio's runtime for the default read timeout: scheduling, binding,
// image pulls and cleanup.
const SetupAllowance = 5 * time.Minute

// NewDataSource returns the clusterstorage_storage_benchmark data source.
func NewDataSource() datasource.DataSource {
	return &DataSource{}
}

// DataSource runs fio and reports what it measured.
type DataSource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (d *DataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_storage_benchmark"
}

// Configure receives the provider's shared clients and node access.
func (d *DataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks, at plan time, the target combination and the fio job as a whole.
func (d *DataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m Model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(validateConfig(ctx, m)...)
}

// Read runs the benchmark, or reuses a cached result younger than max_age.
func (d *DataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m Model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r, diags := m.Request()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	rounds, diags := RoundsOf(m.Rounds, DefaultRounds, path.Root("rounds"))
	resp.Diagnostics.Append(diags...)
	timeout, diags := m.Timeouts.Read(ctx, time.Duration(rounds)*TotalRuntime(r.Spec)+SetupAllowance)
	resp.Diagnostics.Append(diags...)
	client := d.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	key := roundsKey(r.cacheKey(), rounds)
	m.Effective(r, key)
	m.Rounds = types.Int64Value(int64(rounds))
	ctx = tflog.SetField(ctx, "benchmark", key)

	hostname, memBytes, ok := CheckTarget(ctx, client, r.Target, &resp.Diagnostics)
	if !ok {
		return
	}
	SweepNamespaces(ctx, client, []string{r.Target.Namespace}, &resp.Diagnostics)

	c := cache{client: client, namespace: r.Target.Namespace}
	if r.MaxAge > 0 {
		hit, reason, err := c.get(ctx, key, r.MaxAge, time.Now())
		if err != nil {
			resp.Diagnostics.AddWarning("Result cache not readable", err.Error()+"\nfio runs instead.")
		}
		tflog.Debug(ctx, "benchmark cache lookup", map[string]any{"name": CacheName(key), "hit": hit != nil, "reason": reason})
		if hit != nil {
			m.observed(*hit, true, r.IncludeRawJSON)
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
			return
		}
	}

	for _, w := range fio.Warnings(r.Spec, memBytes) {
		resp.Diagnostics.AddWarning("fio job", w)
	}
	tflog.Info(ctx, "running fio", map[string]any{"target": r.Target.String(), "job_hash": fio.Hash(r.Spec), "runtime": TotalRuntime(r.Spec).String(),
		"rounds": rounds, "timeout": timeout.String()})
	var results []fio.Result
	var first Measurement
	for round := range rounds {
		mt, diags := Measure(ctx, d.data, client, r, hostname, timeout, path.Root("node"))
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
		if round == 0 {
			first = mt
		}
		results = append(results, mt.Result)
	}
	result := MedianResult(results)
	measured := result.Time
	if measured.IsZero() {
		measured = first.Started
	}
	s := stored{Version: storedVersion, Target: r.Target.String(), JobHash: fio.Hash(r.Spec), MeasuredAt: measured, Result: result, RawJSON: rawJSON(first.Out),
		Rounds: rounds, Spread: Spreads(results)}
	tflog.Info(ctx, "benchmark finished", map[string]any{"summary": fio.Summary(result), "rounds": rounds})
	if r.MaxAge > 0 {
		if err := c.put(ctx, key, s); err != nil {
			resp.Diagnostics.AddWarning("Result not cached", err.Error()+"\nThe next read runs fio again.")
		}
	}
	m.observed(s, false, r.IncludeRawJSON)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// failure words a run error: a timeout says which timeout and how to raise it.
func failure(err error, timeout time.Duration) string {
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "timed out after") {
		msg += fmt.Sprintf("\n\nThe read timeout was %s (fio's runtime plus %s by default); raise it with `timeouts = { read = \"%s\" }` if the cluster is just slow.", timeout, SetupAllowance, shortDuration(max((2*timeout).Round(time.Minute), time.Minute)))
	}
	return msg
}

// shortDuration writes d as a timeouts value without zero tails: `10m`, `1h`, `1h30m`.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// CheckTarget checks that t exists, with errors that name what does exist, and returns the node's
// hostname label (for pinning a pod) and memory (for the page cache warning). Problems are added
// to diags, at the data source's target attributes (storage_class, claim, node).
func CheckTarget(ctx context.Context, client kubernetes.Interface, t Target, diags *diag.Diagnostics) (hostname string, memBytes int64, ok bool) {
	switch t.Kind {
	case TargetStorageClass:
		_, err := client.StorageV1().StorageClasses().Get(ctx, t.Name, metav1.GetOptions{})
		if kube.IsNotFound(err) {
			names := []string{}
			if list, lerr := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}); lerr == nil {
				for _, sc := range list.Items {
					names = append(names, sc.Name)
				}
			}
			diags.AddAttributeError(path.Root("storage_class"), "Storage class not found",
				fmt.Sprintf("The cluster has no storage class %q; it has: %s.", t.Name, ListOrNone(names)))
			return "", 0, false
		}
		if err != nil {
			diags.AddError("Reading storage class "+t.Name+" failed", err.Error())
			return "", 0, false
		}
	case TargetClaim:
		_, err := client.CoreV1().PersistentVolumeClaims(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		if kube.IsNotFound(err) {
			names := []string{}
			if list, lerr := client.CoreV1().PersistentVolumeClaims(t.Namespace).List(ctx, metav1.ListOptions{}); lerr == nil {
				for _, c := range list.Items {
					if c.Labels[LabelRun] == "" {
						names = append(names, c.Name)
					}
				}
			}
			diags.AddAttributeError(path.Root("claim"), "Claim not found",
				fmt.Sprintf("Namespace %q has no PersistentVolumeClaim %q; it has: %s.", t.Namespace, t.Name, ListOrNone(names)))
			return "", 0, false
		}
		if err != nil {
			diags.AddError("Reading claim "+t.Namespace+"/"+t.Name+" failed", err.Error())
			return "", 0, false
		}
	}
	if t.Node == "" {
		return "", 0, true
	}
	n, err := kube.GetNode(ctx, client, t.Node)
	if err != nil {
		diags.AddAttributeError(path.Root("node"), "Unknown node", err.Error())
		return "", 0, false
	}
	hostname = n.Labels["kubernetes.io/hostname"]
	if hostname == "" {
		hostname = n.Name
	}
	if q, ok := n.Status.Capacity[corev1.ResourceMemory]; ok {
		memBytes = q.Value()
	}
	return hostname, memBytes, true
}

// ListOrNone joins names, sorted (in place), for a message that lists what exists: "none" for no
// names.
func ListOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// newRunID returns 8 random lower-case hex digits: unique enough to name one run's objects.
func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b)
}
