package benchmark_test

import (
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
)

const addr = "data.clusterstorage_storage_benchmark.test"

// plausible is a state check on the data source's numbers: I/O in the directions the job does,
// none in the others, and ordered latency percentiles.
func plausible(reads, writes bool) statecheck.StateCheck {
	return acctest.CheckValues(addr, func(values map[string]any) error { return benchtest.PlausibleIn(values, reads, writes) })
}
