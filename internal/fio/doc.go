// Package fio builds fio workloads and reads fio's results.
//
// It is pure: no Kubernetes, no SSH and no Terraform types. The data source
// clusterstorage_storage_benchmark turns its configuration into a [Spec]
// (usually [Profile] followed by [Spec.Apply] with the user's overrides),
// checks it with [Spec.Validate], renders it with [Args] or [JobFile], runs fio
// wherever it runs it (a pod, a node over SSH), removes the files listed by
// [Files], and reads fio's output with [Parse].
//
// # Files fio creates
//
// Every rendered workload sets fio's filename_format to
// "clusterstorage-fio.<hash>.$jobname.$jobnum" inside the given directory, where
// <hash> is the first 16 characters of [Hash]. fio therefore creates exactly one
// file per job clone: num_jobs files for each job of the spec, named
// "<dir>/clusterstorage-fio.<hash>.<job name>.<clone>", clone counting from 0 in
// every job. [Files] lists those paths. Each clone gets its own file (fio's own
// behaviour for numjobs), so parallel sequential streams do not read the same
// blocks. fio lays out every job's files before the first job starts, so a run
// needs [SpaceBytes] of free space. The workload also sets unlink=1, so fio
// removes each file when its job ends; callers should still remove [Files]
// afterwards, because a run that was killed or failed leaves them behind. All
// names begin with [FilePrefix], so stale files of any spec can be found.
//
// # Results
//
// [Parse] reads fio's JSON (fio's stdout, optionally followed by its stderr, so
// that fio's own error messages reach the user). Per-job figures are in
// Result.Jobs; Result.Read, Write and Sync aggregate them as [Result] documents.
// [Summary] writes one line for logs and a computed attribute.
//
// # Rendering rules
//
// Every job is time based (time_based with runtime), jobs are reported per
// group (group_reporting), several jobs run one after another (stonewall), and
// gtod_reduce is never set, because it zeroes the latency statistics. The
// percentile list is always 50, 95, 99 and 99.9, and fio is asked for total
// latency percentiles (lat_percentiles=1) in addition to completion latency.
//
// # Sizes
//
// Sizes and block sizes use fio's syntax with its default kb_base=1024: a whole
// number with an optional k, M, G, T or P (any case), optionally followed by
// "i", "iB" or "B"; every prefix is a power of 1024 (4k = 4KiB = 4KB = 4096).
// Rendering always writes the canonical form ([FormatSize]), so "200m" and
// "200M" render, and hash, the same.
package fio
