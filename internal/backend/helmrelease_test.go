package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// helmReleaseFacts is what the move into clusterstorage_storage_backend relies on in the state of
// hashicorp/helm's helm_release, read in hashicorp/terraform-provider-helm (main, 2026-05,
// helm/resource_helm_release.go): the schema version, `name` required, `namespace` optional with
// a default ("default" unless HELM_NAMESPACE says otherwise), and the id set to the release name.
// TestHelmReleaseStandIn fails when the stand-in below disagrees.
var helmReleaseFacts = struct {
	SchemaVersion     int64
	Required          []string
	OptionalWithValue []string
}{SchemaVersion: 2, Required: []string{"name", "chart"}, OptionalWithValue: []string{"namespace"}}

// standInRelease stands in for hashicorp/helm's helm_release, as far as the tests of moving a
// release into this provider need it: the same type name, schema version and the attributes a
// move reads, and a release made as hashicorp/helm makes it (Helm 3: the Helm 3.21 CLI installs
// it, with --wait; uninstall on destroy). What differs from the real resource: only name,
// namespace, repository, chart, version and values exist, and every change replaces the release
// (the real one upgrades it in place); no provider configuration (KUBECONFIG of the tests); no
// metadata block.
type standInRelease struct{ t *testing.T }

type standInReleaseModel struct {
	ID         types.String `tfsdk:"id"`
	Name       types.String `tfsdk:"name"`
	Namespace  types.String `tfsdk:"namespace"`
	Repository types.String `tfsdk:"repository"`
	Chart      types.String `tfsdk:"chart"`
	Version    types.String `tfsdk:"version"`
	Values     types.List   `tfsdk:"values"`
}

func (r *standInRelease) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = "helm_release"
}

func (r *standInRelease) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Version: helmReleaseFacts.SchemaVersion,
		Attributes: map[string]schema.Attribute{
			"id":         schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name":       schema.StringAttribute{Required: true, PlanModifiers: replace},
			"namespace":  schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("default"), PlanModifiers: replace},
			"repository": schema.StringAttribute{Optional: true, PlanModifiers: replace},
			"chart":      schema.StringAttribute{Required: true, PlanModifiers: replace},
			"version":    schema.StringAttribute{Optional: true, PlanModifiers: replace},
			"values": schema.ListAttribute{ElementType: types.StringType, Optional: true,
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()}},
		},
	}
}

func (r *standInRelease) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m standInReleaseModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	var values []string
	resp.Diagnostics.Append(m.Values.ElementsAs(ctx, &values, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	args := []string{"install", m.Name.ValueString(), m.Chart.ValueString(), "--repo", m.Repository.ValueString(),
		"--version", m.Version.ValueString(), "--namespace", m.Namespace.ValueString(), "--create-namespace", "--wait", "--timeout", "5m"}
	dir := r.t.TempDir()
	for i, v := range values {
		file := filepath.Join(dir, "values-"+string(rune('a'+i))+".yaml")
		if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
			resp.Diagnostics.AddError("writing values", err.Error())
			return
		}
		args = append(args, "--values", file)
	}
	if out, err := helm3Command(r.t, args...).CombinedOutput(); err != nil {
		resp.Diagnostics.AddError("helm install failed", err.Error()+"\n"+string(out))
		return
	}
	m.ID = m.Name
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *standInRelease) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m standInReleaseModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := helm3Command(r.t, "status", m.Name.ValueString(), "--namespace", m.Namespace.ValueString()).CombinedOutput()
	switch {
	case err != nil && strings.Contains(string(out), "not found"):
		resp.State.RemoveResource(ctx)
	case err != nil:
		resp.Diagnostics.AddError("helm status failed", err.Error()+"\n"+string(out))
	}
}

func (r *standInRelease) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse) {
	// Every attribute replaces the release.
}

func (r *standInRelease) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m standInReleaseModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := helm3Command(r.t, "uninstall", m.Name.ValueString(), "--namespace", m.Namespace.ValueString(), "--wait").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "not found") {
		resp.Diagnostics.AddError("helm uninstall failed", err.Error()+"\n"+string(out))
	}
}

// TestHelmReleaseStandIn checks the stand-in's schema against the facts read from hashicorp/helm.
func TestHelmReleaseStandIn(t *testing.T) {
	var resp resource.SchemaResponse
	(&standInRelease{t: t}).Schema(context.Background(), resource.SchemaRequest{}, &resp)
	if resp.Schema.Version != helmReleaseFacts.SchemaVersion {
		t.Errorf("schema version %d, hashicorp/helm's %d", resp.Schema.Version, helmReleaseFacts.SchemaVersion)
	}
	for _, name := range helmReleaseFacts.Required {
		if a, ok := resp.Schema.Attributes[name]; !ok || !a.IsRequired() {
			t.Errorf("%s: want a required attribute", name)
		}
	}
	for _, name := range helmReleaseFacts.OptionalWithValue {
		if a, ok := resp.Schema.Attributes[name]; !ok || !a.IsOptional() || !a.IsComputed() {
			t.Errorf("%s: want an optional attribute with a default", name)
		}
	}
}

// TestAccStorageBackend_movedFromHelmRelease: an OpenEBS release made by hashicorp/helm's
// helm_release (the stand-in: Helm 3 installs it) is moved into clusterstorage_storage_backend
// with a `moved` block (Terraform 1.8+ and OpenTofu send the move to this provider; older
// Terraform refuses a move across types, so the test runs where the CLI can). The move imports
// the release: the plan is an in-place update carrying only what the configuration changes
// (hostpath_base_path), applied as an upgrade to revision 2; nothing is uninstalled or
// reinstalled, and helm_release is gone from state without its destroy.
func TestAccStorageBackend_movedFromHelmRelease(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	base1, base2 := t.TempDir(), t.TempDir()
	release := acctest.ProviderConfig() + fmt.Sprintf(`
resource "helm_release" "openebs" {
  name       = "openebs"
  namespace  = %q
  repository = %q
  chart      = "openebs"
  version    = "4.4.0"
  values = [yamlencode({
    engines               = { replicated = { mayastor = { enabled = false } }, local = { lvm = { enabled = false }, zfs = { enabled = false } } }
    loki                  = { enabled = false }
    alloy                 = { enabled = false }
    "openebs-crds"        = { csi = { volumeSnapshots = { enabled = false } } }
    "localpv-provisioner" = { hostpathClass = { name = %q, basePath = %q } }
  })]
}
`, f.ns, f.repo, class, base1)
	moved := f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = %q", class, base2), "") + `
moved {
  from = helm_release.openebs
  to   = clusterstorage_storage_backend.test
}
`
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: acctest.FactoriesWith("helm", func() resource.Resource { return &standInRelease{t: t} }),
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []tfresource.TestStep{
			{
				Config: release,
				Check: func(*terraform.State) error {
					if st, err := f.release(); err != nil || st.Revision != 1 {
						return fmt.Errorf("helm_release made %+v (%v), want revision 1", st, err)
					}
					return nil
				},
			},
			{
				Config: moved,
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("openebs").AtMapKey("hostpath_base_path"), knownvalue.StringExact(base2)),
				},
				Check: tfresource.ComposeTestCheckFunc(acctest.CheckMovedAway("helm_release.openebs"), func(*terraform.State) error {
					st, err := f.release()
					if err != nil || st.Revision != 2 || st.Status != "deployed" {
						return fmt.Errorf("after the move: %+v (%v), want revision 2 deployed (upgraded, not reinstalled)", st, err)
					}
					return nil
				}),
			},
		},
	})
}
