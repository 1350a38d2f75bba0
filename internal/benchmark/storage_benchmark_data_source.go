// Package benchmark implements the clusterstorage_storage_benchmark data source: fio against a
// StorageClass (a temporary claim and pod), an existing claim (a pod), or a directory on a node
// (over SSH), with results cached in a ConfigMap.
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

// setupAllowance is added to fio's runtime for the default read timeout: scheduling, binding,
// image pulls and cleanup.
const setupAllowance = 5 * time.Minute

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
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(validateConfig(ctx, m)...)
}

// Read runs the benchmark, or reuses a cached result younger than max_age.
func (d *DataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r, diags := m.request()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	rounds, diags := roundsOf(m.Rounds, DefaultRounds, path.Root("rounds"))
	resp.Diagnostics.Append(diags...)
	timeout, diags := m.Timeouts.Read(ctx, time.Duration(rounds)*totalRuntime(r.Spec)+setupAllowance)
	resp.Diagnostics.Append(diags...)
	client := d.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	key := roundsKey(r.cacheKey(), rounds)
	m.effective(r, key)
	m.Rounds = types.Int64Value(int64(rounds))
	ctx = tflog.SetField(ctx, "benchmark", key)

	hostname, memBytes, ok := d.checkTarget(ctx, client, r.Target, resp)
	if !ok {
		return
	}
	sweepNamespaces(ctx, client, []string{r.Target.Namespace}, &resp.Diagnostics)

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
	tflog.Info(ctx, "running fio", map[string]any{"target": r.Target.String(), "job_hash": fio.Hash(r.Spec), "runtime": totalRuntime(r.Spec).String(),
		"rounds": rounds, "timeout": timeout.String()})
	var results []fio.Result
	var first measurement
	for round := range rounds {
		mt, diags := measure(ctx, d.data, client, r, hostname, timeout, path.Root("node"))
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
		if round == 0 {
			first = mt
		}
		results = append(results, mt.Result)
	}
	result := medianResult(results)
	measured := result.Time
	if measured.IsZero() {
		measured = first.Started
	}
	s := stored{Version: storedVersion, Target: r.Target.String(), JobHash: fio.Hash(r.Spec), MeasuredAt: measured, Result: result, RawJSON: rawJSON(first.Out),
		Rounds: rounds, Spread: spreads(results)}
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
		msg += fmt.Sprintf("\n\nThe read timeout was %s (fio's runtime plus %s by default); raise it with `timeouts = { read = \"%s\" }` if the cluster is just slow.", timeout, setupAllowance, shortDuration(max((2*timeout).Round(time.Minute), time.Minute)))
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

// checkTarget checks that the target exists, with errors that name what does exist, and returns
// the node's hostname label (for pinning a pod) and memory (for the page cache warning).
func (d *DataSource) checkTarget(ctx context.Context, client kubernetes.Interface, t target, resp *datasource.ReadResponse) (hostname string, memBytes int64, ok bool) {
	switch t.Kind {
	case targetStorageClass:
		_, err := client.StorageV1().StorageClasses().Get(ctx, t.Name, metav1.GetOptions{})
		if kube.IsNotFound(err) {
			names := []string{}
			if list, lerr := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}); lerr == nil {
				for _, sc := range list.Items {
					names = append(names, sc.Name)
				}
			}
			resp.Diagnostics.AddAttributeError(path.Root("storage_class"), "Storage class not found",
				fmt.Sprintf("The cluster has no storage class %q; it has: %s.", t.Name, listOrNone(names)))
			return "", 0, false
		}
		if err != nil {
			resp.Diagnostics.AddError("Reading storage class "+t.Name+" failed", err.Error())
			return "", 0, false
		}
	case targetClaim:
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
			resp.Diagnostics.AddAttributeError(path.Root("claim"), "Claim not found",
				fmt.Sprintf("Namespace %q has no PersistentVolumeClaim %q; it has: %s.", t.Namespace, t.Name, listOrNone(names)))
			return "", 0, false
		}
		if err != nil {
			resp.Diagnostics.AddError("Reading claim "+t.Namespace+"/"+t.Name+" failed", err.Error())
			return "", 0, false
		}
	}
	if t.Node == "" {
		return "", 0, true
	}
	n, err := kube.GetNode(ctx, client, t.Node)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("node"), "Unknown node", err.Error())
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

func listOrNone(names []string) string {
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
