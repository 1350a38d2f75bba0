package benchmark

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

// Measurement is one fio run: its parsed result, its output, and when it started.
type Measurement struct {
	Result  fio.Result
	Out     []byte
	Started time.Time
}

// Measure runs r's fio job once on its target, with the benchmark's runners (a pod for a storage
// class or claim, SSH for a node path), and parses fio's output. hostname pins a pod to r's node
// ("" leaves it free); nodeAttr is where a node that cannot be reached is reported. A cleanup
// problem is an error of its own, next to the run's.
func Measure(ctx context.Context, data *providerdata.Data, client kubernetes.Interface, r Request, hostname string, timeout time.Duration, nodeAttr path.Path) (Measurement, diag.Diagnostics) {
	var diags diag.Diagnostics
	log := func(msg string, fields map[string]any) { tflog.Debug(ctx, msg, fields) }
	runID := newRunID()
	start := time.Now()
	var out []byte
	var runErr, cleanupErr error
	switch r.Target.Kind {
	case TargetNodePath:
		host, err := data.Host(ctx, r.Target.Node)
		if err != nil {
			diags.AddAttributeError(nodeAttr, "Cannot reach node "+r.Target.Node, err.Error())
			return Measurement{}, diags
		}
		out, runErr, cleanupErr = nodeRun{Host: host, Node: r.Target.Node, Dir: r.Target.Name, Spec: r.Spec, RunID: runID, Log: log}.Run(ctx)
	default:
		out, runErr, cleanupErr = podRun{
			Client: client, Target: r.Target, Hostname: hostname, Spec: r.Spec,
			Image: r.Image, PullPolicy: r.PullPolicy, HostNetwork: r.HostNetwork, RunID: runID, Log: log,
		}.Run(ctx)
	}
	if cleanupErr != nil {
		diags.AddError("Benchmark cleanup failed",
			fmt.Sprintf("What the benchmark of %s created could not all be removed: %v\nRemove what is left by hand: objects labelled %s=%s, "+
				"or the directory %s%s below node_path.", r.Target, cleanupErr, LabelRun, runID, runDirPrefix, runID))
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = context.Cause(ctx)
	}
	if runErr != nil {
		diags.AddError("Benchmark of "+r.Target.String()+" failed", failure(runErr, timeout))
		return Measurement{}, diags
	}
	result, err := fio.Parse(out)
	if err != nil {
		diags.AddError("Benchmark of "+r.Target.String()+" failed", err.Error())
		return Measurement{}, diags
	}
	for _, msg := range result.Messages {
		tflog.Debug(ctx, "fio said", map[string]any{"message": msg})
	}
	tflog.Info(ctx, "fio run finished", map[string]any{"target": r.Target.String(), "summary": fio.Summary(result),
		"seconds": time.Since(start).Seconds(), "fio_seconds": result.RuntimeSeconds})
	return Measurement{Result: result, Out: out, Started: start}, diags
}

// roundsKey is the cache key of n rounds of the benchmark with key: the key itself for one
// round, so results cached before rounds existed are still found.
func roundsKey(key string, n int) string {
	if n == 1 {
		return key
	}
	return hashKey(fmt.Sprintf("clusterstorage-benchmark-rounds/v1\nkey=%s\nrounds=%d\n", key, n))
}

func hashKey(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}
