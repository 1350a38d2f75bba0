// Package faults holds the fault matrix (its tests only): faults of the real processes behind a
// cluster (the API server restarted, etcd stalled, SSH connections cut, a node powered off, the
// provider killed) hit a running apply, update or destroy of local volumes, StorageClasses or a
// storage backend, or a benchmark's or capacity's read, or the first copy of a volume_migration
// moving a claim with a writer from node 1 to node 2 (migration_test.go: SSH cut during the copy
// over SSH, node 2 powered off during the copy over the pod network and over SSH), on the local
// cluster, and each row records what the user saw, whether the state stayed true to the cluster,
// whether the next run converged, and how many objects leaked and files were lost. `make faults`
// runs every row and prints the matrix; `make test` runs the rows marked for CI.
package faults
