// Package stub stands in for one of Terraform's state storage backends, which this test build of
// Terraform leaves out (tools/terraform/README.md): New returns a backend whose every method
// refuses. The same file serves every backend; the name in the message is the last element of the
// package's import path (azure, consul, cos, gcs, kubernetes, oci, oss, pg, s3).
package stub

import (
	"fmt"
	"path"
	"reflect"

	"github.com/zclconf/go-cty/cty"

	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/configs/configschema"
	"github.com/hashicorp/terraform/internal/states/statemgr"
	"github.com/hashicorp/terraform/internal/tfdiags"
)

type stub struct{}

// New is what internal/backend/init calls for this backend.
func New() backend.Backend { return stub{} }

func refuse() tfdiags.Diagnostics {
	name := path.Base(reflect.TypeFor[stub]().PkgPath())
	var diags tfdiags.Diagnostics
	return diags.Append(tfdiags.Sourceless(tfdiags.Error,
		fmt.Sprintf("the %s backend is not part of this test build of Terraform", name),
		"This Terraform was built for the clusterstorage provider's tests without its remote state "+
			"backends (tools/terraform/README.md). Use the local backend, or a release of Terraform."))
}

// ConfigSchema is empty: an empty backend block decodes, and PrepareConfig then refuses.
func (stub) ConfigSchema() *configschema.Block { return &configschema.Block{} }

func (stub) PrepareConfig(obj cty.Value) (cty.Value, tfdiags.Diagnostics) { return obj, refuse() }

func (stub) Configure(cty.Value) tfdiags.Diagnostics { return refuse() }

func (stub) StateMgr(string) (statemgr.Full, tfdiags.Diagnostics) { return nil, refuse() }

func (stub) DeleteWorkspace(string, bool) tfdiags.Diagnostics { return refuse() }

func (stub) Workspaces() ([]string, tfdiags.Diagnostics) { return nil, refuse() }
