package helm

// SetDriftParallel sets how many objects ObjectDriftCached checks at once and returns a function
// that puts the previous bound back (the benchmark's "before": one at a time).
func SetDriftParallel(n int) (restore func()) {
	was := maxDriftParallel
	maxDriftParallel = n
	return func() { maxDriftParallel = was }
}
