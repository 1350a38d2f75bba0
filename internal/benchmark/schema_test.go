package benchmark

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
)

func TestSchema(t *testing.T) {
	schemacheck.DataSource(t, NewDataSource(), model{})
}
