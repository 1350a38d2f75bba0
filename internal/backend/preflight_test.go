package backend

import (
	"strings"
	"testing"
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
