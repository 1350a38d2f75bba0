package benchtest

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// RBACFile is the examples/rbac file the fio data sources' RBAC tests bind to.
const RBACFile = "storage-benchmark.yaml"

// RBAC is the fixture of a fio data source's RBAC test: a test namespace (Env), a local-volume
// class with one volume, and a kubeconfig bound to exactly RBACFile's roles.
type RBAC struct {
	*Env
	// Class is a no-provisioner class; PV its one local volume on Env.Node.
	Class, PV string
	// Kubeconfig authenticates as a ServiceAccount bound to the file's ClusterRole, its Role in
	// Env.NS and its Roles in Namespaces.
	Kubeconfig string
	// Namespaces maps each further Role namespace of the file asked for to the test's namespace
	// standing in for it.
	Namespaces map[string]string
}

// SetupRBAC makes the fixture of an RBAC test named name (the ServiceAccount's and roles' prefix):
// the file's Role in namespace "default" is made in the test's namespace, and each of roleNamespaces
// (e.g. "openebs", the comparison's Role in a backend namespace) in a namespace of the test's own.
// acctest.RoleKubeconfig removes the account and roles when the test ends.
func SetupRBAC(t *testing.T, name string, roleNamespaces ...string) *RBAC {
	t.Helper()
	e := Setup(t)
	r := &RBAC{Env: e, Class: e.Class(), Namespaces: map[string]string{}}
	r.PV, _ = e.LocalPV(r.Class, "")
	bound := map[string]string{"default": e.NS}
	for _, ns := range roleNamespaces {
		r.Namespaces[ns] = acctest.Namespace(t, e.Client, "acc-rbac-"+ns)
		bound[ns] = r.Namespaces[ns]
	}
	r.Kubeconfig = acctest.RoleKubeconfig(t, e.Client, acctest.RandomName(name), RBACFile, bound)
	return r
}

// Clean checks after a run with the role that it left nothing behind but its cache and that the
// volume is Available again.
func (r *RBAC) Clean() resource.TestCheckFunc {
	return resource.ComposeTestCheckFunc(
		Check(func() error { return r.NoLeftovers(true) }),
		Check(func() error { return r.VolumeAvailable(r.PV) }),
	)
}
