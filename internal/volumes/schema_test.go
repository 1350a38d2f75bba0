package volumes

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
)

func TestSchema(t *testing.T) {
	schemacheck.DataSource(t, NewDataSource(), model{})
}
