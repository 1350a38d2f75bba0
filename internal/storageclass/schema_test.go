package storageclass

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate/validatetest"
)

func TestSchema(t *testing.T) {
	schemacheck.Resource(t, NewResource(), model{})
}

// A StorageClass names no path on a node (a provisioner's path parameters are its own strings,
// passed on as they are); this fails when an attribute named like one is added.
func TestSchema_nodePaths(t *testing.T) {
	validatetest.ResourceNodePaths(t, NewResource())
}
