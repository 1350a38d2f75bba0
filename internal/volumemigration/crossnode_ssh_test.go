package volumemigration

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	sshnode "github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

func TestNodePath(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  corev1.PersistentVolumeSource
		want string
	}{
		{"local", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/a"}}, "/mnt/disks/a"},
		{"hostPath", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/openebs/local/pvc-1"}}, "/var/openebs/local/pvc-1"},
		{"csi", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "driver.longhorn.io", VolumeHandle: "v"}}, ""},
		{"nfs", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/export"}}, ""},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: tc.src}}
		if got := nodePath(pv); got != tc.want {
			t.Errorf("%s: nodePath = %q, want %q", tc.name, got, tc.want)
		}
	}
	if nodePath(nil) != "" {
		t.Error("nodePath(nil) is not empty")
	}
}

// TestCheckTransfer: "ssh" is refused without the ssh block, with a source volume that is no
// directory on its node and with a target class of another provisioner; "auto" and
// "pod_network" never are.
func TestCheckTransfer(t *testing.T) {
	local := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "src"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/d"}}}}
	csi := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "src"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	for _, tc := range []struct {
		name, transfer string
		ssh            bool
		source         *corev1.PersistentVolume
		provisioner    string
		want           string // in the summary; "" for none
	}{
		{"auto without ssh", transferAuto, false, csi, "driver.longhorn.io", ""},
		{"pod network", transferPodNetwork, false, csi, "driver.longhorn.io", ""},
		{"ssh", transferSSH, true, local, "openebs.io/local", ""},
		{"ssh local-path", transferSSH, true, local, "rancher.io/local-path", ""},
		{"ssh static", transferSSH, true, local, "kubernetes.io/no-provisioner", ""},
		{"ssh source unknown", transferSSH, true, nil, "", ""},
		{"ssh without the block", transferSSH, false, local, "openebs.io/local", "needs the provider's ssh block"},
		{"ssh from csi", transferSSH, true, csi, "openebs.io/local", "not a directory on its node"},
		{"ssh to csi", transferSSH, true, local, "driver.longhorn.io", "does not make volumes that are directories"},
	} {
		p := checkTransfer(tc.transfer, tc.ssh, tc.source, "to", tc.provisioner)
		switch {
		case tc.want == "" && p != nil:
			t.Errorf("%s: refused: %v", tc.name, p)
		case tc.want != "" && p == nil:
			t.Errorf("%s: not refused", tc.name)
		case tc.want != "" && (!strings.Contains(p.Summary, tc.want) || p.Attribute != "cross_node_transfer"):
			t.Errorf("%s: %s: %v", tc.name, p.Attribute, p)
		}
	}
}

// TestViaSSH: the choice at apply. "pod_network" and "auto" without SSH take the pod network
// without reading anything; "ssh" without SSH fails; "auto" with SSH and a source that is no
// directory takes the pod network, "ssh" then fails naming the volume; with both directories
// (the new claim bound) it goes over SSH with both paths.
func TestViaSSH(t *testing.T) {
	ctx := context.Background()
	classic := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "src-csi"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	src := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "src"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/a"}}}}
	dst := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "dst"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/b"}}}}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "to"}, Provisioner: "openebs.io/local"}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "app"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "dst"}}
	client := fake.NewClientset(classic, src, dst, class, claim)
	pl := placement{Source: "n1", Target: "n2"}
	hosts := func(context.Context, string) (*sshnode.Host, error) { return nil, errors.New("no node in this test") }
	for _, tc := range []struct {
		name, transfer, source string
		ssh                    bool
		want                   bool
		err                    string
	}{
		{"pod network", transferPodNetwork, "src", true, false, ""},
		{"auto without ssh", transferAuto, "src", false, false, ""},
		{"ssh without ssh", transferSSH, "src", false, false, "needs the provider's ssh block"},
		{"auto from csi", transferAuto, "src-csi", true, false, ""},
		{"ssh from csi", transferSSH, "src-csi", true, false, "src-csi is not a directory"},
		{"auto", transferAuto, "src", true, true, ""},
		{"ssh", transferSSH, "src", true, true, ""},
	} {
		m := &Migrator{Client: client, Spec: Spec{Namespace: "app", Claim: "data", StorageClass: "to", Transfer: tc.transfer}}
		if tc.ssh {
			m.Hosts = hosts
		}
		v, ok, err := m.viaSSH(ctx, progress{TargetClaim: "t", SourceVolume: tc.source}, pl)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case ok != tc.want:
			t.Errorf("%s: over SSH %t, want %t", tc.name, ok, tc.want)
		case ok && (v.Source != "/a" || v.Target != "/b"):
			t.Errorf("%s: paths %+v", tc.name, v)
		}
	}
}

// TestSyncBuffer: ready closes once the wanted text arrived, also split over writes.
func TestSyncBuffer(t *testing.T) {
	b := &syncBuffer{want: []byte("ID listening "), ready: make(chan struct{})}
	for _, w := range []string{"rsyncd version 3 starting\nID list", "ening 2"} {
		select {
		case <-b.ready:
			t.Fatal("ready before the line")
		default:
		}
		if _, err := b.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-b.ready:
	default:
		t.Fatal("not ready after the line")
	}
	if _, err := b.Write([]byte("ID listening again\n")); err != nil { // closes once only
		t.Fatal(err)
	}
}
