package backend

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate/validatetest"
)

func TestSchema(t *testing.T) {
	schemacheck.Resource(t, NewResource(), model{})
	validatetest.ResourceNodePaths(t, NewResource(), "openebs.hostpath_base_path", "longhorn.default_data_path")
}
