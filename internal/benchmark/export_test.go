package benchmark

// LocalVolume is localVolume for the acceptance tests of package benchmark_test.
var LocalVolume = localVolume

// HeartbeatStale is how old a run's heartbeat must be for the sweep to remove its objects, for
// tests outside the package.
const HeartbeatStale = heartbeatStale
