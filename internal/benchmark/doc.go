// Package benchmark implements the clusterstorage_storage_benchmark data source: fio against a
// StorageClass (a temporary claim and pod), an existing claim (a pod), or a directory on a node
// (over SSH), with results cached in a ConfigMap.
//
// Data sources that run the same benchmark on targets of their own build on its exported API:
//
//   - the models of its attributes (Model, made of TargetModel, PodModel and JobModel, and
//     IOResultModel and SpreadModel for results), validated into a Request by Model.Request and
//     filled by Model.Effective;
//   - the runners: CheckTarget before a run, SweepNamespaces for what killed runs left, Measure
//     for one fio run, and TotalRuntime and SetupAllowance for the read timeout;
//   - the arithmetic of rounds (Interleave, MedianResult, Spreads, Figures) and the schema and
//     words of their results (RoundsAttribute, RoundsOf, SpreadAttribute, SpreadModelOf,
//     IOResultOf, SummaryOf).
//
// Its acceptance-test fixtures, which such data sources' tests share, are in package benchtest.
package benchmark
