package capacity

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var (
	_ datasource.DataSourceWithConfigure      = &DataSource{}
	_ datasource.DataSourceWithValidateConfig = &DataSource{}
)

// DefaultReadTimeout bounds a read unless timeouts.read says otherwise.
const DefaultReadTimeout = 2 * time.Minute

// maxParallel is how many nodes are measured at once.
const maxParallel = 8

// NewDataSource returns the clusterstorage_storage_capacity data source.
func NewDataSource() datasource.DataSource {
	return &DataSource{}
}

// DataSource reads free space and disk kind for a node path, a StorageClass or a backend.
type DataSource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (d *DataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_storage_capacity"
}

// Configure receives the provider's shared clients and node access.
func (d *DataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks, at plan time, that exactly one target is set and what goes with it.
func (d *DataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.anyUnknown() {
		return
	}
	_, diags := m.request(ctx)
	resp.Diagnostics.Append(diags...)
}

// Read measures the target.
func (d *DataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r, diags := m.request(ctx)
	resp.Diagnostics.Append(diags...)
	timeout, diags := m.Timeouts.Read(ctx, DefaultReadTimeout)
	resp.Diagnostics.Append(diags...)
	client := d.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx = tflog.SetField(ctx, "capacity_target", r.ID())
	m.ID = types.StringValue(r.ID())

	switch {
	case r.Kind == targetNodePath:
		nodes := selectNodes(ctx, client, r.Nodes, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		fss := d.probeAll(ctx, nodes, r.Path, false, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		m.setFilesystems(fss)
		m.Summary = types.StringValue(summarizeFilesystems("node_path "+r.Path, fss))

	case r.Kind == targetStorageClass:
		c, err := readClass(ctx, client, r.Class)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("storage_class"), "Cannot read the capacity of storage class "+r.Class, err.Error())
			return
		}
		m.setClass(c)
		m.Summary = types.StringValue(summarizeClass(c))

	case r.Backend.Type == catalog.BackendLonghorn:
		nodes := d.readLonghorn(ctx, client, r, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		m.setLonghorn(nodes)
		m.Summary = types.StringValue(summarizeLonghorn(r.Backend.Namespace, nodes))

	default: // OpenEBS hostpath
		base := r.Backend.BasePath
		if base == "" {
			var err error
			if base, err = openEBSBasePath(ctx, client, r.Backend.Namespace); err != nil {
				resp.Diagnostics.AddAttributeError(path.Root("backend"), "Cannot find the OpenEBS hostpath base path", err.Error())
				return
			}
		}
		nodes := selectNodes(ctx, client, r.Nodes, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		fss := d.probeAll(ctx, nodes, base, true, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		m.setFilesystems(fss)
		m.Summary = types.StringValue(summarizeFilesystems("OpenEBS hostpath base path "+base, fss))
	}
	tflog.Debug(ctx, "capacity read", map[string]any{"summary": m.Summary.ValueString()})
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// selectNodes returns the named nodes, or every node when names is nil. A name the cluster does
// not have is an error on its element of `nodes`.
func selectNodes(ctx context.Context, client kubernetes.Interface, names []string, diags *diag.Diagnostics) []*corev1.Node {
	if names == nil {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			diags.AddError("Listing nodes failed", err.Error())
			return nil
		}
		out := make([]*corev1.Node, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out
	}
	out := make([]*corev1.Node, 0, len(names))
	for i, name := range names {
		n, err := kube.GetNode(ctx, client, name)
		if err != nil {
			diags.AddAttributeError(path.Root("nodes").AtListIndex(i), "Unknown node", err.Error())
			continue
		}
		out = append(out, n)
	}
	return out
}

// probeAll measures the filesystem of p on every node, maxParallel at a time, over the
// provider's shared SSH pool. Each node's failure is a diagnostic of its own.
func (d *DataSource) probeAll(ctx context.Context, nodes []*corev1.Node, p string, ancestor bool, diags *diag.Diagnostics) map[string]Filesystem {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		out  = map[string]Filesystem{}
		errs = map[string]error{}
		sem  = make(chan struct{}, maxParallel)
	)
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fs, err := d.probeNode(ctx, n, p, ancestor)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[n.Name] = err
				return
			}
			out[n.Name] = fs
		}()
	}
	wg.Wait()
	for _, name := range sortedKeys(errs) {
		err := errs[name]
		if errors.Is(err, ErrPathMissing) {
			diags.AddAttributeError(path.Root("node_path"), "Path not found on node "+name,
				fmt.Sprintf("On node %q, %v: create it, or name a path that exists.", name, err))
			continue
		}
		diags.AddError("Cannot measure "+p+" on node "+name, err.Error())
	}
	return out
}

func (d *DataSource) probeNode(ctx context.Context, n *corev1.Node, p string, ancestor bool) (Filesystem, error) {
	host, err := d.data.HostFor(n)
	if err != nil {
		return Filesystem{}, err
	}
	tflog.Debug(ctx, "measuring a filesystem over SSH", map[string]any{"node": n.Name, "host": host.String(), "path": p})
	fs, err := Probe(ctx, host, p, ancestor)
	if err != nil {
		return Filesystem{}, err
	}
	tflog.Debug(ctx, "filesystem measured", map[string]any{"node": n.Name, "mount_point": fs.MountPoint, "device": fs.Device,
		"available_bytes": fs.AvailableBytes, "block_devices": strings.Join(fs.BlockDevices, ",")})
	return fs, nil
}

// readLonghorn reads Longhorn's node objects, limited to r.Nodes when set (each must have one).
func (d *DataSource) readLonghorn(ctx context.Context, client kubernetes.Interface, r request, diags *diag.Diagnostics) map[string]LonghornNode {
	var wanted []*corev1.Node
	if r.Nodes != nil {
		if wanted = selectNodes(ctx, client, r.Nodes, diags); diags.HasError() {
			return nil
		}
	}
	dyn, err := d.data.Kube.Dynamic()
	if err != nil {
		diags.AddError("Cannot reach the Kubernetes cluster", err.Error())
		return nil
	}
	all, err := readLonghorn(ctx, dyn, r.Backend.Namespace)
	if err != nil {
		diags.AddAttributeError(path.Root("backend"), "Cannot read Longhorn's nodes", err.Error())
		return nil
	}
	if wanted == nil {
		return all
	}
	out := map[string]LonghornNode{}
	for i, n := range wanted {
		ln, ok := all[n.Name]
		if !ok {
			diags.AddAttributeError(path.Root("nodes").AtListIndex(i), "Node not in Longhorn",
				fmt.Sprintf("Longhorn in namespace %s has no node object for %q (it has: %s): Longhorn's manager does not run there, or the node is new.",
					r.Backend.Namespace, n.Name, listOrNone(sortedKeys(all))))
			continue
		}
		out[n.Name] = ln
	}
	return out
}
