package helm

import (
	"sync"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/kubectl/pkg/validation"
)

// serverFieldValidation is the first Kubernetes version where every API server checks the fields
// of what it is sent (server-side field validation, GA): Helm applies with fieldValidation=Strict,
// so the server refuses an unknown or duplicate field itself.
var serverFieldValidation = version.MajorMinor(1, 27)

// serverValidated is Helm's kube.Factory whose Validator asks the API server nothing for a server
// that validates fields itself. Helm builds a manifest's objects with kubectl's validator, which
// fetches the OpenAPI v3 document of every group-version in the manifest only to learn whether the
// server takes the fieldValidation parameter, and then, when it does, validates nothing on the
// client; those documents (megabytes of JSON, fetched anew by every provider process) were most of
// the time an install spent before it applied anything. On such a server this Validator skips the
// same client-side check at once (the server still validates every apply, as before); on an older
// one, or when the version cannot be read, it is kubectl's, unchanged.
type serverValidated struct {
	kube.Factory
	discovery discovery.DiscoveryInterface
	once      sync.Once
	validates bool
}

// Validator returns a schema that checks nothing where the server validates fields, else the
// wrapped factory's.
func (f *serverValidated) Validator(directive string) (validation.Schema, error) {
	f.once.Do(func() {
		info, err := f.discovery.ServerVersion()
		if err != nil {
			return
		}
		v, err := version.ParseGeneric(info.GitVersion)
		f.validates = err == nil && v.AtLeast(serverFieldValidation)
	})
	if f.validates {
		return validation.NullSchema{}, nil
	}
	return f.Factory.Validator(directive)
}

// validateOnServer puts serverValidated in front of the factory of kc when it is Helm's own
// client; dc tells the server's version.
func validateOnServer(kc kube.Interface, dc discovery.DiscoveryInterface) {
	if c, ok := kc.(*kube.Client); ok {
		if _, done := c.Factory.(*serverValidated); !done {
			c.Factory = &serverValidated{Factory: c.Factory, discovery: dc}
		}
	}
}
