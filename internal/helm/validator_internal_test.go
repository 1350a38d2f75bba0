package helm

import (
	"testing"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/validation"
)

// kubectlValidator stands for kubectl's validator (the factory serverValidated wraps).
type kubectlValidator struct {
	kube.Factory
	calls int
}

func (f *kubectlValidator) Validator(string) (validation.Schema, error) {
	f.calls++
	return validation.NoDoubleKeySchema{}, nil
}

// TestServerValidated: from Kubernetes 1.27 on (the server validates fields) the validator checks
// nothing on the client; before, or when the version is unreadable, it is kubectl's.
func TestServerValidated(t *testing.T) {
	for _, tc := range []struct {
		version string
		kubectl bool
	}{
		{"v1.37.2", false},
		{"v1.27.0", false},
		{"v1.27.3+k3s1", false},
		{"v1.26.15", true},
		{"v1.21.14+k3s1", true},
		{"not a version", true},
	} {
		inner := &kubectlValidator{}
		dc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}, FakedServerVersion: &version.Info{GitVersion: tc.version}}
		f := &serverValidated{Factory: inner, discovery: dc}
		for range 2 {
			s, err := f.Validator("Strict")
			if err != nil {
				t.Fatal(err)
			}
			if _, null := s.(validation.NullSchema); null == tc.kubectl {
				t.Errorf("%s: validator %T, want kubectl's: %t", tc.version, s, tc.kubectl)
			}
		}
		if want := map[bool]int{true: 2, false: 0}[tc.kubectl]; inner.calls != want {
			t.Errorf("%s: kubectl's validator made %d times, want %d", tc.version, inner.calls, want)
		}
	}
}
