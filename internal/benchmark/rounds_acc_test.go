package benchmark_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
)

// Three rounds on one local volume: the figures are medians, each headline figure has a spread
// whose range holds the median, and the summary says how much the rounds differed.
func TestAccStorageBenchmark_rounds(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	pv, dir := e.LocalPV(class, "")
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
`, class, e.NS, e.Node, benchtest.PodAttributes()),
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
				benchtest.Check(func() error { return e.NoLeftovers(false) }),
				benchtest.Check(func() error { return e.VolumeAvailable(pv) }),
				benchtest.Check(func() error { return benchtest.NoRunDirs(dir) }),
			),
		}},
	})
}

// spreadHolds checks that spread.<key> has min <= the median in <dir>.<attr> <= max, min > 0,
// and a coefficient of variation from 0 to its bound for positive values (the square root of the
// rounds, at most MaxRounds, as a percentage).
func spreadHolds(dir, attr, key string) statecheck.StateCheck {
	return acctest.CheckValues(addr, func(values map[string]any) error { return benchtest.SpreadHoldsIn(values, dir, attr, key) })
}
