package localpv

import (
	"strings"
	"testing"
)

func TestCheckPath(t *testing.T) {
	cases := map[string]string{
		"/mnt/disks/vol1":                    "",
		"/var/openebs/local/pv1":             "",
		"/data":                              "",
		"":                                   "empty",
		"mnt/disks":                          "not absolute",
		"/mnt/disks/":                        "not clean",
		"/mnt//disks":                        "not clean",
		"/mnt/disks/../etc":                  "not clean",
		"/mnt/./disks":                       "not clean",
		"/":                                  "system directory",
		"/mnt":                               "system directory",
		"/var/lib":                           "system directory",
		"/etc":                               "belongs to the operating system",
		"/etc/ssl":                           "belongs to the operating system",
		"/usr/local/data":                    "belongs to the operating system",
		"/var/lib/kubelet/pods":              "belongs to the operating system",
		"/var/lib/rancher/k3s":               "belongs to the operating system",
		"/var/lib/rancher/k3s/storage/pvc-1": "belongs to the operating system",
		"/proc/1":                            "belongs to the operating system",
		"/etcetera/data":                     "",
		"/var/lib/rancher/k3s-backup":        "",
	}
	for p, want := range cases {
		err := CheckPath(p)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("CheckPath(%q) = %v, want an error containing %q", p, err, want)
		}
	}
}
