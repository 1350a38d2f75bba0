package benchmark

// LocalVolume is localVolume for the acceptance tests of package benchmark_test.
var LocalVolume = localVolume
