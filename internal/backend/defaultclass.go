package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// k3sDefaultClassNote says why a demoted k3s local-path class may be default again later.
const k3sDefaultClassNote = "On k3s, the `local-path` class gets its default mark back whenever k3s restarts (k3s rewrites and " +
	"re-applies its packaged local-storage manifest on startup) unless that add-on is disabled: start k3s with " +
	"`--disable local-storage`, or put `disable: [local-storage]` in /etc/rancher/k3s/config.yaml."

// defaultClassOf returns the StorageClass the backend's values make the cluster's default, if
// any. Longhorn's is the class it renders into ConfigMap longhorn-storageclass (always
// `longhorn` in the real chart; longhorn-manager creates it after the install, which does not
// matter here: only the other classes are changed).
func defaultClassOf(s spec, values map[string]any, objs []helm.Object) (string, bool) {
	switch s.Type {
	case typeLonghorn:
		class := longhornClassName
		for _, o := range objs {
			if o.Kind == "StorageClass" && o.EmbeddedIn == "ConfigMap/"+longhornClassConfigMap {
				class = o.Name
				break
			}
		}
		return class, lookupBool(values, keyLonghornDefaultClass, true)
	case typeOpenEBS:
		return lookupString(values, keyHostpathClassName, defaultHostpathClassName), lookupBool(values, keyHostpathDefault, false)
	}
	return "", false
}

// demoteOtherDefaults, when the backend's class is the default, takes the default mark from
// every other class in the same apply (as clusterstorage_storage_class does), so claims without
// a class get the backend's. What it changed is a warning.
func demoteOtherDefaults(ctx context.Context, client kubernetes.Interface, s spec, st *helm.Status) diag.Diagnostics {
	var diags diag.Diagnostics
	objs, err := st.Objects()
	if err != nil {
		objs = nil // the default class name then falls back to the chart's own default
	}
	class, isDefault := defaultClassOf(s, st.Values, objs)
	if !isDefault {
		return diags
	}
	demoted, err := kube.DemoteDefaultClasses(ctx, client, class)
	if err != nil {
		diags.AddError("Removing the default mark from other StorageClasses failed",
			fmt.Sprintf("The %s backend makes %s the default class, but the other classes could not be checked: %v. "+
				"Apply again, or set the typed default-class setting to false.", s.Type, class, err))
		return diags
	}
	var names []string
	for _, d := range demoted {
		if d.Err != nil {
			diags.AddError("Removing the default mark from StorageClass "+d.Name+" failed",
				fmt.Sprintf("%s is the default class now, but %s still claims to be: %v. Remove its %s annotation by hand "+
					"(`kubectl annotate storageclass %s %s-`) or apply again.", class, d.Name, d.Err, kube.DefaultClassAnnotation, d.Name, kube.DefaultClassAnnotation))
			continue
		}
		tflog.Info(ctx, "removed the default mark from another StorageClass", map[string]any{"name": d.Name, "new_default": class})
		names = append(names, d.Name)
	}
	if len(names) > 0 {
		diags.AddWarning("Default StorageClass is now "+class,
			fmt.Sprintf("The %s backend makes %s the cluster's default class, so the default mark was removed from: %s. %s",
				s.Type, class, strings.Join(names, ", "), k3sDefaultClassNote))
	}
	return diags
}
