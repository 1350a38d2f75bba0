package backend

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// GitOps tools that install Helm charts mark what they manage, and undo any other tool's change
// to it: Flux's helm-controller labels the objects of the releases of its HelmReleases with the
// HelmRelease's name and namespace; Argo CD tracks an Application's objects by an annotation
// (tracking method "annotation", "annotation+label") or by the app.kubernetes.io/instance label
// (tracking method "label", whose objects also carry argocd.argoproj.io/ marks). A release so
// marked is refused at plan and at import, naming the owner, as a k3s HelmChart's is
// (helmchart.go).
const (
	fluxNameLabel      = "helm.toolkit.fluxcd.io/name"
	fluxNamespaceLabel = "helm.toolkit.fluxcd.io/namespace"
	argoTrackingID     = "argocd.argoproj.io/tracking-id"
	argoMarkPrefix     = "argocd.argoproj.io/"
	instanceLabel      = "app.kubernetes.io/instance"
)

// gitOpsOwner is a GitOps tool's object that manages a release, and the objects that say so.
type gitOpsOwner struct {
	tool    string // "Flux" or "Argo CD"
	owner   string // "HelmRelease flux-system/openebs", "Application openebs"
	objects []string
	marks   []string // the label and annotation keys to remove once the tool has let go
}

// gitOpsOwners returns who manages a release by the marks on its live objects and on the
// release itself (releaseLabels: its Helm release labels, on its storage Secret), sorted.
func gitOpsOwners(releaseLabels map[string]string, objs []*unstructured.Unstructured) []*gitOpsOwner {
	byOwner := map[string]*gitOpsOwner{}
	add := func(tool, owner, object string, marks ...string) {
		key := tool + " " + owner
		o, ok := byOwner[key]
		if !ok {
			o = &gitOpsOwner{tool: tool, owner: owner}
			byOwner[key] = o
		}
		o.objects = append(o.objects, object)
		for _, m := range marks {
			if !slices.Contains(o.marks, m) {
				o.marks = append(o.marks, m)
			}
		}
	}
	check := func(object string, labels, annotations map[string]string) {
		if name, ok := labels[fluxNameLabel]; ok {
			owner := "HelmRelease " + name
			if ns := labels[fluxNamespaceLabel]; ns != "" {
				owner = "HelmRelease " + ns + "/" + name
			}
			add("Flux", owner, object, fluxNameLabel, fluxNamespaceLabel)
		} else if ns, ok := labels[fluxNamespaceLabel]; ok {
			add("Flux", "a HelmRelease of namespace "+ns, object, fluxNamespaceLabel)
		}
		if id, ok := annotations[argoTrackingID]; ok {
			app, _, _ := strings.Cut(id, ":")
			add("Argo CD", "Application "+strings.Replace(app, "_", "/", 1), object, argoTrackingID)
			return
		}
		if app, ok := labels[instanceLabel]; ok {
			var marks []string
			for _, m := range [2]map[string]string{labels, annotations} {
				for k := range m {
					if strings.HasPrefix(k, argoMarkPrefix) {
						marks = append(marks, k)
					}
				}
			}
			if len(marks) > 0 {
				sort.Strings(marks)
				add("Argo CD", "Application "+app, object, append(marks, instanceLabel)...)
			}
		}
	}
	check("the release's storage Secret (its Helm release labels)", releaseLabels, nil)
	for _, o := range objs {
		name := o.GetKind() + "/" + o.GetName()
		if o.GetNamespace() != "" {
			name = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		check(name, o.GetLabels(), o.GetAnnotations())
	}
	out := make([]*gitOpsOwner, 0, len(byOwner))
	for _, o := range byOwner {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].tool+out[i].owner < out[j].tool+out[j].owner })
	return out
}

// gitOpsGuard refuses to install over or import (what) release st while Flux or Argo CD manages
// it. Objects that cannot be read are a warning: the check is a convenience, the user may know
// better.
func gitOpsGuard(ctx context.Context, hc *helm.Client, st *helm.Status, what string) diag.Diagnostics {
	var diags diag.Diagnostics
	id := st.Namespace + "/" + st.Name
	objs, err := hc.LiveObjects(ctx, st)
	if err != nil {
		tflog.Warn(ctx, "cannot read the release's objects for GitOps marks", map[string]any{"error": err.Error()})
		diags.AddWarning("Could not check whether Flux or Argo CD manages release "+id,
			"Reading the release's objects failed: "+err.Error()+". If Flux or Argo CD manages this release, it and this provider will undo each other's changes.")
		objs = nil
	}
	for _, o := range gitOpsOwners(st.Labels, objs) {
		diags.AddError(fmt.Sprintf("Release %s is managed by %s", id, o.tool), gitOpsDetail(id, o, what))
	}
	return diags
}

// gitOpsDetail says who manages release id and how to hand it over.
func gitOpsDetail(id string, o *gitOpsOwner, what string) string {
	shown := o.objects
	more := ""
	if len(shown) > 3 {
		shown, more = shown[:3], fmt.Sprintf(" and %d more", len(o.objects)-3)
	}
	handOver := "suspend it (`flux suspend helmrelease`: a suspended HelmRelease that is deleted leaves its release installed), remove it " +
		"from the Git source it comes from and delete it"
	if o.tool == "Argo CD" {
		handOver = "remove the release's objects from the Application without deleting them (turn off automated sync and prune, take the chart " +
			"out of the Application's sources, or delete the Application with `argocd app delete --cascade=false`)"
	}
	return fmt.Sprintf("%s %s manages release %s: its marks are on %s%s. %s applies the release's chart itself and undoes any other "+
		"tool's change, so it and this provider would undo each other's changes. Nothing was changed by %s it.\n\n"+
		"To hand the release over to Terraform: first %s; then remove the marks %s from those objects "+
		"(`kubectl label` / `kubectl annotate` with <key>-) and run this again. To keep %s in charge instead, change the release "+
		"there and leave it out of Terraform.",
		o.tool, o.owner, id, strings.Join(shown, ", "), more, o.tool, what, handOver, strings.Join(o.marks, ", "), o.tool)
}
