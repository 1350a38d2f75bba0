package benchmark

// HeartbeatStale is how old a run's heartbeat must be for the sweep to remove its objects, for
// tests outside the package.
const HeartbeatStale = heartbeatStale
