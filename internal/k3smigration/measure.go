package k3smigration

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// measureRuntime and measureSize bound each write measurement.
const (
	measureRuntime = 10 * time.Second
	measureSize    = "256M"
)

// measureDirName is the directory a measurement runs in, below the measured directory's parent.
const measureDirName = ".clusterstorage-k3s-migration-fio"

// measureSpec is the sequential-write job (fio's sequential_write profile: 1M blocks, 16 in
// flight, direct I/O), shortened.
func measureSpec() (fio.Spec, error) {
	spec, err := fio.Profile("sequential_write")
	if err != nil {
		return fio.Spec{}, err
	}
	spec.Jobs[0].Runtime = measureRuntime
	spec.Jobs[0].Size = measureSize
	return spec, nil
}

// measureWrite runs the sequential-write job with fio in a directory of its own below dir (on the
// filesystem to measure) and returns the write bandwidth in bytes per second. The directory is
// removed whatever happens.
func measureWrite(ctx context.Context, host *node.Host, dir string) (float64, error) {
	spec, err := measureSpec()
	if err != nil {
		return 0, err
	}
	runDir := path.Join(dir, measureDirName)
	args, err := fio.Args(spec, runDir)
	if err != nil {
		return 0, err
	}
	if _, err := runOn(ctx, host, node.NewCommand("sh", "-c", `command -v fio >/dev/null 2>&1 || { echo "fio is not installed on the node (apt-get install fio)" >&2; exit 127; }`)); err != nil {
		return 0, err
	}
	if err := host.MkdirAll(ctx, runDir, node.DirOptions{Mode: 0o700}); err != nil {
		return 0, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, err := runOn(cctx, host, node.NewCommand("rm", "-rf", "--one-file-system", "--", runDir)); err != nil {
			tflog.Warn(ctx, "could not remove the fio directory", map[string]any{"dir": runDir, "error": err.Error()})
		}
	}()
	tflog.Info(ctx, "measuring sequential writes with fio", map[string]any{"dir": runDir, "runtime": measureRuntime.String(), "size": measureSize})
	res, err := host.Exec(ctx, node.NewCommand("fio", args...), node.ExecOptions{Timeout: measureRuntime + 2*time.Minute})
	if err != nil {
		return 0, fmt.Errorf("fio in %s: %w", runDir, err)
	}
	r, err := fio.Parse(res.Stdout)
	if err != nil {
		return 0, fmt.Errorf("fio in %s: %w", runDir, err)
	}
	return r.Write.BandwidthBytesPerSecond, nil
}
