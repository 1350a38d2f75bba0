package capacity

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate/validatetest"
)

func TestSchema(t *testing.T) {
	schemacheck.DataSource(t, NewDataSource(), model{})
}

func TestSchema_nodePaths(t *testing.T) {
	validatetest.DataSourceNodePaths(t, NewDataSource(), "node_path", "backend.base_path")
}
