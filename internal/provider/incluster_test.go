package provider_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// TestAccProvider_inCluster: with no kubernetes settings and KUBERNETES_SERVICE_HOST set, the
// provider uses the pod's service account (token and CA files, as a kubelet mounts them), as
// Terraform Cloud agents and CI runners inside a cluster need. The service account is real: a
// token issued by the API server for a ServiceAccount made here. Without RBAC for StorageClasses
// the apply is forbidden (so the token, not some other credential, is what was used); with it,
// the apply works.
func TestAccProvider_inCluster(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	client := acctest.Kube(t)
	ctx := context.Background()
	name := acctest.RandomName("acc-incluster")

	rest, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	server, err := url.Parse(rest.Host)
	if err != nil {
		t.Fatal(err)
	}
	ca := rest.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(rest.CAFile); err != nil {
			t.Fatalf("reading the cluster CA: %v", err)
		}
	}

	dir := t.TempDir()
	token := serviceAccountToken(t, client, name)
	for file, data := range map[string][]byte{"token": []byte(token), "ca.crt": ca} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := kube.ServiceAccountDir
	kube.ServiceAccountDir = dir
	t.Cleanup(func() { kube.ServiceAccountDir = old })
	for _, v := range []string{"KUBE_CONFIG_PATH", "KUBE_CONFIG_PATHS", "KUBE_HOST", "KUBE_TOKEN"} {
		t.Setenv(v, "")
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", server.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", server.Port())

	config := `provider "clusterstorage" {}` + class(name)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: acctest.ErrorWords(`"system:serviceaccount:default:` + name + `" cannot create resource "storageclasses"`),
		}},
	})

	grantStorageClasses(t, client, name)
	waitAllowed(t, rest, token)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps:                    []resource.TestStep{{Config: config}},
		CheckDestroy: func(*terraform.State) error {
			_, err := client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("StorageClass %s after destroy: %v (want NotFound)", name, err)
			}
			return nil
		},
	})
}

// serviceAccountToken makes a ServiceAccount in the default namespace and asks the API server for
// a token of it (what the kubelet mounts into a pod). Both are removed when the test ends.
func serviceAccountToken(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if _, err := client.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ServiceAccount %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().ServiceAccounts("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	expiry := int64(3600)
	tr, err := client.CoreV1().ServiceAccounts("default").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// grantStorageClasses lets the ServiceAccount manage StorageClasses (and nothing else), until
// the test ends.
func grantStorageClasses(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRole %s: %v", name, err)
	}
	t.Cleanup(func() { _ = client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRoleBinding %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// waitAllowed polls, as the service account, until the RBAC authorizer lets it create
// StorageClasses (the binding reaches the authorizer's cache shortly after it is made).
func waitAllowed(t *testing.T, admin *restclient.Config, token string) {
	t.Helper()
	cfg := restclient.AnonymousClientConfig(admin)
	cfg.BearerToken = token
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "create"},
	}}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			got, err := sa.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			return err == nil && got.Status.Allowed, nil
		})
	if err != nil {
		t.Fatalf("the service account was not allowed to create StorageClasses within 30 s: %v", err)
	}
}
