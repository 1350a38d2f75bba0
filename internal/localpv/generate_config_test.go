package localpv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// TestAccLocalPV_listGenerateConfig adopts a cluster's hand-made storage as a user does with
// Terraform 1.14+, through the real CLI and the provider built from this tree: two classes and
// three local volumes made with the Kubernetes API (one with an extra node-affinity term, labels
// and mount options, one of each class), a .tfquery.hcl listing them, `terraform query
// -generate-config-out=generated.tf`, then `terraform plan` shows five imports and no change,
// apply imports them, the next plan is empty, and nothing on the cluster changed (every object's
// resourceVersion is the same). OpenTofu has no list resources, nor Terraform before 1.14: the
// test is skipped under them.
func TestAccLocalPV_listGenerateConfig(t *testing.T) {
	if cli := os.Getenv("TF_ACC_TERRAFORM_PATH"); cli != "" {
		requireQuery(t, cli) // before DevCLI builds the provider
	}
	f := newFixture(t)
	cli, rc := acctest.DevCLI(t)
	ctx := context.Background()

	provisioner := "example.com/" + acctest.RandomName("acc-adopt")
	fast, slow := acctest.RandomName("acc-adopt-fast"), acctest.RandomName("acc-adopt-slow")
	retain, wffc := corev1.PersistentVolumeReclaimRetain, storagev1.VolumeBindingWaitForFirstConsumer
	for _, sc := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: fast, Labels: map[string]string{"tier": "fast"}, Annotations: map[string]string{"example.com/owner": "storage-team"}},
			Provisioner: provisioner, ReclaimPolicy: &retain, VolumeBindingMode: &wffc, MountOptions: []string{"noatime"},
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "kubernetes.io/hostname", Values: []string{f.node}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: slow}, Provisioner: provisioner, VolumeBindingMode: &wffc, Parameters: map[string]string{"tier": "hdd"}},
	} {
		if _, err := f.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = f.client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
		})
	}
	pvs := []string{acctest.RandomName("acc-adopt-pv"), acctest.RandomName("acc-adopt-pv"), acctest.RandomName("acc-adopt-pv")}
	f.handMadePV(pvs[0], fast, filepath.Join(f.root, "nvme", "vol1"), func(pv *corev1.PersistentVolume) {
		pv.Labels = map[string]string{"tier": "fast"}
		pv.Spec.MountOptions = []string{"noatime"}
		term := &pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0]
		term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}})
	})
	f.handMadePV(pvs[1], fast, filepath.Join(f.root, "nvme", "vol2"), nil)
	f.handMadePV(pvs[2], slow, filepath.Join(f.root, "hdd", "vol1"), func(pv *corev1.PersistentVolume) {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	})
	// The volumes settle (Available) before their versions are taken.
	for _, name := range pvs {
		err := kube.Poll(ctx, 100*time.Millisecond, 30*time.Second, "volume "+name+" to be Available", func(ctx context.Context) (bool, string, error) {
			pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return pv.Status.Phase == corev1.VolumeAvailable, "phase " + string(pv.Status.Phase), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	versions := func() map[string]string {
		v := map[string]string{}
		for _, name := range []string{fast, slow} {
			sc, err := f.client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			v["StorageClass "+name] = sc.ResourceVersion
		}
		for _, name := range pvs {
			pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			v["PersistentVolume "+name] = pv.ResourceVersion
		}
		return v
	}
	before := versions()

	w := acctest.NewWorkspace(t, cli, rc, acctest.ProviderConfigSSH(f.sshd, f.node))
	query := fmt.Sprintf(`list "clusterstorage_storage_class" "adopt" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_provisioner = %q
  }
}

list "clusterstorage_local_pv" "fast" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_class_name = %q
    node               = %q
  }
}

list "clusterstorage_local_pv" "slow" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_class_name = %q
  }
}
`, provisioner, fast, f.node, slow)
	if err := os.WriteFile(filepath.Join(w.Dir, "adopt.tfquery.hcl"), []byte(query), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := w.Exec(t, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(cli), strings.Join(args, " "), err, out)
		}
		return out
	}

	out, err := w.Query(t, "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatalf("terraform query: %v\n%s", err, out)
	}
	t.Logf("terraform query:\n%s", out)
	for _, name := range append([]string{fast, slow}, pvs...) {
		if !strings.Contains(out, name) {
			t.Errorf("terraform query does not show %s", name)
		}
	}
	generated, err := os.ReadFile(filepath.Join(w.Dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated.tf:\n%s", generated)
	for what, want := range map[string]int{
		`resource "clusterstorage_storage_class"`: 2, `resource "clusterstorage_local_pv"`: 3, "import {": 5, "identity = {": 5,
	} {
		if n := strings.Count(string(generated), what); n != want {
			t.Errorf("generated.tf has %d %s, want %d", n, what, want)
		}
	}

	out = run("plan")
	t.Logf("terraform plan:\n%s", out)
	if !strings.Contains(out, "Plan: 5 to import, 0 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("the plan of the generated configuration does more than import:\n%s", out)
	}
	out = run("apply", "-auto-approve")
	if !strings.Contains(out, "Resources: 5 imported, 0 added, 0 changed, 0 destroyed.") {
		t.Fatalf("apply:\n%s", out)
	}
	out = run("plan", "-detailed-exitcode")
	if !regexp.MustCompile(`No changes\.`).MatchString(out) {
		t.Fatalf("the plan after the import is not empty:\n%s", out)
	}
	if after := versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the adoption changed objects on the cluster: resourceVersions %v, were %v", after, before)
	}
	// The test's cleanup removes the objects; the state goes with the workspace.
}

// requireQuery skips the test under a CLI without `terraform query`: OpenTofu, Terraform before 1.14.
func requireQuery(t *testing.T, cli string) {
	t.Helper()
	out, err := exec.Command(cli, "version", "-json").Output()
	if err != nil {
		t.Fatalf("%s version -json: %v", cli, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version -json: %v\n%s", cli, err, out)
	}
	parts := strings.SplitN(v.Version, ".", 3)
	minor := 0
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1]) //nolint:errcheck // 0: skipped as too old
	}
	if strings.Contains(filepath.Base(cli), "tofu") || parts[0] != "1" || minor < 14 {
		t.Skipf("%s %s has no list resources (`terraform query`: Terraform 1.14+)", filepath.Base(cli), v.Version)
	}
}
