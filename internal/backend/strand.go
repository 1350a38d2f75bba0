package backend

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// subchartDrivers maps the OpenEBS subcharts that install a CSI driver to that driver (each one
// of backendDrivers[typeOpenEBS]): the floor under the drivers the release's manifest declares
// for each (partFloor, releaseDriverSet.ofEngines). The hostpath provisioner (localpv-provisioner)
// has no condition: it is never turned off, only its base path moves.
var subchartDrivers = map[string]string{
	"mayastor":        "io.openebs.csi-mayastor",
	"lvm-localpv":     "local.csi.openebs.io",
	"zfs-localpv":     "zfs.csi.openebs.io",
	"rawfile-localpv": "rawfile.csi.openebs.io",
}

// strand is one change of an update that leaves volumes without their driver or their data path.
type strand struct {
	// Drivers whose volumes the change strands: for an engine turned off, those of its subchart
	// (releaseDriverSet.ofEngines).
	Drivers []string
	// Class, when set, limits them to the volumes of that StorageClass (the hostpath class,
	// whose base path moves); "" is every volume of the driver.
	Class string
	// Why names the change, e.g. "mayastor_enabled turns from true to false".
	Why string
	// Lost says what the volumes lose.
	Lost string
	// DataEngine, when set, limits them to the Longhorn volumes of that data engine ("v2").
	DataEngine string
}

// strandedBy lists the changes from the installed release (its chart version, its chart's
// values and the user-supplied values) to the planned one (the chart archive's values and the
// planned values) that strand volumes: an engine turned off (a typed toggle or a raw value of its
// dependency condition, the chart's own default where unset: engineOn), a chart version without
// the subchart of an engine that is on, Longhorn's v2 data engine turned off, OpenEBS's hostpath
// base path or Longhorn's default data path changing. An engine's drivers are those the
// installed release's manifest declares for its subchart with the table's as a floor (drivers,
// ofEngines). A version outside the table is read with the planned version's layout; nil chart
// values fall back to the table's defaults.
func strandedBy(backendType string, drivers releaseDriverSet, fromVersion string, fromChart, from map[string]any, toVersion string, toChart, to map[string]any) []strand {
	e, ok := engines[backendType]
	if !ok {
		return nil
	}
	rt, err := e.rangeFor(toVersion)
	if err != nil {
		return nil // refused on its own (rangeFor's error) before anything is upgraded
	}
	rf, err := e.rangeFor(fromVersion)
	if err != nil {
		rf = rt
	}
	var out []strand
	switch backendType {
	case typeOpenEBS:
		var gone, whys []string
		for _, d := range rf.Dependencies {
			if _, ok := subchartDrivers[d.Path]; !ok || !rf.installs(d, fromChart, from) {
				continue
			}
			nd, has := rt.dependency(d.Path)
			switch {
			case !has:
				gone, whys = append(gone, d.Path), append(whys, fmt.Sprintf("openebs chart %s has no %s subchart, which %s installs", toVersion, d.Path, fromVersion))
			case !rt.installs(nd, toChart, to):
				gone, whys = append(gone, d.Path), append(whys, rt.toggleName(nd.Condition)+" turns from true to false")
			}
		}
		of := drivers.ofEngines(gone)
		for i, p := range gone {
			if len(of[p]) > 0 {
				out = append(out, strand{Drivers: of[p], Why: whys[i], Lost: "their CSI driver is uninstalled"})
			}
		}
		oldBase := rf.stringValue(settingHostpathBase, from, defaultHostpathBasePath)
		newBase := rt.stringValue(settingHostpathBase, to, defaultHostpathBasePath)
		if path.Clean(oldBase) != path.Clean(newBase) {
			out = append(out, strand{Drivers: []string{hostpathDriver}, Class: rf.stringValue(settingHostpathName, from, defaultHostpathClassName),
				Why:  fmt.Sprintf("hostpath_base_path changes from %s to %s", oldBase, newBase),
				Lost: "their data stays under the old base path, which the hostpath class no longer names"})
		}
	case typeLonghorn:
		if longhornV2On(fromChart, from) && !longhornV2On(toChart, to) {
			out = append(out, strand{Drivers: []string{longhornDriver}, DataEngine: "v2",
				Why:  keyLonghornV2 + " turns from true to false",
				Lost: "Longhorn stops its v2 (SPDK) data engine, the only one that serves them"})
		}
		oldPath := rf.stringValue(settingDataPath, from, defaultLonghornDataPath)
		newPath := rt.stringValue(settingDataPath, to, defaultLonghornDataPath)
		if path.Clean(oldPath) != path.Clean(newPath) {
			out = append(out, strand{Drivers: []string{longhornDriver},
				Why:  fmt.Sprintf("default_data_path changes from %s to %s", oldPath, newPath),
				Lost: "their replicas' data stays on the disks under the old path, which Longhorn's default disk no longer names"})
		}
	}
	return out
}

// dependency returns the range's dependency on the subchart at path.
func (r chartRange) dependency(path string) (dependency, bool) {
	for _, d := range r.Dependencies {
		if d.Path == path {
			return d, true
		}
	}
	return dependency{}, false
}

// installs reports whether values install the dependency: it has no condition, or engineOn.
func (r chartRange) installs(d dependency, chartValues, values map[string]any) bool {
	return d.Condition == "" || engineOn(r, d.Condition, chartValues, values)
}

// toggleName is the typed setting a condition carries with its key ("mayastor_enabled
// (engines.replicated.mayastor.enabled)"), or the key alone.
func (r chartRange) toggleName(condition string) string {
	if k, ok := r.key(condition); ok && k.Setting != "" {
		return k.Setting + " (" + condition + ")"
	}
	return condition
}

// stringValue is a typed setting's value in values (its first key), def where unset or empty.
func (r chartRange) stringValue(setting string, values map[string]any, def string) string {
	keys := r.keysFor(setting)
	if len(keys) == 0 || keys[0].Key == "" {
		return def
	}
	return lookupString(values, keys[0].Key, def)
}

// strandGuard refuses an upgrade of the live release to toVersion (whose chart archive has the
// values toChart) with values to while it would strand volumes (strandedBy), naming each volume
// and object of the affected drivers (the destroy guard's listing, guard.go); with
// force_strand_volumes it lists them in a warning instead. The error it returns means the
// volumes could not be listed (no diagnostics then): at plan the check is left to the apply, at
// apply it is an error.
func (r *Resource) strandGuard(ctx context.Context, client kubernetes.Interface, s spec, live *helm.Status, toVersion string, toChart, to map[string]any) (diag.Diagnostics, error) {
	var diags diag.Diagnostics
	set, err := releaseDrivers(s.Type, live.Manifest)
	if err != nil {
		return diags, fmt.Errorf("reading the manifest of Helm release %s: %w", s.id(), err)
	}
	strands := strandedBy(s.Type, set, live.ChartVersion, live.ChartValues, live.Values, toVersion, toChart, to)
	if len(strands) == 0 {
		return diags, nil
	}
	internal, err := internalClaims(live)
	if err != nil {
		return diags, fmt.Errorf("reading the manifest of Helm release %s: %w", s.id(), err)
	}
	var drivers []string
	for _, st := range strands {
		for _, d := range st.Drivers {
			if !slices.Contains(drivers, d) {
				drivers = append(drivers, d)
			}
		}
	}
	vols, err := r.servedVolumes(ctx, client, drivers, internal)
	if err != nil {
		return diags, err
	}
	var sections []string
	for _, st := range strands {
		var lines []string
		for _, v := range vols {
			if slices.Contains(st.Drivers, v.Driver) && (st.Class == "" || v.Class == st.Class) && (st.DataEngine == "" || v.DataEngine == st.DataEngine) {
				lines = append(lines, "  - "+v.String())
			}
		}
		if len(lines) == 0 {
			continue
		}
		scope := strings.Join(st.Drivers, ", ")
		if st.Class != "" {
			scope += ", class " + st.Class
		}
		if st.DataEngine != "" {
			scope += ", data engine " + st.DataEngine
		}
		sections = append(sections, fmt.Sprintf("%s (%s): %s:\n%s", st.Why, scope, st.Lost, strings.Join(lines, "\n")))
	}
	if len(sections) == 0 {
		return diags, nil
	}
	list := strings.Join(sections, "\n")
	if s.ForceStrandVolumes {
		tflog.Warn(ctx, "updating although volumes lose their driver or data path (force_strand_volumes)", map[string]any{"volumes": list})
		diags.AddWarning("Updating "+s.Type+" release "+s.id()+" although it strands volumes (force_strand_volumes)",
			"The provider does not delete their data, but after this update:\n"+list)
		return diags, nil
	}
	diags.AddError("Update of storage backend "+s.id()+" would strand volumes",
		"This update leaves volumes and objects of the backend without their driver or data path:\n"+list+"\n\n"+
			"Nothing was changed. Move the data off these volumes first (a clusterstorage_volume_migration to another class, or back up and delete "+
			"their claims; delete PersistentVolumes left Released; remove each other object as its line says), or keep the setting as it is. To update anyway, set force_strand_volumes = true.")
	return diags, nil
}
