package benchmark

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// HeartbeatStale is how old a run's heartbeat must be for the sweep to remove its objects, for
// tests outside the package.
const HeartbeatStale = kube.HeartbeatStale

// PodFromConfig is the fio pod the data source writes (Measure, podRun.pod) for a configuration
// that sets storage_class, namespace, image and image_pull_policy and leaves everything else,
// host_network among it, at its default; hostname pins it to a node as `node` would.
func PodFromConfig(class, namespace, hostname, image, pullPolicy string) (*corev1.Pod, error) {
	r, diags := cfg(func(m *Model) {
		m.StorageClass = types.StringValue(class)
		m.Namespace = types.StringValue(namespace)
		m.Image = types.StringValue(image)
		m.ImagePullPolicy = types.StringValue(pullPolicy)
	}).Request()
	if diags.HasError() {
		return nil, fmt.Errorf("%v", diags)
	}
	run := podRun{
		Target: r.Target, Hostname: hostname, Spec: r.Spec,
		Image: r.Image, PullPolicy: r.PullPolicy, HostNetwork: r.HostNetwork, RunID: newRunID(),
	}
	runDir := mountPath + "/" + runDirPrefix + run.RunID
	args, err := fio.Args(r.Spec, runDir)
	if err != nil {
		return nil, err
	}
	return run.pod(args, runDir, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), 3600), nil
}
