package acctest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
)

// RBACRoleFile is the path of one of examples/rbac's role files, e.g. "local-pv.yaml".
func RBACRoleFile(name string) string {
	return filepath.Join(RepoRoot(), "examples", "rbac", name)
}

// RoleKubeconfig makes a ServiceAccount bound to exactly the roles of one examples/rbac file
// (RBACRoleFile(file)) and returns the path of a kubeconfig that authenticates as it with a token,
// so a test run with it proves the example role: a verb the role lacks fails the test.
//
// The file's ClusterRoles are made under name (name-1, name-2... after the first) and bound with
// ClusterRoleBindings. Its Roles are made in namespaces[<the Role's namespace in the file>]
// (e.g. {"default": the test's namespace}) under name-r<i> and bound there; a Role whose namespace the
// map leaves out is not made (the file's comparison-only Role in a benchmark test, say).
// Everything is removed when the test ends, whether it passed or not.
func RoleKubeconfig(t testing.TB, admin kubernetes.Interface, name, file string, namespaces map[string]string) string {
	t.Helper()
	ctx := context.Background()
	const saNamespace = "default"
	labels := map[string]string{"app.kubernetes.io/managed-by": "clusterstorage-acctest"}
	path := RBACRoleFile(file)

	clusterRoles, roles := readRoles(t, path)
	if len(clusterRoles) == 0 {
		t.Fatalf("%s: no ClusterRole", path)
	}

	var cleanups []func(context.Context) error
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := len(cleanups) - 1; i >= 0; i-- {
			if err := cleanups[i](ctx); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleaning up the role of %s: %v", file, err)
			}
		}
	})

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: saNamespace, Labels: labels}}
	if _, err := admin.CoreV1().ServiceAccounts(saNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cleanups = append(cleanups, func(ctx context.Context) error {
		return admin.CoreV1().ServiceAccounts(saNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: saNamespace}}

	var checks []authorizationv1.SelfSubjectAccessReviewSpec
	for i, role := range clusterRoles {
		roleName := name
		if i > 0 {
			roleName = fmt.Sprintf("%s-%d", name, i)
		}
		role.ObjectMeta = metav1.ObjectMeta{Name: roleName, Labels: labels}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cleanups = append(cleanups, func(ctx context.Context) error {
			return admin.RbacV1().ClusterRoles().Delete(ctx, roleName, metav1.DeleteOptions{})
		})
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: roleName, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
			Subjects:   subjects,
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cleanups = append(cleanups, func(ctx context.Context) error {
			return admin.RbacV1().ClusterRoleBindings().Delete(ctx, roleName, metav1.DeleteOptions{})
		})
		checks = append(checks, accessCheck(role.Rules, ""))
	}
	for i, role := range roles {
		ns, ok := namespaces[role.Namespace]
		if !ok {
			continue
		}
		roleName := fmt.Sprintf("%s-r%d", name, i)
		role.ObjectMeta = metav1.ObjectMeta{Name: roleName, Namespace: ns, Labels: labels}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cleanups = append(cleanups, func(ctx context.Context) error {
			return admin.RbacV1().Roles(ns).Delete(ctx, roleName, metav1.DeleteOptions{})
		})
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: ns, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
			Subjects:   subjects,
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cleanups = append(cleanups, func(ctx context.Context) error {
			return admin.RbacV1().RoleBindings(ns).Delete(ctx, roleName, metav1.DeleteOptions{})
		})
		checks = append(checks, accessCheck(role.Rules, ns))
	}

	expiry := int64(3600)
	tok, err := admin.CoreV1().ServiceAccounts(saNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeTokenKubeconfig(t, tok.Status.Token)

	// The bindings are in effect once the ServiceAccount may do what each role's first rule says.
	restricted, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restricted)
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range checks {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: check}
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err == nil && got.Status.Allowed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the ServiceAccount's role from %s is not in effect after 30 s: %v %+v", file, err, got)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return kubeconfig
}

// WithKubeconfig returns a provider configuration made by ProviderConfig (or one of its SSH
// variants) with its config_path pointed at kubeconfig.
func WithKubeconfig(providerConfig, kubeconfig string) string {
	return strings.Replace(providerConfig, fmt.Sprintf("config_path = %q", Kubeconfig()), fmt.Sprintf("config_path = %q", kubeconfig), 1)
}

// readRoles reads the ClusterRoles and Roles of a multi-document YAML file.
func readRoles(t testing.TB, path string) ([]rbacv1.ClusterRole, []rbacv1.Role) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var clusterRoles []rbacv1.ClusterRole
	var roles []rbacv1.Role
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch meta.Kind {
		case "ClusterRole":
			var role rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict(doc, &role); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			clusterRoles = append(clusterRoles, role)
		case "Role":
			var role rbacv1.Role
			if err := yaml.UnmarshalStrict(doc, &role); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			roles = append(roles, role)
		case "":
		default:
			t.Fatalf("%s: unexpected kind %q", path, meta.Kind)
		}
	}
	return clusterRoles, roles
}

// accessCheck is an access review of a role's first rule, in namespace ns ("" for a ClusterRole).
func accessCheck(rules []rbacv1.PolicyRule, ns string) authorizationv1.SelfSubjectAccessReviewSpec {
	rule := rules[0]
	if len(rule.NonResourceURLs) > 0 {
		return authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: rule.NonResourceURLs[0], Verb: rule.Verbs[0]}}
	}
	return authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
		Namespace: ns, Group: rule.APIGroups[0], Resource: rule.Resources[0], Verb: rule.Verbs[0],
	}}
}

// writeTokenKubeconfig writes a kubeconfig for the test cluster that authenticates with token.
func writeTokenKubeconfig(t testing.TB, token string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", Kubeconfig())
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
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
