package benchtest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// PlausibleIn checks the attribute values of one fio result (a data source's, or one result of
// several): I/O in the directions the job does (reads, writes), none in the others, ordered
// latency percentiles, fio's version, a runtime and a recent measured_at.
func PlausibleIn(values map[string]any, reads, writes bool) error {
	var errs []error
	for _, d := range []struct {
		name string
		want bool
	}{{"read", reads}, {"write", writes}} {
		obj, _ := values[d.name].(map[string]any)
		iops := acctest.Number(obj["iops"])
		if d.want != (iops > 0) {
			errs = append(errs, fmt.Errorf("%s.iops = %v, want I/O: %v", d.name, iops, d.want))
		}
		if !d.want {
			continue
		}
		if bw := acctest.Number(obj["bandwidth_bytes_per_second"]); bw <= 0 {
			errs = append(errs, fmt.Errorf("%s.bandwidth_bytes_per_second = %v", d.name, bw))
		}
		lat, _ := obj["latency_us"].(map[string]any)
		prev := 0.0
		for _, p := range []string{"p50", "p95", "p99", "p99_9", "max"} {
			v := acctest.Number(lat[p])
			if v <= 0 || v < prev {
				errs = append(errs, fmt.Errorf("%s.latency_us: %s = %v after %v; percentiles must be positive and ordered (%v)", d.name, p, v, prev, lat))
			}
			prev = v
		}
		if mean := acctest.Number(lat["mean"]); mean <= 0 || mean > acctest.Number(lat["max"]) {
			errs = append(errs, fmt.Errorf("%s.latency_us.mean = %v, max %v", d.name, mean, acctest.Number(lat["max"])))
		}
	}
	if v, _ := values["fio_version"].(string); !strings.HasPrefix(v, "fio-3") {
		errs = append(errs, fmt.Errorf("fio_version = %q", v))
	}
	if s := acctest.Number(values["runtime_seconds"]); s <= 0 {
		errs = append(errs, fmt.Errorf("runtime_seconds = %v", s))
	}
	if at, _ := values["measured_at"].(string); at == "" {
		errs = append(errs, errors.New("measured_at is empty"))
	} else if ts, err := time.Parse(time.RFC3339, at); err != nil || time.Since(ts) > time.Hour {
		errs = append(errs, fmt.Errorf("measured_at = %q (%v)", at, err))
	}
	return errors.Join(errs...)
}

// SpreadHoldsIn checks that, in the attribute values of one result, spread.<key> has min <= the
// median in <dir>.<attr> <= max, min > 0, and a coefficient of variation from 0 to its bound for
// positive values (the square root of the rounds, at most benchmark.MaxRounds, as a percentage).
func SpreadHoldsIn(values map[string]any, dir, attr, key string) error {
	obj, _ := values[dir].(map[string]any)
	med := acctest.Number(obj[attr])
	sp, _ := values["spread"].(map[string]any)
	s, _ := sp[key].(map[string]any)
	lo, hi, cv := acctest.Number(s["min"]), acctest.Number(s["max"]), acctest.Number(s["cv_percent"])
	if bound := 100 * math.Sqrt(benchmark.MaxRounds); !(lo > 0 && lo <= med && med <= hi && cv >= 0 && cv <= bound) {
		return fmt.Errorf("spread.%s = %v with median %s.%s = %v: want 0 < min <= median <= max, 0 <= cv_percent <= %.0f", key, s, dir, attr, med, bound)
	}
	return nil
}

// Check makes f a TestCheckFunc, for checks that need no state.
func Check(f func() error) resource.TestCheckFunc {
	return func(*terraform.State) error { return f() }
}
