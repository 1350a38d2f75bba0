package benchmark_test

import (
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// The fio pod the data source writes with host_network at its default (false) is admitted by the
// local cluster exactly as written apart from the fields of the cluster's pod policy
// (tools/kube/testdata/pod-network-policy.yaml: hostNetwork, KUBERNETES_SERVICE_HOST/PORT,
// imagePullPolicy): the acceptance tests run the provider's pods as a user's configuration makes
// them, the policy standing in for the pod network the local cluster lacks.
func TestClusterStorageBenchmark_podAsWritten(t *testing.T) {
	client := acctest.Kube(t)
	if !acctest.LocalCluster() {
		t.Skip("the pod policy belongs to the project's local cluster (tools/kube)")
	}
	written, err := benchmark.PodFromConfig("local-path", "default", "", acctest.FioImage, "Never")
	if err != nil {
		t.Fatal(err)
	}
	if written.Spec.HostNetwork {
		t.Fatal("the data source's pod sets hostNetwork with host_network unset")
	}
	got := acctest.CheckPodAsWritten(t, client, written)
	t.Logf("what the policy changed:\n%s", acctest.PolicyDiff(written.Spec, got.Spec))
}
