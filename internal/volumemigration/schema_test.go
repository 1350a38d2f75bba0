package volumemigration

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
)

func TestSchema(t *testing.T) {
	schemacheck.Resource(t, NewResource(), model{})
}
