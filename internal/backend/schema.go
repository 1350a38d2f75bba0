package backend

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

var footprintAttrTypes = map[string]attr.Type{
	"pods":                    types.Int64Type,
	"containers":              types.Int64Type,
	"cpu_requests_millicores": types.Int64Type,
	"memory_requests_bytes":   types.Int64Type,
	"memory_limits_bytes":     types.Int64Type,
	"memory_usage_bytes":      types.Int64Type,
}

var releaseNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Schema describes clusterstorage_storage_backend.
func (r *Resource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	lh, oe := engines[typeLonghorn], engines[typeOpenEBS]
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A storage system (Longhorn or OpenEBS) installed as a Helm release through the Helm 4 SDK, with typed, " +
			"version-aware settings. Installs and upgrades are atomic (a failed install is removed, a failed upgrade rolled back), " +
			"a release this provider installed and an interrupted apply left pending is repaired on the next apply (never a release someone else made, " +
			"nor one whose operation may still be running), changes made with `helm` show as a diff, and so do changes to the release's objects " +
			"(a field the chart sets changed with `kubectl edit` or `kubectl patch`, an object deleted; the plan's warning names each object and " +
			"field, and the apply upgrades the release back; which class is the default is left out), destroy refuses while any volume of the " +
			"backend's drivers exists (on any StorageClass, Released ones too), an update refuses while it would strand volumes (an engine turned " +
			"off, a data path moved; `force_strand_volumes`), a backend whose class is the default takes the mark from the " +
			"other classes, and `footprint` reports what the backend's pods ask for. New releases are applied server-side (Helm 4's default); " +
			"releases first made client-side (by Helm 3, `helm_release`, or this provider's earlier versions) are upgraded client-side.\n\n" +
			"Releases the provider installs carry the Helm release labels `clusterstorage.io/managed-by`, `clusterstorage.io/operation-timeout` " +
			"and `clusterstorage.io/revision` (`helm get metadata`).\n\n" +
			fmt.Sprintf("Supported chart versions: Longhorn %s (default `%s`); OpenEBS %s (default `%s`), each checked against the real chart's "+
				"values and dependencies; OpenEBS 4.3.x, whose chart could not be read, is installed with 4.4's Loki/Alloy layout without rawfile "+
				"(as OpenEBS's 4.3.x documentation shows it), and a later minor of the same major version (OpenEBS 4.5 or 4.6, Longhorn 1.13) with the layout of the "+
				"nearest verified minor below it, each with a warning. Every chart archive is checked at plan (and again at apply) before anything is installed: "+
				"it must have every value key and subchart condition the provider writes, and, rendered offline with the planned values, install every engine "+
				"they turn on (its workloads, its CSI driver's name) and no workload of one they turn off; a subchart left on that the provider does not know "+
				"(a new add-on on by default) is refused, naming the value that turns it off. Longhorn upgrades one minor version at a time: a version that skips a minor, or a downgrade, is refused at plan "+
				"with the path to take. OpenEBS upgrades to any later 4.x version in one step and never downgrades (refused at plan).", lh.supportedText(), lh.Version, oe.supportedText(), oe.Version),
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "`<namespace>/<release_name>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"type": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Storage system: `longhorn` or `openebs`. Changing it replaces the backend.",
				Validators:          []validator.String{stringvalidator.OneOf(typeLonghorn, typeOpenEBS)},
				PlanModifiers:       replace,
			},
			"repository": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Where the chart comes from: an http(s):// chart repository (default: `%s` for Longhorn, `%s` for OpenEBS), "+
					"an `oci://` registry prefix, or empty with `chart` set to a local chart directory or `.tgz` (air-gapped installs).", lh.Repository, oe.Repository),
			},
			"chart": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Chart name in the repository (default: `longhorn` / `openebs`), a full `oci://` reference, or a local chart path when `repository` is empty (`\"\"`).",
			},
			"version": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Chart version: an exact version or a constraint such as `~4.4` (default: `%s` for Longhorn, `%s` for OpenEBS). "+
					"Verified: Longhorn %s; OpenEBS %s. A later minor of the same major version is accepted with a warning and checked against its "+
					"chart archive at apply (every value key and subchart condition the provider writes); older versions and other major versions are refused at plan. A Longhorn upgrade must go from one minor "+
					"to the next (1.8 to 1.9, not 1.8 to 1.10) and never down: the plan names each intermediate version to apply in turn. "+
					"An OpenEBS upgrade may skip minors (as Mayastor's upgrade job allows) but never goes down. "+
					"`chart_version` reports the version installed.", lh.Version, oe.Version, lh.supportedText(), oe.supportedText()),
			},
			"namespace": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Namespace of the release (default: `%s` / `%s`). Changing it replaces the backend.", lh.Namespace, oe.Namespace),
				Validators:          []validator.String{stringvalidator.RegexMatches(releaseNamePattern, "must be a DNS-1123 label")},
				PlanModifiers:       replace,
			},
			"release_name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Name of the Helm release (default: `%s` / `%s`). Changing it replaces the backend.", lh.ReleaseName, oe.ReleaseName),
				Validators: []validator.String{
					stringvalidator.RegexMatches(releaseNamePattern, "must be lower case letters, digits and `-`"),
					stringvalidator.LengthAtMost(53),
				},
				PlanModifiers: replace,
			},
			"create_namespace": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Create the namespace when it does not exist (default: `true`). Destroy leaves the namespace in place.",
			},
			"repository_username": schema.StringAttribute{
				Optional: true, MarkdownDescription: "User name for the chart repository or registry (basic auth).",
			},
			"repository_password": schema.StringAttribute{
				Optional: true, Sensitive: true, MarkdownDescription: "Password or token for the chart repository or registry.",
			},
			"repository_password_wo": schema.StringAttribute{
				Optional: true, WriteOnly: true,
				MarkdownDescription: "Like `repository_password`, but write-only: never stored in plan or state (Terraform 1.11+, OpenTofu 1.11+; it may " +
					"come from an ephemeral resource). It is used whenever the chart is fetched; changing it alone plans no change.",
				Validators: []validator.String{stringvalidator.ConflictsWith(path.MatchRoot("repository_password"))},
			},
			"repository_ca_file": schema.StringAttribute{
				Optional: true, MarkdownDescription: "PEM file of the CA that signed the repository's or registry's certificate.",
			},
			"repository_cert_file": schema.StringAttribute{
				Optional: true, MarkdownDescription: "PEM client certificate for a repository or registry that requires TLS client authentication (with `repository_key_file`).",
			},
			"repository_key_file": schema.StringAttribute{
				Optional: true, MarkdownDescription: "PEM private key of `repository_cert_file`.",
			},
			"repository_insecure_skip_verify": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Do not verify the repository's or registry's TLS certificate (default: `false`). Prefer `repository_ca_file`.",
			},
			"repository_plain_http": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Talk to an `oci://` registry over plain http (default: `false`).",
			},
			"openebs": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Typed OpenEBS settings (only with `type = \"openebs\"`), mapped onto the value keys of the chart version in use " +
					"(each attribute names its key per version). Left out: every setting takes its default, which turns every engine and add-on off " +
					"(the chart's own defaults install Mayastor, LVM and ZFS).",
				Attributes: map[string]schema.Attribute{
					"mayastor_enabled": boolSetting(false, "Install Mayastor, the replicated NVMe-oF engine ("+keyDoc(oe, settingMayastor)+"). Its io-engine runs only on nodes labelled "+
						"`openebs.io/engine=mayastor`, each with 2 GiB of hugepages and `nvme_tcp`; its etcd (3 replicas with a hard pod anti-affinity, "+
						"`mayastor.etcd.replicaCount`) needs as many nodes. Its class is `<release_name>-single-replica`"),
					"lvm_enabled": boolSetting(false, "Install the LVM LocalPV engine ("+keyDoc(oe, settingLVM)+")"),
					"zfs_enabled": boolSetting(false, "Install the ZFS LocalPV engine ("+keyDoc(oe, settingZFS)+")"),
					"loki_enabled": boolSetting(false, "Install Loki ("+keyDoc(oe, settingLoki)+"). Before 4.3, Loki is part of Mayastor (its loki-stack, with promtail): "+
						"`true` there needs `mayastor_enabled = true`"),
					"alloy_enabled": boolSetting(false, "Install the Alloy log collector ("+keyDoc(oe, settingAlloy)+"); `true` is refused on a version without it"),
					"hostpath_base_path": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(defaultHostpathBasePath),
						MarkdownDescription: "Directory on each node under which hostpath volumes are made (`localpv-provisioner.hostpathClass.basePath`; default: `" + defaultHostpathBasePath + "`); control characters are refused.",
						Validators:          []validator.String{validate.NodePath(), stringvalidator.RegexMatches(regexp.MustCompile(`^/`), "must be an absolute path")},
					},
					"hostpath_class_name": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(defaultHostpathClassName),
						MarkdownDescription: "Name of the hostpath StorageClass (`localpv-provisioner.hostpathClass.name`; default: `" + defaultHostpathClassName + "`).",
						Validators:          []validator.String{validate.DNSSubdomain()},
					},
					"hostpath_default_class": boolSetting(false, "Make the hostpath StorageClass the cluster's default class (`localpv-provisioner.hostpathClass.isDefaultClass`); "+
						"every other class loses the default mark in the same apply. "+k3sDefaultClassNote),
					"volume_snapshot_crds": boolSetting(true, "Install the VolumeSnapshot CRDs with the chart's openebs-crds subchart ("+keyDoc(oe, settingSnapshotCRDs)+"). "+
						"They are kept on uninstall (`helm.sh/resource-policy: keep`). Set `false` when the cluster already has them "+
						"(a snapshot controller, an earlier OpenEBS release): Helm cannot take over CRDs another release or tool made, and the apply refuses before installing"),
				},
			},
			"longhorn": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Typed Longhorn settings (only with `type = \"longhorn\"`), mapped onto the chart's `persistence.*` and " +
					"`defaultSettings.*` keys, the same in every supported version (" + lh.supportedText() + "); settings are passed as strings. " +
					"Left out: every setting takes its default.",
				Attributes: map[string]schema.Attribute{
					"default_replica_count": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(defaultLonghornReplicas),
						MarkdownDescription: "Replicas of each volume, for both the default `longhorn` class (`persistence.defaultClassReplicaCount`) and the " +
							"`default-replica-count` setting: 1 to 20 (default: `3`). Use `1` on a single-node cluster.",
						Validators: []validator.Int64{int64validator.Between(1, 20)},
					},
					"default_data_locality": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(defaultLonghornLocality),
						MarkdownDescription: "Data locality of the default class and setting: `disabled`, `best-effort` or `strict-local` (default: `disabled`).",
						Validators:          []validator.String{stringvalidator.OneOf("disabled", "best-effort", "strict-local")},
					},
					"default_data_path": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(defaultLonghornDataPath),
						MarkdownDescription: "Where Longhorn keeps replica data on each node (`defaultSettings.defaultDataPath`; default: `" + defaultLonghornDataPath + "`); control characters are refused.",
						Validators:          []validator.String{validate.NodePath(), stringvalidator.RegexMatches(regexp.MustCompile(`^/`), "must be an absolute path")},
					},
					"default_class": boolSetting(true, "Make the `longhorn` StorageClass the cluster's default class (`persistence.defaultClass`); "+
						"every other class loses the default mark in the same apply. "+k3sDefaultClassNote),
					"ui_enabled": boolSetting(true, "Run the Longhorn UI (`false` sets `longhornUI.replicas` to 0)"),
				},
			},
			"values": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Raw chart values: a list of YAML documents (e.g. `[file(\"values.yaml\"), yamlencode({...})]`), applied after the " +
					"typed settings and merged in order, each over the ones before it (maps key by key; lists and scalars replaced), like repeated " +
					"`helm -f`. A value that contradicts a typed setting is an error at plan: change the typed setting instead.",
			},
			"set": schema.ListNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Single values, like `helm --set`, applied after `values`. A value that contradicts a typed setting is an error at plan.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{
						Required: true, MarkdownDescription: "Value path, e.g. `longhornManager.tolerations[0].key`. A literal dot in a key is `\\.` to Helm, written `\\\\.` in an HCL string.",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
					},
					"value": schema.StringAttribute{Required: true, MarkdownDescription: "The value."},
					"type": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString("auto"),
						MarkdownDescription: "`auto` types `true`, `false`, `null` and integers as helm does; `string` keeps the value a string (default: `auto`).",
						Validators:          []validator.String{stringvalidator.OneOf("auto", "string")},
					},
				}},
			},
			"set_sensitive": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "Like `set`, applied after it, for secrets: the values are kept out of plan output, state diffs and logs " +
					"(Helm itself stores them in the release, as it stores every value).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{
						Required: true, MarkdownDescription: "Value path, as in `set`.",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
					},
					"value": schema.StringAttribute{Required: true, Sensitive: true, MarkdownDescription: "The value."},
					"type": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString("auto"),
						MarkdownDescription: "`auto` or `string`, as in `set` (default: `auto`).",
						Validators:          []validator.String{stringvalidator.OneOf("auto", "string")},
					},
				}},
			},
			"set_wo": schema.ListNestedAttribute{
				Optional: true, WriteOnly: true,
				MarkdownDescription: "Like `set_sensitive`, applied after it, but write-only: the entries are never stored in plan or state " +
					"(Terraform 1.11+, OpenTofu 1.11+; values may come from ephemeral resources). Terraform cannot see a change in them: change " +
					"`set_wo_revision` to apply new ones. Helm stores them in the release, as it stores every value; drift at their value paths " +
					"is not detected.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{
						Required: true, WriteOnly: true, MarkdownDescription: "Value path, as in `set`.",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
					},
					"value": schema.StringAttribute{Required: true, WriteOnly: true, MarkdownDescription: "The value."},
					"type": schema.StringAttribute{
						Optional: true, WriteOnly: true,
						MarkdownDescription: "`auto` or `string`, as in `set` (default: `auto`).",
						Validators:          []validator.String{stringvalidator.OneOf("auto", "string")},
					},
				}},
			},
			"set_wo_revision": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "A number to change whenever `set_wo` (or `repository_password_wo`) should be applied again: a change of it plans an " +
					"upgrade with the write-only values of this configuration.",
				Validators: []validator.Int64{int64validator.AtLeast(1)},
			},
			"max_history": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(defaultMaxHistory),
				MarkdownDescription: fmt.Sprintf("Release revisions Helm keeps; older ones are deleted on upgrade. `0` keeps all (default: `%d`).", defaultMaxHistory),
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"wait": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Wait until every workload of the release is ready (and its Jobs complete) within the create or update timeout " +
					"(default: `true`). Without it, install and upgrade are not atomic.",
			},
			"force_destroy": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(defaultForceDestroy),
				MarkdownDescription: "Uninstall even while the backend serves volumes (default: `false`). Without it, destroy refuses while any " +
					"PersistentVolume of the backend's drivers exists, in any phase (Bound, Released under `Retain`, ...) and on any StorageClass " +
					"(a class you made for `driver.longhorn.io` too), while a claim of such a class waits for its volume, and for Longhorn while " +
					"any `volumes.longhorn.io` object exists; it lists each with its claim and class. It also refuses, where their CRDs are installed, " +
					"while a VolumeSnapshotContent of the drivers, a Longhorn BackingImage, a Mayastor DiskPool, or an LVM or ZFS volume object whose " +
					"PersistentVolume is gone exists, naming each, why it blocks and how to remove it; Longhorn volumes of the v2 data engine are marked. " +
					"The drivers: Longhorn `driver.longhorn.io`; OpenEBS `openebs.io/local`, `io.openebs.csi-mayastor`, `local.csi.openebs.io` (LVM), " +
					"`zfs.csi.openebs.io`, `rawfile.csi.openebs.io`; and every CSIDriver and StorageClass provisioner in the release's own manifest. " +
					"The release's own claims (its StatefulSets' volumeClaimTemplates: Mayastor's etcd, Loki, MinIO) do not count. " +
					"For Longhorn, `deleting-confirmation-flag` is set (on its Setting object) only once this check passed or with `force_destroy`.",
			},
			"force_strand_volumes": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(defaultForceStrandVolumes),
				MarkdownDescription: "Let an update go ahead although volumes of the backend lose their driver or their data path (default: `false`). " +
					"Without it, an update is refused (at plan when the cluster can be read, else at apply before Helm is called) while volumes exist " +
					"that it would strand: of an OpenEBS engine it turns off (`mayastor_enabled`, `lvm_enabled` or `zfs_enabled` from `true` to " +
					"`false`, or a raw value that turns off an engine's dependency condition such as `engines.local.rawfile.enabled`), of an engine " +
					"the new chart version no longer has, of the hostpath class when `hostpath_base_path` changes, every Longhorn volume when " +
					"`default_data_path` changes, and Longhorn's v2 data engine volumes when `defaultSettings.v2DataEngine` turns off. Whether an " +
					"engine is on is read from the chart archive's values with the planned values over them. An engine's drivers are the one `force_destroy` lists for it (" +
					"`lvm_enabled`: `local.csi.openebs.io`) and every CSIDriver and StorageClass provisioner its subchart put in the release's manifest, but for those another part " +
					"of the release that stays keeps serving (Mayastor's etcd class names the hostpath provisioner). The volumes and objects are counted " +
					"as `force_destroy` counts them and each is named. With `true`, the " +
					"update goes ahead and a warning lists them; the provider deletes no data either way.",
			},
			"preflight": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Before installing or upgrading, check every node over SSH (the provider's `ssh` block and `nodes`) for what the " +
					"backend needs: Longhorn open-iscsi with iscsid running and an NFSv4 client; Mayastor (on each node labelled " +
					"`openebs.io/engine=mayastor`) at least 2 GiB of hugepages and the `nvme_tcp` kernel module. Missing prerequisites fail " +
					"the apply with a report per node (default: `false`). Whatever this says, every install and upgrade first checks through " +
					"the API for CRDs the chart would make that something else owns, and for Mayastor a labelled node and enough nodes for its etcd.",
			},
			"status":        schema.StringAttribute{Computed: true, MarkdownDescription: "Status of the release: `deployed`, `failed`, `pending-install`, ..."},
			"revision":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Revision of the release."},
			"chart_version": schema.StringAttribute{Computed: true, MarkdownDescription: "Version of the chart installed."},
			"app_version":   schema.StringAttribute{Computed: true, MarkdownDescription: "Version of the application the chart installs."},
			"storage_classes": schema.ListAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "StorageClasses the release creates (including Longhorn's class rendered from its ConfigMap).",
			},
			"footprint": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "What the pods of the release's Deployments, DaemonSets and StatefulSets ask for and use, summed over running pods (init containers excluded).",
				Attributes: map[string]schema.Attribute{
					"pods":                    schema.Int64Attribute{Computed: true, MarkdownDescription: "Pods."},
					"containers":              schema.Int64Attribute{Computed: true, MarkdownDescription: "Containers of those pods."},
					"cpu_requests_millicores": schema.Int64Attribute{Computed: true, MarkdownDescription: "Sum of CPU requests, in millicores."},
					"memory_requests_bytes":   schema.Int64Attribute{Computed: true, MarkdownDescription: "Sum of memory requests, in bytes."},
					"memory_limits_bytes":     schema.Int64Attribute{Computed: true, MarkdownDescription: "Sum of memory limits, in bytes (containers without a limit add nothing)."},
					"memory_usage_bytes":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Working-set memory from the metrics API (`metrics.k8s.io`); null when the cluster does not serve it."},
				},
			},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}

// keyDoc says which value key carries a typed setting in which chart versions, from engines.go's
// table: "`a.b` in 4.4.x; `c.d` in 4.0.x, 4.1.x, 4.2.x".
func keyDoc(e engine, setting string) string {
	var groups []string
	byKey := map[string][]string{}
	for _, r := range e.Ranges {
		for _, k := range r.keysFor(setting) {
			name := "none"
			if k.Key != "" {
				name = "`" + k.Key + "`"
			}
			if _, ok := byKey[name]; !ok {
				groups = append(groups, name)
			}
			byKey[name] = append(byKey[name], r.Minor+".x")
		}
	}
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		parts = append(parts, g+" in "+strings.Join(byKey[g], ", "))
	}
	return strings.Join(parts, "; ")
}

func boolSetting(def bool, what string) schema.BoolAttribute {
	return schema.BoolAttribute{
		Optional: true, Computed: true, Default: booldefault.StaticBool(def),
		MarkdownDescription: fmt.Sprintf("%s (default: `%t`).", what, def),
	}
}
