package acctest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// RequireQuery skips the test under a CLI without `terraform query` (OpenTofu, Terraform before
// 1.14), read from TF_ACC_TERRAFORM_PATH; call it before DevCLI builds the provider.
func RequireQuery(t testing.TB) {
	t.Helper()
	cli := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if cli == "" {
		return
	}
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

// WriteFile writes content to name (e.g. "adopt.tfquery.hcl") in the workspace.
func (w *Workspace) WriteFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.Dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Run runs the CLI with args to its end and returns its output; the test fails when it fails.
func (w *Workspace) Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := w.Exec(t, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(w.cli), strings.Join(args, " "), err, out)
	}
	return out
}

// AdoptGenerated adopts what the workspace's .tfquery.hcl lists as a user does: `terraform query
// -generate-config-out=generated.tf`, then checks that generated.tf holds each string of want
// (white space folded) as many times as want says, that `terraform plan` imports imports objects
// and changes none, applies it, and checks that the next plan is empty. It returns the query's
// output.
func (w *Workspace) AdoptGenerated(t testing.TB, want map[string]int, imports int) string {
	t.Helper()
	out, err := w.Query(t, "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatalf("terraform query: %v\n%s", err, out)
	}
	t.Logf("terraform query:\n%s", out)
	generated, err := os.ReadFile(filepath.Join(w.Dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated.tf:\n%s", generated)
	flat := strings.Join(strings.Fields(string(generated)), " ")
	for what, n := range want {
		if got := strings.Count(flat, what); got != n {
			t.Errorf("generated.tf has %d %s, want %d", got, what, n)
		}
	}
	plan := w.Run(t, "plan")
	t.Logf("terraform plan:\n%s", plan)
	if want := "Plan: " + strconv.Itoa(imports) + " to import, 0 to add, 0 to change, 0 to destroy."; !strings.Contains(plan, want) {
		t.Fatalf("the plan of the generated configuration is not %q:\n%s", want, plan)
	}
	if applied, want := w.Run(t, "apply", "-auto-approve"), "Resources: "+strconv.Itoa(imports)+" imported, 0 added, 0 changed, 0 destroyed."; !strings.Contains(applied, want) {
		t.Fatalf("apply did not say %q:\n%s", want, applied)
	}
	if plan = w.Run(t, "plan", "-detailed-exitcode"); !strings.Contains(plan, "No changes.") {
		t.Fatalf("the plan after the import is not empty:\n%s", plan)
	}
	return out
}

// ResourceVersions returns the resourceVersion of each StorageClass and PersistentVolume named,
// by "StorageClass <name>" and "PersistentVolume <name>": what an adoption must leave unchanged.
func ResourceVersions(t testing.TB, client kubernetes.Interface, classes, volumes []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	v := map[string]string{}
	for _, name := range classes {
		sc, err := client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v["StorageClass "+name] = sc.ResourceVersion
	}
	for _, name := range volumes {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v["PersistentVolume "+name] = pv.ResourceVersion
	}
	return v
}

// WaitVolumeAvailable waits until the PersistentVolume name is Available (30 s at most).
func WaitVolumeAvailable(t testing.TB, client kubernetes.Interface, name string) {
	t.Helper()
	err := kube.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, "volume "+name+" to be Available", func(ctx context.Context) (bool, string, error) {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return pv.Status.Phase == corev1.VolumeAvailable, "phase " + string(pv.Status.Phase), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// AdoptQuery is a .tfquery.hcl (testdata/adopt.tfquery.hcl) listing, with include_resource, the
// StorageClasses of provisioner, the local volumes of class fast on node, and those of class slow:
// hand-made storage to adopt.
func AdoptQuery(t testing.TB, provisioner, fast, node, slow string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "internal", "acctest", "testdata", "adopt.tfquery.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(string(raw), provisioner, fast, node, slow)
}
