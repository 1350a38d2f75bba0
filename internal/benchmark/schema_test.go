package benchmark

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate/validatetest"
)

func TestSchema(t *testing.T) {
	schemacheck.DataSource(t, NewDataSource(), Model{})
}

func TestSchema_nodePaths(t *testing.T) {
	validatetest.DataSourceNodePaths(t, NewDataSource(), "node_path")
}
