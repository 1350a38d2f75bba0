package localpv

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate/validatetest"
)

func TestSchema(t *testing.T) {
	schemacheck.Resource(t, NewResource(), model{})
}

func TestSchema_nodePaths(t *testing.T) {
	validatetest.ResourceNodePaths(t, NewResource(), "path")
}
