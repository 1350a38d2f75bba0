// Package backend implements the clusterstorage_storage_backend resource: Longhorn or OpenEBS
// installed as a Helm release through the Helm SDK (internal/helm), with typed settings mapped
// onto each chart version's value keys (longhorn.go, openebs.go).
//
// # One table of the charts
//
// engines.go holds, per engine and per minor version, every value key the provider writes or
// reads, its default in the real chart, and each subchart's dependency condition, as read from
// the real charts' Chart.yaml and values.yaml at their release tags. TestTableMatchesRealCharts
// checks the table against those facts (recorded in the test); the schema's descriptions are
// built from it (keyDoc). Accepted: Longhorn 1.7.x to 1.12.x (the keys are the same in each;
// 1.10 and later quote settings, and the provider passes settings as strings); OpenEBS 4.0.x,
// 4.1.x, 4.2.x and 4.4.x. The default pins are the newest verified patches (1.12.1, 4.4.0). A
// later minor of the same major version that the table does not list is installed, with a
// warning, with the layout of the nearest verified minor below it (4.5.x, 4.6.x; Longhorn 1.13),
// or with a layout known from elsewhere (LayoutOnly: OpenEBS 4.3.x, whose chart could not be read
// here, has 4.4's Loki/Alloy layout without rawfile per OpenEBS's 4.3.x docs); any other version
// is refused at plan, naming the supported ranges. Every archive is checked before anything is
// installed (chartcheck.go, at plan when something changes and again at apply): its value
// layout, then its templates rendered offline with the planned values (helm.Render): engines
// turned off render no workload, engines on render theirs (and their CSIDriver, if any, has the
// guards' name), and no direct subchart the layout does not know is left on.
//
// OpenEBS facts the table carries: from 4.0.0 on the engines' conditions are
// engines.replicated.mayastor.enabled, engines.local.lvm.enabled and engines.local.zfs.enabled
// (4.0.x values also carry mayastor.enabled, lvm-localpv.enabled, zfs-localpv.enabled, which no
// condition reads). Before 4.4 there is no loki or alloy subchart: loki_enabled maps to
// Mayastor's own loki-stack (mayastor.loki-stack.enabled, on by default in the chart), so it
// needs mayastor_enabled; alloy_enabled = true is refused there. Mayastor's class is
// <release>-single-replica; its etcd runs mayastor.etcd.replicaCount (3) replicas with a hard
// pod anti-affinity; its io-engine runs only on nodes labelled openebs.io/engine=mayastor.
//
// # Longhorn upgrades one minor at a time
//
// Longhorn's pre-upgrade checker refuses a downgrade and an upgrade that skips a minor. A
// version change that does either is refused at plan (and again at apply, for a version
// constraint), with the path spelled out: each intermediate minor's newest patch, one apply per
// step. Walking the path inside one apply was not chosen as the default: each step is a full
// Longhorn upgrade that must settle (engine images, replicas) before the next, so one apply
// would silently run several long, separately failing upgrades, and a failure half way would
// leave a version nobody configured.
//
// # Checks before installing
//
// Before an install or upgrade, through the API and whether or not `preflight` is on:
// CustomResourceDefinitions the chart would create that exist and belong to something else
// (Longhorn's, or the VolumeSnapshot CRDs of OpenEBS's openebs-crds subchart; the error says to
// set openebs.volume_snapshot_crds = false), and for Mayastor a node labelled for its io-engine
// and enough schedulable nodes for its etcd replicas. With `preflight`, each node (for Mayastor:
// each labelled node) is also checked over SSH.
//
// # The guards' drivers
//
// Both guards (guard.go for destroy, strand.go for an update) read the drivers a release serves
// in one way (releaseDrivers, guard_drivers.go): the CSIDriver objects and StorageClass
// provisioners of the release's manifest, each under the part of the release it comes from (the
// subchart of its "# Source:" path), over the provider's own list as a floor. Destroy counts
// the whole release's; an update that turns an engine off (or a chart version that drops its
// subchart) counts that subchart's, less drivers a part that stays declares too. At plan the
// chart archive is fetched once (planArchive) for the render check and the update guard's
// reading of which engines the archive turns on by default.
//
// # Test fixtures
//
// The acceptance tests install fixture charts written by us (internal/acctest/testdata/charts,
// its README.md says what each does and why), one directory per version range, packaged once
// per release. TestFixturesMatchTable fails when a fixture's key tree, defaults, conditions or
// kubeVersion disagree with the table. What the fixtures do differently from the real charts:
//
//   - Workloads are busybox processes (and rancher's local-path-provisioner standing in for
//     OpenEBS's hostpath provisioner); nothing but the hostpath provisioner stores data.
//   - Longhorn's class `longhorn` is a Helm post-install/post-upgrade hook object (real
//     longhorn-manager creates it from ConfigMap longhorn-storageclass after the install and
//     re-creates it when that changes); like a hook object it stays after uninstall.
//   - There are no Longhorn Setting objects (real longhorn-manager makes them): no image of the
//     local cluster can talk TLS to its API server. The uninstall Job reads
//     deleting-confirmation-flag from longhorn-default-setting instead of the Setting, so the
//     flag takes effect through the provider's own edit of that ConfigMap before uninstalling
//     (the patch of the Setting, its first step, finds none); there is no Helm upgrade.
//   - Longhorn's pre-upgrade check reads the installed version from the release's ConfigMap
//     label at render time; its messages are ours. Longhorn's ClusterRole and binding are left
//     out.
//   - Every openebs.io/local claim (hostpath, Mayastor's etcd, Loki, MinIO) is provisioned under
//     the localpv-provisioner's base path, not each class's BasePath. The OpenEBS pre-upgrade
//     hook is one Job without its RBAC; Mayastor's etcd is a template, not the bitnami subchart.
//   - Keys below `mayastor.` were read from mayastor-extensions 2.6 and 2.7; 2.8 (OpenEBS 4.2)
//     and 2.10 (4.4) are taken to keep them; 2.10's own loki/alloy subcharts are empty (the
//     umbrella turns them off).
//   - The Longhorn fixture provisions nothing: TestAccStorageBackend_migrateLonghornExample binds
//     its claim of class `longhorn` to a static local volume (reclaim Retain), which the guards
//     count as Longhorn's through the class's provisioner; a real Longhorn volume is a CSI volume
//     of driver.longhorn.io, reclaim Delete, deleted by Longhorn when delete_source hands it back.
package backend
