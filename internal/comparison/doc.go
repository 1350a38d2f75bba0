// Package comparison implements the clusterstorage_storage_comparison data source: one fio job on
// several targets (storage classes, claims, directories on nodes) in interleaved rounds, with the
// medians and spread of each, the ratio of each figure to a baseline target, and the memory of
// the pods that serve each target.
//
// Each run is a clusterstorage_storage_benchmark run: the targets, the fio job and pod settings,
// their validation and the runners are package benchmark's. This package adds the rounds across
// targets (data_source.go), the arithmetic and the words of the comparison (compare.go: ratios,
// warnings, the table), and its schema and models.
package comparison
