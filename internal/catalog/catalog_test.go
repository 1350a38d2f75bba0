package catalog

import (
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOpenEBSConfig reads a class's cas.openebs.io/config as OpenEBS's hostpath-class.yaml writes
// it; OpenEBS's defaults fill what it leaves out.
func TestOpenEBSConfig(t *testing.T) {
	class := func(config string) storagev1.StorageClass {
		sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "openebs-hostpath"}, Provisioner: OpenEBSLocalProvisioner}
		if config != "" {
			sc.Annotations = map[string]string{OpenEBSConfigAnnotation: config}
		}
		return sc
	}
	for _, c := range []struct {
		name, config, wantType, wantBase, wantErr string
	}{
		{name: "no annotation", wantType: "hostpath", wantBase: OpenEBSDefaultBasePath},
		{name: "as the chart writes it", config: "- name: StorageType\n  value: \"hostpath\"\n- name: BasePath\n  value: \"/mnt/nvme0/openebs\"\n", wantType: "hostpath", wantBase: "/mnt/nvme0/openebs"},
		{name: "type only", config: "- name: StorageType\n  value: device\n", wantType: "device", wantBase: OpenEBSDefaultBasePath},
		{name: "empty base path", config: "- name: BasePath\n  value: \"\"\n", wantType: "hostpath", wantBase: OpenEBSDefaultBasePath},
		{name: "not a list", config: "StorageType: hostpath", wantErr: "is not a YAML list of name/value"},
	} {
		typ, base, err := OpenEBSConfig(class(c.config))
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "openebs-hostpath") {
				t.Errorf("%s: error %v, want one naming the class and %q", c.name, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case typ != c.wantType || base != c.wantBase:
			t.Errorf("%s: (%q, %q), want (%q, %q)", c.name, typ, base, c.wantType, c.wantBase)
		}
	}
}
