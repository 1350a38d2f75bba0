// Package capacity implements the clusterstorage_storage_capacity data source: how much space is
// free, and on what kind of disk, for one target, read without writing anything:
//
//   - node_path: on each node (all, or `nodes`), over the provider's shared SSH pool and in
//     parallel, the filesystem holding the path. fs.sh prints statfs(2) numbers (`stat -f`), which
//     Filesystem fills as GNU df computes them (size f_blocks, used f_blocks-f_bfree, available
//     f_bavail, percentages rounded up), and /proc/self/mountinfo, from which the mount holding
//     the resolved path is the longest mount point above it (the last one mounted there).
//     block.sh then walks sysfs from the mount's major:minor (or its source device, for btrfs's
//     anonymous st_dev) through partitions and device-mapper/md slaves (LVM, LUKS) to the disks,
//     and reads each disk's rotational, ro and removable flags, size, model and a loop device's
//     backing file. A missing path is an error wrapping ErrPathMissing.
//   - storage_class: the class's CSIStorageCapacity objects in every namespace, summed per
//     distinct nodeTopology selector, with the nodes each selects; for a
//     kubernetes.io/no-provisioner class, its Available PersistentVolumes, in total and per node
//     their node affinity allows. What a class has is listed in capacity_sources; what it lacks
//     is null (a class with neither has an empty capacity_sources, not an error).
//   - backend: Longhorn's nodes.longhorn.io objects in the backend's namespace (spec.disks and
//     status.diskStatus, field names from longhorn-manager's k8s/pkg/apis/longhorn/v1beta2/node.go),
//     or, for OpenEBS, node_path's measurement of the hostpath base path: the BasePath of the
//     cas.openebs.io/config annotation of the openebs.io/local classes that Helm's
//     meta.helm.sh/release-namespace annotation ties to the namespace (default
//     /var/openebs/local), measured at its nearest existing parent when not made yet.
//
// Tests: the node is this machine, reached through a test sshd (internal/acctest). Filesystems
// are real: a loop-mounted ext4 image and a tmpfs made by the test (it runs as root), compared
// with `df -B1 --output=...` run by the test itself. The kernel here has no device-mapper and
// its loop driver makes no partitions, so the LVM/partition walk of block.sh is tested on a
// directory tree laid out as sysfs is (Documentation/ABI/stable/sysfs-block), passed as its
// optional third argument; on nodes it always walks /sys. CSIStorageCapacity objects and PersistentVolumes
// are created through the API, as a CSI driver's external-provisioner and an administrator
// would. OpenEBS is read once from a hostpath class made through the API with the annotations the
// chart and Helm put on it, and once from a real release installed by clusterstorage_storage_backend
// from the fixture chart repository (internal/acctest/testdata/charts). Longhorn's node objects are created through the API too, since no Longhorn manager can
// run here: when the cluster has no nodes.longhorn.io CRD, the tests install
// testdata/longhorn-nodes-crd.yaml (the real CRD's group, names, scope, version and status
// subresource, with the schema reduced to the fields read here plus x-kubernetes-preserve-unknown-fields)
// and remove it afterwards only if they made it and no other objects of it exist; a CRD someone
// else made is never touched.
package capacity
