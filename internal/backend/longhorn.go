package backend

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// longhornSettings are the typed settings of a Longhorn install.
type longhornSettings struct {
	DefaultReplicaCount int64
	DefaultDataLocality string
	DefaultDataPath     string
	DefaultClass        bool
	UIEnabled           bool
}

const (
	defaultLonghornReplicas = 3
	defaultLonghornLocality = "disabled"
	defaultLonghornDataPath = "/var/lib/longhorn/"

	// The StorageClass Longhorn renders (from ConfigMap longhorn-storageclass) and the Setting
	// that guards its uninstall.
	longhornClassName      = "longhorn"
	longhornClassConfigMap = "longhorn-storageclass"
	// The ConfigMap of default settings longhorn-manager applies to its Setting objects.
	longhornDefaultSettingConfigMap = "longhorn-default-setting"
	longhornDefaultSettingKey       = "default-setting.yaml"
	longhornDeletingFlag            = "deleting-confirmation-flag"
)

func defaultLonghornSettings() longhornSettings {
	return longhornSettings{
		DefaultReplicaCount: defaultLonghornReplicas,
		DefaultDataLocality: defaultLonghornLocality,
		DefaultDataPath:     defaultLonghornDataPath,
		DefaultClass:        true,
		UIEnabled:           true,
	}
}

// value is the value of one typed setting and whether to write it (the UI's replica count is
// written only to turn the UI off).
func (s longhornSettings) value(setting string) (any, bool) {
	switch setting {
	case settingReplicas:
		return s.DefaultReplicaCount, true
	case settingLocality:
		return s.DefaultDataLocality, true
	case settingDataPath:
		return s.DefaultDataPath, true
	case settingDefaultClass:
		return s.DefaultClass, true
	case settingUI:
		return 0, !s.UIEnabled
	}
	return nil, false
}

// values maps the settings onto the value keys of the given chart version (engines.go's table).
func (s longhornSettings) values(chartVersion string) (map[string]any, error) {
	e := engines[typeLonghorn]
	r, err := e.rangeFor(chartVersion)
	if err != nil {
		return nil, err
	}
	return typedValues(e, r, chartVersion, "longhorn", s.value)
}

// longhornFromValues reads the settings back from a release's user-supplied values (import),
// from the first key of each setting in the chart version's range.
func longhornFromValues(chartVersion string, live map[string]any) longhornSettings {
	s := defaultLonghornSettings()
	r, err := engines[typeLonghorn].rangeFor(chartVersion)
	if err != nil {
		return s
	}
	first := func(setting string) string { return r.keysFor(setting)[0].Key }
	s.DefaultReplicaCount = lookupInt(live, first(settingReplicas), s.DefaultReplicaCount)
	s.DefaultDataLocality = lookupString(live, first(settingLocality), s.DefaultDataLocality)
	s.DefaultDataPath = lookupString(live, first(settingDataPath), s.DefaultDataPath)
	s.DefaultClass = lookupBool(live, first(settingDefaultClass), s.DefaultClass)
	s.UIEnabled = lookupInt(live, first(settingUI), 1) != 0
	return s
}

// Longhorn's custom resources the provider reads or changes.
var (
	longhornSettingGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "settings"}
	longhornVolumeGVR  = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}
)

// longhornVolumes lists Longhorn's own volumes (volumes.longhorn.io, any namespace) that are not
// among listed already as the volume handle of a PersistentVolume: volumes made in Longhorn's UI
// or left after their PersistentVolume was deleted. Without the CRD there are none.
func (r *Resource) longhornVolumes(ctx context.Context, listed []guardedVolume) ([]guardedVolume, error) {
	dyn, err := r.data.Kube.Dynamic()
	if err != nil {
		return nil, err
	}
	list, err := dyn.Resource(longhornVolumeGVR).Namespace("").List(ctx, metav1.ListOptions{})
	if kube.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing volumes.longhorn.io: %w", err)
	}
	// Longhorn names a PV's volume after the PV (its CSI volumeHandle).
	known := map[string]bool{}
	for _, v := range listed {
		if v.Kind == "PersistentVolume" {
			known[v.Name] = true
		}
	}
	var out []guardedVolume
	for _, item := range list.Items {
		pvName, _, _ := unstructured.NestedString(item.Object, "status", "kubernetesStatus", "pvName")
		if known[item.GetName()] || (pvName != "" && known[pvName]) {
			continue
		}
		state, _, _ := unstructured.NestedString(item.Object, "status", "state")
		v := guardedVolume{Kind: "Longhorn volume", Name: item.GetNamespace() + "/" + item.GetName(), Driver: longhornDriver, State: state}
		if ns, _, _ := unstructured.NestedString(item.Object, "status", "kubernetesStatus", "namespace"); ns != "" {
			if pvc, _, _ := unstructured.NestedString(item.Object, "status", "kubernetesStatus", "pvcName"); pvc != "" {
				v.Claim = ns + "/" + pvc
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// confirmLonghornDeletion sets Longhorn's deleting-confirmation-flag to "true" where Longhorn
// keeps it, without a Helm upgrade (an upgrade runs the chart's pre-upgrade hook first, which
// with the real chart made destroy time out): on its Setting object (settings.longhorn.io, what
// the chart's pre-delete hook, `longhorn-manager uninstall`, checks), by a merge patch; and in
// the ConfigMap longhorn-default-setting that longhorn-manager applies to the Setting objects,
// so that a manager syncing it cannot set the flag back. It is called only once the destroy
// guard passed (or with force_destroy). What does not exist (longhorn-manager never ran, a chart
// without the ConfigMap) is skipped; the uninstall then says why it cannot proceed.
func (r *Resource) confirmLonghornDeletion(ctx context.Context, client kubernetes.Interface, namespace string) diag.Diagnostics {
	var diags diag.Diagnostics
	fail := func(what string, err error) {
		diags.AddError("Setting Longhorn's "+longhornDeletingFlag+" failed",
			fmt.Sprintf("Longhorn refuses to uninstall unless %s is \"true\", and setting it failed: %v. Nothing was uninstalled. "+
				"Check that longhorn-manager (and its admission webhook) runs in namespace %s, then destroy again.", what, err, namespace))
	}
	setting := "settings.longhorn.io " + namespace + "/" + longhornDeletingFlag
	dyn, err := r.data.Kube.Dynamic()
	if err != nil {
		fail(setting, err)
		return diags
	}
	got, err := dyn.Resource(longhornSettingGVR).Namespace(namespace).Patch(ctx, longhornDeletingFlag,
		k8stypes.MergePatchType, []byte(`{"value":"true"}`), metav1.PatchOptions{})
	switch {
	case kube.IsNotFound(err):
		tflog.Warn(ctx, "Longhorn has no "+longhornDeletingFlag+" Setting to set before the uninstall", map[string]any{"namespace": namespace})
	case err != nil:
		fail(setting, err)
		return diags
	default:
		if v, _, _ := unstructured.NestedString(got.Object, "value"); v != "true" {
			fail(setting, fmt.Errorf("after the patch its value is %q", v))
			return diags
		}
		tflog.Info(ctx, "set Longhorn setting "+longhornDeletingFlag+" to true", map[string]any{"namespace": namespace})
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, longhornDefaultSettingConfigMap, metav1.GetOptions{})
		if err != nil {
			return err
		}
		settings := map[string]any{}
		if err := yaml.Unmarshal([]byte(cm.Data[longhornDefaultSettingKey]), &settings); err != nil {
			return fmt.Errorf("%s is not a YAML mapping: %w", longhornDefaultSettingKey, err)
		}
		if fmt.Sprint(settings[longhornDeletingFlag]) == "true" {
			return nil
		}
		settings[longhornDeletingFlag] = "true"
		text, err := yaml.Marshal(settings)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[longhornDefaultSettingKey] = string(text)
		_, err = client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	switch {
	case kube.IsNotFound(err):
	case err != nil:
		fail("the "+longhornDeletingFlag+" line of ConfigMap "+namespace+"/"+longhornDefaultSettingConfigMap, err)
	default:
		tflog.Info(ctx, "set "+longhornDeletingFlag+" to true in ConfigMap "+longhornDefaultSettingConfigMap, map[string]any{"namespace": namespace})
	}
	return diags
}

// prepareLonghornClassChange deletes the `longhorn` StorageClass before an upgrade that changes
// its parameters, when Helm itself manages the class: a StorageClass's parameters are immutable,
// so Helm could not patch it. (Real Longhorn renders the class only into a ConfigMap and its
// manager re-creates the class; there this does nothing.)
func prepareLonghornClassChange(ctx context.Context, client kubernetes.Interface, live *helm.Status, values map[string]any) diag.Diagnostics {
	var diags diag.Diagnostics
	objs, err := live.Objects()
	if err != nil {
		return diags
	}
	direct := false
	for _, o := range objs {
		if o.Kind == "StorageClass" && o.Name == longhornClassName && o.EmbeddedIn == "" {
			direct = true
		}
	}
	if !direct {
		return diags
	}
	sc, err := client.StorageV1().StorageClasses().Get(ctx, longhornClassName, metav1.GetOptions{})
	if err != nil {
		return diags
	}
	wantReplicas := fmt.Sprint(lookupInt(values, keyLonghornClassReplicas, defaultLonghornReplicas))
	wantLocality := lookupString(values, keyLonghornClassLocality, defaultLonghornLocality)
	if sc.Parameters["numberOfReplicas"] == wantReplicas && sc.Parameters["dataLocality"] == wantLocality {
		return diags
	}
	tflog.Info(ctx, "deleting StorageClass longhorn before the upgrade: its parameters change and are immutable",
		map[string]any{"numberOfReplicas": wantReplicas, "dataLocality": wantLocality})
	if err := client.StorageV1().StorageClasses().Delete(ctx, longhornClassName, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
		diags.AddError("Deleting StorageClass longhorn failed",
			"Its parameters change with this upgrade and cannot be patched, so it is re-created: "+err.Error()+
				". Delete it by hand (`kubectl delete storageclass longhorn`; its volumes are not affected) and apply again.")
	}
	return diags
}
