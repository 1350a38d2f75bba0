package volumes

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// Schema describes clusterstorage_volumes.
func (d *DataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists PersistentVolumeClaims, filtered by StorageClass, driver, namespace and labels, each with its size, class, " +
			"driver, the node of a local volume, its phase and the workloads that mount it (found through owner references: a Deployment " +
			"rather than its ReplicaSet, a CronJob rather than its Job). Meant for `for_each` over `clusterstorage_volume_migration`, and " +
			"for checks that no claim still uses a backend before it is removed. Only reads.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The filters, as one string.",
			},
			"storage_class": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Only claims of this StorageClass.",
				Validators:          []validator.String{validate.DNSSubdomain()},
			},
			"driver": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Only claims whose volume is served by this driver: the CSI driver of the bound volume (`driver.longhorn.io`), " +
					"else the provisioner that made it (`openebs.io/local`, `rancher.io/local-path`), else the provisioner of the claim's class.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"namespace": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Only claims in this namespace (default: all namespaces).",
				Validators:          []validator.String{validate.DNSSubdomain()},
			},
			"label_selector": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Only claims whose labels match this selector, in `kubectl -l` syntax (`app=db,tier!=cache`).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"include_migrated": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Also list the claims `clusterstorage_volume_migration` moved off `storage_class` (the migration recorded on the claim " +
					"names the class; default: `false`). A `for_each` of migrations over this data source then keeps its keys once the claims have moved, " +
					"instead of planning to forget them.",
			},
			"volumes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The claims that match, sorted by namespace and name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"namespace":     schema.StringAttribute{Computed: true, MarkdownDescription: "Namespace of the claim."},
					"name":          schema.StringAttribute{Computed: true, MarkdownDescription: "Name of the claim."},
					"key":           schema.StringAttribute{Computed: true, MarkdownDescription: "`<namespace>/<name>`: a key for `for_each`."},
					"storage_class": schema.StringAttribute{Computed: true, MarkdownDescription: "StorageClass of the claim (`\"\"` when it has none)."},
					"migrated_from": schema.StringAttribute{Computed: true, MarkdownDescription: "The StorageClass `clusterstorage_volume_migration` moved the claim off; `\"\"` when none."},
					"driver":        schema.StringAttribute{Computed: true, MarkdownDescription: "Driver serving the volume (see the `driver` filter); `\"\"` when unknown."},
					"volume":        schema.StringAttribute{Computed: true, MarkdownDescription: "The PersistentVolume bound to the claim; `\"\"` while unbound."},
					"size":          schema.StringAttribute{Computed: true, MarkdownDescription: "Capacity of the bound volume, else the size requested (a Kubernetes quantity: `10Gi`)."},
					"node":          schema.StringAttribute{Computed: true, MarkdownDescription: "Node a local volume lives on (its node affinity); `\"\"` for volumes any node can mount."},
					"phase":         schema.StringAttribute{Computed: true, MarkdownDescription: "Phase of the claim: `Pending`, `Bound` or `Lost`."},
					"volume_mode":   schema.StringAttribute{Computed: true, MarkdownDescription: "`Filesystem` or `Block`."},
					"access_modes":  schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Access modes of the claim."},
					"workloads": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "Workloads that mount the claim, sorted by kind and name.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"kind":     schema.StringAttribute{Computed: true, MarkdownDescription: "`Deployment`, `StatefulSet`, `ReplicaSet`, `DaemonSet`, `Job`, `CronJob`, `Pod` (no controller) or an operator's own kind."},
							"name":     schema.StringAttribute{Computed: true, MarkdownDescription: "Name of the workload."},
							"replicas": schema.Int64Attribute{Computed: true, MarkdownDescription: "Replicas it asks for (a Job's parallelism; `1` for a pod; `0` for a DaemonSet, a CronJob and a suspended Job)."},
						}},
					},
				}},
			},
		},
	}
}
