package backend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/listres"
)

var _ list.ListResourceWithConfigure = &ListResource{}

// Helm (v3 and v4) keeps each revision of a release in a Secret of this type, labelled
// owner=helm, name=<release>, version=<revision>, status=<status> (its default storage driver).
const (
	helmReleaseSecretType = "helm.sh/release.v1"
	helmReleaseSelector   = "owner=helm"
)

// NewListResource returns the clusterstorage_storage_backend list resource, for `terraform query`
// (Terraform 1.14+).
func NewListResource() list.ListResource {
	return &ListResource{listres.Base{TypeSuffix: "_storage_backend", What: "storage backends"}}
}

// ListResource lists the Longhorn and OpenEBS Helm releases on the cluster by their release
// records, whoever installed them, each with its identity and, with include_resource, the state an
// import of it records (ImportState, then the adoption of Read: model.adopt and observe), so that
// `terraform query -generate-config-out` writes a configuration that plans no change. A release a
// k3s HelmChart, a Flux HelmRelease or an Argo CD Application manages is not offered for import
// (an import refuses it): it is reported as a warning naming that owner, which Terraform shows and
// leaves out of the results and of the generated configuration.
type ListResource struct {
	listres.Base
}

type listModel struct {
	Namespace types.String `tfsdk:"namespace"`
	Type      types.String `tfsdk:"type"`
}

// ListResourceConfigSchema describes the list block's `config`.
func (r *ListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listres.Schema("The Longhorn and OpenEBS Helm releases `clusterstorage_storage_backend` can adopt, for `terraform query` (Terraform 1.14+), "+
		"found by their Helm release records (Secrets of type `"+helmReleaseSecretType+"`), whoever installed them: the helm CLI, "+
		"hashicorp/helm's `helm_release`, this provider. Each comes with its identity, and with `include_resource = true` the settings an "+
		"import records (the type, the chart version and the typed `openebs`/`longhorn` settings read back from the release's values), so that "+
		"`terraform query -generate-config-out=generated.tf` writes resource and import blocks that plan no change.\n\n"+
		"A release that a k3s HelmChart, a Flux HelmRelease or an Argo CD Application manages is not offered for import (an import refuses it, "+
		"as the two would undo each other's changes): the query shows a warning naming the release and its owner instead, and the generated "+
		"configuration leaves it out.\n\n"+
		"The provider's credentials need `list` on Secrets (in the namespace given, or cluster-wide), and `list` on `helmcharts.helm.cattle.io` "+
		"where k3s's HelmChart kind exists.",
		map[string]listres.Filter{
			"namespace": {Description: "List only the releases of this namespace (default: every namespace)."},
			"type":      {Description: "List only the releases of this backend type: `longhorn` or `openebs` (the chart's name; default: both).", OneOf: []string{typeLonghorn, typeOpenEBS}},
		})
}

// List streams the releases, sorted by namespace and name.
func (r *ListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var config listModel
	if !r.Config(ctx, req, stream, &config) {
		return
	}
	hc, client, diags := (&Resource{data: r.Data}).clients(ctx)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	ns := config.Namespace.ValueString()
	found, err := releaseNames(ctx, client, ns)
	if err != nil {
		where := "in every namespace"
		if ns != "" {
			where = "in namespace " + ns
		}
		listres.Fail(stream, "Listing Helm releases failed",
			"Listing the Helm release records (Secrets of type "+helmReleaseSecretType+") "+where+" failed: "+err.Error()+
				". The provider's credentials need list access to Secrets there.")
		return
	}
	var releases []*helm.Status
	for _, id := range found {
		st, err := hc.Get(id[1], id[0])
		if err != nil {
			// Gone since the list, or a record Helm cannot read: not a backend to adopt.
			tflog.Debug(ctx, "not listing a Helm release", map[string]any{"release": id[0] + "/" + id[1], "error": err.Error()})
			continue
		}
		if t := backendType(st.ChartName); t == "" || (!config.Type.IsNull() && t != config.Type.ValueString()) {
			continue
		}
		releases = append(releases, st)
	}
	tflog.Debug(ctx, "listing storage backends", map[string]any{"namespace": ns, "type": config.Type.ValueString(),
		"found": len(releases), "of": len(found)})
	listres.Stream(ctx, req, stream, releases, listres.Results[*helm.Status]{
		DisplayName: func(st *helm.Status) string { return st.Namespace + "/" + st.Name + " (" + releaseSummary(st) + ")" },
		Identity: func(ctx context.Context, st *helm.Status, id *tfsdk.ResourceIdentity) diag.Diagnostics {
			return setIdentity(ctx, id, model{Namespace: types.StringValue(st.Namespace), ReleaseName: types.StringValue(st.Name)})
		},
		Imported: func(ctx context.Context, st *helm.Status, res *list.ListResult) diag.Diagnostics {
			return imported(ctx, hc, st, res)
		},
		NotOffered: func(ctx context.Context, st *helm.Status, diags *diag.Diagnostics) (string, string) {
			owner, detail := r.owner(ctx, hc, st, diags)
			if owner == "" {
				return "", ""
			}
			return fmt.Sprintf("Not offered for import: %s (%s), managed by %s", st.Namespace+"/"+st.Name, releaseSummary(st), owner), detail
		},
	})
}

// releaseNames returns the releases ([namespace, name]) that have Helm release records in
// namespace ("" for all), sorted.
func releaseNames(ctx context.Context, client kubernetes.Interface, namespace string) ([][2]string, error) {
	var out [][2]string
	opts := metav1.ListOptions{LabelSelector: helmReleaseSelector, FieldSelector: "type=" + helmReleaseSecretType}
	for {
		secrets, err := client.CoreV1().Secrets(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, s := range secrets.Items {
			if name := s.Labels["name"]; name != "" && !slices.Contains(out, [2]string{s.Namespace, name}) {
				out = append(out, [2]string{s.Namespace, name})
			}
		}
		if secrets.Continue == "" {
			break
		}
		opts.Continue = secrets.Continue
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	return out, nil
}

// backendType is the backend type of a release of chart ("" for a chart of neither): the rule
// model.adopt imports by.
func backendType(chart string) string {
	switch chart {
	case "longhorn":
		return typeLonghorn
	case "openebs":
		return typeOpenEBS
	}
	return ""
}

// owner names who manages release st besides Helm (a k3s HelmChart, Flux, Argo CD), with the
// hand-over advice an import of it gives, or "" when none does: the checks of an import's Read
// (helmControllerGuard, gitOpsGuard). A check that cannot run is a warning on the result.
func (r *ListResource) owner(ctx context.Context, hc *helm.Client, st *helm.Status, diags *diag.Diagnostics) (string, string) {
	s := spec{Namespace: st.Namespace, ReleaseName: st.Name}
	if dyn, err := r.Data.Kube.Dynamic(); err == nil {
		charts, err := managingHelmCharts(ctx, dyn, s.Namespace, s.ReleaseName)
		if err != nil {
			diags.AddWarning("Could not check for a k3s HelmChart managing release "+s.id(),
				"Listing helmcharts.helm.cattle.io failed: "+err.Error()+". If k3s's helm-controller manages this release, an import of it is refused.")
		}
		if len(charts) > 0 {
			d := helmControllerError(s, charts, "listing")
			return "k3s's helm-controller (HelmChart " + strings.Join(charts, ", ") + ")", d[0].Detail()
		}
	}
	objs, err := hc.LiveObjects(ctx, st)
	if err != nil {
		diags.AddWarning("Could not check whether Flux or Argo CD manages release "+s.id(),
			"Reading the release's objects failed: "+err.Error()+". If Flux or Argo CD manages this release, an import of it is refused.")
		objs = nil
	}
	if owners := gitOpsOwners(st.Labels, objs); len(owners) > 0 {
		o := owners[0]
		return o.tool + " (" + o.owner + ")", gitOpsDetail(s.id(), o, "listing")
	}
	return "", ""
}

// imported sets the result's resource to what an import of st records: the state ImportState
// starts from, adopted and observed as the Read after an import does it.
func imported(ctx context.Context, hc *helm.Client, st *helm.Status, res *list.ListResult) diag.Diagnostics {
	return listres.Imported(ctx, res, st.Namespace+"/"+st.Name, func(m *model, diags *diag.Diagnostics) {
		m.Namespace, m.ReleaseName = types.StringValue(st.Namespace), types.StringValue(st.Name)
		if err := m.adopt(st); err != nil {
			diags.AddError("Cannot import storage backend "+st.Namespace+"/"+st.Name, err.Error())
			return
		}
		diags.Append(observe(ctx, hc, m, st)...)
	})
}

// releaseSummary is "<chart> <version>, revision <n>, <status>[, installed by this provider]".
func releaseSummary(st *helm.Status) string {
	s := fmt.Sprintf("%s %s, revision %d, %s", st.ChartName, st.ChartVersion, st.Revision, st.Status)
	if st.OwnedBy(releaseOwner) {
		s += ", installed by this provider"
	}
	return s
}
