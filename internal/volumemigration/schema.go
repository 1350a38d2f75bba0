package volumemigration

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// DefaultImage is the copy pod's image unless `image` says otherwise: a public image with rsync
// and a POSIX shell (the one replicatedhq's pvmigrate uses), pinned by tag.
const DefaultImage = "docker.io/eeacms/rsync:2.3"

// IdentitySchema describes the migration's resource identity: the claim it moved.
func (r *Resource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"namespace": identityschema.StringAttribute{RequiredForImport: true, Description: "Namespace of the claim."},
		"claim":     identityschema.StringAttribute{RequiredForImport: true, Description: "Name of the PersistentVolumeClaim moved."},
	}}
}

// Schema describes clusterstorage_volume_migration.
func (r *Resource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Moves the data of one PersistentVolumeClaim to a new volume of another StorageClass (another backend: Longhorn to " +
			"OpenEBS hostpath, local-path to a local PV class...), keeping the claim's name, labels and annotations, so the workloads that name " +
			"it run on unchanged. Two phases: a copy pod copies everything with `rsync` while the workload still runs, then the workload " +
			"(found through owner references: Deployment, StatefulSet, ReplicaSet, Job, CronJob) is scaled to zero, the delta is copied and " +
			"every file's content is verified (`rsync --checksum`, which must find nothing to change), the claim is made again bound to the new " +
			"volume, and the workload is scaled back and waited for until Ready. Downtime is the delta and the verification.\n\n" +
			"Nothing is lost: the source volume is kept (reclaim policy `Retain`) until `delete_source = true`; a failure before the swap puts " +
			"everything back (the new claim removed, the workload at its old replica count); progress is recorded on the claim and on the new " +
			"volume (annotation `" + AnnotationProgress + "`), so an interrupted apply is resumed by the next one. Destroying the resource " +
			"forgets the migration; it moves nothing back.\n\n" +
			"Refused at plan: a claim that is not Bound, a `Block` volume, a target class that does not exist or that the cluster says has no room " +
			"(no Available static volume as large, on the source's node for a local source; `CSIStorageCapacity` below the size; with the provider's " +
			"`ssh` block, an OpenEBS hostpath class whose base path has less free space on the copy's node), a claim already on the class, " +
			"a claim mounted by a pod no controller owns, by a DaemonSet, by an operator's own kind, or by several workloads, a workload whose replica " +
			"count Argo CD, Flux, KEDA or an operator drives (until `controllers_paused = true`), and a temporary claim a ResourceQuota has no room for. " +
			"Warned at plan: a claim whose manifest Helm, Argo CD, Flux or Terraform's kubernetes provider owns (change the class there too: its next " +
			"sync fails or replaces the claim), an HPA, a PodDisruptionBudget the stop violates.\n\n" +
			"Among other actors: the source volume is set to `Retain` before anything else changes; a StatefulSet whose " +
			"`persistentVolumeClaimRetentionPolicy` deletes claims is set to `Retain` in the same update that scales it to zero and given its policy " +
			"back when it starts; the claim made again keeps its owner references (but a pod's), finalizers and `volumeAttributesClassName` " +
			"(where the target's driver is the class's). The copy pod " +
			"runs where it can mount both volumes (a local source pins it, and a `WaitForFirstConsumer` target is provisioned there); with " +
			"`target_node` on another node than a pinned source, the data is copied between the nodes instead, over the provider's SSH connections " +
			"(encrypted) or over the pod network (rsync daemon protocol, not encrypted; see `cross_node_transfer`), with the same phases, verification (every file's checksum, on both ends) and rollback. " +
			"A `ReadWriteOncePod` claim is copied only while the workload is stopped.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<namespace>/<claim>`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"namespace": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Namespace of the claim. Changing it starts another migration (replace).",
				Validators:          []validator.String{validate.DNSSubdomain()},
				PlanModifiers:       replace,
			},
			"claim": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the PersistentVolumeClaim to move. It keeps its name. Changing it starts another migration (replace).",
				Validators:          []validator.String{validate.DNSSubdomain()},
				PlanModifiers:       replace,
			},
			"storage_class": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "StorageClass to move the claim to. Changing it moves the claim again (replace).",
				Validators:          []validator.String{validate.DNSSubdomain()},
				PlanModifiers:       replace,
			},
			"target_node": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Name of the node the new volume is to be on (default: none: where the copy pod runs, the source volume's node for a " +
					"local source). The copy's pods run there, so a `WaitForFirstConsumer` class provisions the new volume on it; a class of static or " +
					"`Immediate` volumes must give it one of that node (checked at plan against its Available volumes, and again once the new claim is bound). " +
					"When the source volume is pinned to another node (local PVs, hostPath, OpenEBS hostpath, local-path), the data is copied between the " +
					"nodes, over SSH or over the pod network (`cross_node_transfer`). Over the pod network: an rsync daemon pod on this node, listening on its pod IP " +
					"only (with `host_network`, the node's; a port the node already has taken makes it start again on another), and an rsync client pod on the " +
					"source's node that starts once the daemon answers, " +
					"authenticated with a random password in a Secret the migration makes and removes. The rsync daemon protocol is NOT encrypted: the " +
					"data crosses the network in the clear. Where NetworkPolicies isolate the namespace, allow the pods labelled `" + labelComponent + "=" +
					component + "` to reach each other on TCP ports 20000-29999. Checked at plan: the node exists, and with the provider's `ssh` block the " +
					"free space there of an OpenEBS hostpath or rancher local-path class, against the source's files when they are directories on their node. " +
					"Changing it replaces the resource.",
				Validators:    []validator.String{validate.DNSSubdomain()},
				PlanModifiers: replace,
			},
			"cross_node_transfer": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString(transferAuto),
				MarkdownDescription: crossNodeTransferDescription,
				Validators:          []validator.String{stringvalidator.OneOf(transfers...)},
			},
			"size": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Size of the new volume, a Kubernetes quantity such as `20Gi` (default: the source volume's capacity). " +
					"A size smaller than the data makes the copy fail, and the migration is rolled back. Changing it replaces the resource.",
				Validators:    []validator.String{quantityValidator{}},
				PlanModifiers: replace,
			},
			"delete_source": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default: booldefault.StaticBool(false),
				MarkdownDescription: "Delete the source volume once the claim has moved (default: `false`: it is kept with reclaim policy `Retain`, " +
					"annotated `" + AnnotationMigratedTo + "`). Its reclaim policy from before the migration decides how: `Delete` has its " +
					"provisioner remove it and its data (the apply waits until it is gone, so a backend removed in the same apply finds " +
					"it gone; a provisioner that cannot delete it fails the apply with its reason); `Retain` deletes the PersistentVolume object and leaves the data on the backend. " +
					"Setting it to `true` later deletes the kept volume in an update.",
			},
			"restore_on_destroy": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default: booldefault.StaticBool(false),
				MarkdownDescription: "Move the claim back onto its source volume when the resource is destroyed (default: `false`: destroying " +
					"forgets the migration and moves no data). The move back is a migration the other way: the kept source volume is brought up to date " +
					"while the workload runs (only what changed is copied), then the workload is stopped, the delta copied and verified, the claim made " +
					"again on the source volume and the workload started. The volume the claim leaves is deleted when a provisioner made it for the " +
					"migration (its reclaim policy decides about its data), and kept otherwise. Needs the source volume: refused with `delete_source = true`. " +
					"Set it before the destroy, in an apply of its own (it changes in place).",
				Validators: []validator.Bool{restoreNeedsSource{}},
			},
			"image": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(DefaultImage),
				MarkdownDescription: "Container image of the copy pods: any image with `rsync` 3.x and a POSIX `sh` on its PATH (default: `" + DefaultImage + "`). " +
					"The pods run as root with the capabilities `CHOWN`, `DAC_OVERRIDE`, `FOWNER`, `FSETID` and `MKNOD` only (all in Pod Security's `baseline` set, so " +
					"namespaces that enforce `baseline` admit them), so every file keeps its owner and mode.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"image_pull_policy": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Pull policy of the copy container: `Always`, `IfNotPresent` or `Never` (default: Kubernetes' own for the image's tag).",
				Validators:          []validator.String{stringvalidator.OneOf("Always", "IfNotPresent", "Never")},
			},
			"host_network": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default:             booldefault.StaticBool(false),
				MarkdownDescription: "Run the copy pods in the node's network namespace (default: `false`). Only needed on clusters without a pod network.",
			},
			"copy_xattrs": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default: booldefault.StaticBool(false),
				MarkdownDescription: "Copy and verify extended attributes and POSIX ACLs too (`rsync -X -A`; default: `false`). Needs them supported " +
					"on both filesystems; attributes in namespaces other than `user.` and `system.posix_acl_*` need capabilities the copy pod does " +
					"not have. Without it, a source with extended attributes or ACLs is copied without them and the apply warns with their count.",
			},
			"controllers_paused": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default: booldefault.StaticBool(false),
				MarkdownDescription: "Set to `true` once the controllers that drive the workload's replica count besides Terraform are paused for the " +
					"migration (default: `false`). Without it the plan refuses a workload that Argo CD or Flux manages (their self-heal scales it " +
					"back up), that a KEDA ScaledObject scales, or whose controller is an operator's resource: any of them can start the workload on the " +
					"source volume while the migration has it stopped. Whatever it is set to, the apply checks right after the verification and again " +
					"right before the source claim is deleted that no pod mounts the claim and every stopped workload is still at zero, and rolls back, " +
					"naming what came back and the field manager that set it, if not.",
			},
			"resource_requests": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true, Computed: true,
				Default: mapdefault.StaticValue(quantities(defaultRequests)),
				MarkdownDescription: "Resource requests of the copy container, quantities by resource name (default: " + describeQuantities(defaultRequests) + "). " +
					"A namespace with a ResourceQuota on `requests.cpu` or `requests.memory` admits only pods that set them.",
				Validators: []validator.Map{quantityMap{}},
			},
			"resource_limits": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true, Computed: true,
				Default: mapdefault.StaticValue(quantities(defaultLimits)),
				MarkdownDescription: "Resource limits of the copy container (default: " + describeQuantities(defaultLimits) + "). rsync keeps about " +
					"100 bytes per file in memory: raise `memory` for volumes of many millions of files.",
				Validators: []validator.Map{quantityMap{}},
			},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),

			"source_volume": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The PersistentVolume the claim was bound to before: kept (`Retain`) unless `delete_source` is `true`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"volume": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The new PersistentVolume the claim is bound to.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"bytes_copied": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Bytes of file data rsync transferred, over both phases (a file changed during the first copy counts twice).",
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"files_copied": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Regular files rsync transferred, over both phases.",
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"downtime_seconds": schema.Float64Attribute{
				Computed:            true,
				MarkdownDescription: "Seconds from the workload's scale-down to all its replicas Ready again on the new volume.",
				PlanModifiers:       []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
			"migrated_at": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "When the migration finished (RFC 3339).",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
	}
}
