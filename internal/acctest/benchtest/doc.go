// Package benchtest holds the acceptance-test fixtures of the data sources that run fio
// (clusterstorage_storage_benchmark and those built on package benchmark): a namespace of the
// test's own, local volumes and their classes, the local-path provisioner, and checks that the
// numbers are plausible and that a run left nothing behind.
//
// Only tests import it: it imports acctest, and so the provider. Package benchmark's own tests
// (package benchmark, not benchmark_test) cannot; what they share with it is in testenv.
package benchtest
