package storageclass_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageClass_rbac creates, reads, updates and destroys a class with a kubeconfig whose
// only rights are examples/rbac/storage-class.yaml's ClusterRole, bound to a ServiceAccount made
// for the test: a verb the role lacks fails the test, so the example role (and README's table)
// cannot drift from what the resource calls.
func TestAccStorageClass_rbac(t *testing.T) {
	admin := acctest.Kube(t)
	name := acctest.RandomName("acc-sc-rbac")
	kubeconfig := boundKubeconfig(t, admin, name, filepath.Join(acctest.RepoRoot(), "examples", "rbac", "storage-class.yaml"))
	provider := fmt.Sprintf("provider \"clusterstorage\" {\n  kubernetes {\n    config_path = %q\n  }\n}\n", kubeconfig)
	t.Cleanup(func() { // a destroy the role does not allow leaves the class: remove it as admin
		err := admin.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleaning up: %v", err)
		}
	})

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkDestroyed(admin, name),
		Steps: []resource.TestStep{
			{
				Config: provider + fmt.Sprintf(`
resource "clusterstorage_storage_class" "test" {
  name                = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
}`, name),
			},
			{
				Config: provider + fmt.Sprintf(`
resource "clusterstorage_storage_class" "test" {
  name                   = %q
  storage_provisioner    = "kubernetes.io/no-provisioner"
  allow_volume_expansion = true
  labels                 = { "app.kubernetes.io/managed-by" = "terraform" }
}`, name),
			},
			{
				ResourceName:      "clusterstorage_storage_class.test",
				ImportState:       true,
				ImportStateVerify: true,
				ImportStateId:     name,
			},
		},
	})
}

// boundKubeconfig makes a ServiceAccount, the ClusterRoles of the example file (renamed after
// name, so parallel runs do not share them) and their bindings to it, and returns the path of a
// kubeconfig that authenticates as the ServiceAccount with a token. Everything it makes is
// removed when the test ends, whether it passed or not.
func boundKubeconfig(t *testing.T, admin kubernetes.Interface, name, roleFile string) string {
	t.Helper()
	ctx := context.Background()
	const ns = "default"
	labels := map[string]string{"app.kubernetes.io/managed-by": "clusterstorage-acctest"}

	raw, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		t.Fatalf("%s: %v", roleFile, err)
	}
	if role.Kind != "ClusterRole" || len(role.Rules) == 0 {
		t.Fatalf("%s: want one ClusterRole with rules, got kind %q with %d rules", roleFile, role.Kind, len(role.Rules))
	}

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, err := range []error{
			admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}),
			admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}),
			admin.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleaning up: %v", err)
			}
		}
	})

	role.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: labels}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}

	// The binding is in effect once the ServiceAccount may do what the role's first rule says.
	restricted, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restricted)
	if err != nil {
		t.Fatal(err)
	}
	rule := role.Rules[0]
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: rule.APIGroups[0], Resource: rule.Resources[0], Verb: rule.Verbs[0]},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return path
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ServiceAccount's role is not in effect after 30 s: %v %+v", err, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
