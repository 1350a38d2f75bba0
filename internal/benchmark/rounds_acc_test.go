package benchmark_test

import (
	"fmt"
	"math"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// Three rounds on one local volume: the figures are medians, each headline figure has a spread
// whose range holds the median, and the summary says how much the rounds differed.
func TestAccStorageBenchmark_rounds(t *testing.T) {
	e := setup(t)
	class := e.class()
	pv, dir := e.localPV(class, "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  rounds        = 3
  runtime       = "1s"
  size          = "16M"
%s}
`, class, e.ns, e.node, podAttributes()),
			ConfigStateChecks: []statecheck.StateCheck{
				plausible(true, true),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("rounds"), knownvalue.Int64Exact(3)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("summary"), knownvalue.StringRegexp(
					regexp.MustCompile(`^read \d+ IOPS .*; 3 rounds: read IOPS \d+-\d+ \(CV \d+\.\d %\), write IOPS \d+-\d+ \(CV \d+\.\d %\)$`))),
				spreadHolds("read", "iops", "read_iops"),
				spreadHolds("write", "iops", "write_iops"),
				spreadHolds("read", "bandwidth_bytes_per_second", "read_bandwidth"),
			},
			Check: resource.ComposeTestCheckFunc(
				check(func() error { return e.noLeftovers(false) }),
				check(func() error { return e.volumeAvailable(pv) }),
				check(func() error { return noRunDirs(dir) }),
			),
		}},
	})
}

// spreadHolds checks that spread.<key> has min <= the median in <dir>.<attr> <= max, min > 0,
// and a coefficient of variation from 0 to its bound for positive values (the square root of the
// rounds, at most MaxRounds, as a percentage).
func spreadHolds(dir, attr, key string) statecheck.StateCheck {
	return acctest.CheckValues(addr, func(values map[string]any) error { return spreadHoldsIn(values, dir, attr, key) })
}

func spreadHoldsIn(values map[string]any, dir, attr, key string) error {
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
