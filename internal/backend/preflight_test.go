package backend

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

func TestPreflightProblems(t *testing.T) {
	ready := parseFacts("iscsiadm=yes\niscsid=yes\nnfs4=yes\nhugepages_kib=2097152\nnvme_tcp=loaded\n")
	bare := parseFacts("iscsiadm=no\niscsid=no\nnfs4=no\nhugepages_kib=0\nnvme_tcp=available\n")
	lh := spec{Type: typeLonghorn}
	hostpath := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
	mayastor := hostpath
	mayastor.OpenEBS.MayastorEnabled = true

	for _, s := range []spec{lh, hostpath, mayastor} {
		if p := s.problems(ready); len(p) != 0 {
			t.Errorf("%s on a ready node: %q", s.Type, p)
		}
	}
	if p := hostpath.problems(bare); len(p) != 0 || hostpath.needsPreflight() {
		t.Errorf("hostpath has no prerequisites: %q", p)
	}
	got := strings.Join(lh.problems(bare), "; ")
	for _, want := range []string{"open-iscsi is not installed", "iscsid is not running", "no NFSv4 client"} {
		if !strings.Contains(got, want) {
			t.Errorf("longhorn on a bare node: %q lacks %q", got, want)
		}
	}
	got = strings.Join(mayastor.problems(bare), "; ")
	for _, want := range []string{"0 MiB of hugepages: Mayastor needs at least 2048 MiB", "nvme_tcp is not loaded"} {
		if !strings.Contains(got, want) {
			t.Errorf("mayastor on a bare node: %q lacks %q", got, want)
		}
	}
}

func TestCheckMayastorNodes(t *testing.T) {
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	labelled := map[string]string{"openebs.io/engine": "mayastor", "kubernetes.io/arch": "amd64"}
	for _, tc := range []struct {
		name   string
		nodes  []*corev1.Node
		values map[string]any
		want   []string
	}{
		{"no label", []*corev1.Node{node("a", map[string]string{"kubernetes.io/arch": "amd64"}), node("b", nil), node("c", nil)}, nil,
			[]string{"No node for Mayastor", "a: no label openebs.io/engine=mayastor", "b: no label kubernetes.io/arch=amd64, openebs.io/engine=mayastor"}},
		{"one node, 3 etcd replicas", []*corev1.Node{node("a", labelled)}, nil,
			[]string{"Too few nodes for Mayastor's etcd", "runs 3 replicas", "1 schedulable node(s)", `name = "mayastor.etcd.replicaCount", value = "1"`}},
		{"one node, 1 etcd replica", []*corev1.Node{node("a", labelled)}, map[string]any{"mayastor": map[string]any{"etcd": map[string]any{"replicaCount": 1}}}, nil},
		{"three nodes, one labelled", []*corev1.Node{node("a", labelled), node("b", nil), node("c", nil)}, nil, nil},
	} {
		objs := make([]runtime.Object, 0, len(tc.nodes))
		for _, n := range tc.nodes {
			objs = append(objs, n)
		}
		diags := checkMayastorNodes(context.Background(), fake.NewClientset(objs...), tc.values)
		var text string
		for _, d := range diags {
			text += d.Summary() + ": " + d.Detail() + "\n"
		}
		if (len(tc.want) == 0) != (len(diags) == 0) {
			t.Errorf("%s: %s", tc.name, text)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", tc.name, text, w)
			}
		}
	}
}
