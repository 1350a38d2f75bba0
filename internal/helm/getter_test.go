package helm

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
)

func TestRESTClientGetter(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "secret"}
	g := NewRESTClientGetter(cfg, "storage")

	rc, err := g.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != cfg.Host || rc.BearerToken != "secret" {
		t.Fatalf("rest config not carried over: %+v", rc)
	}
	rc.Host = "changed"
	if again, _ := g.ToRESTConfig(); again.Host != cfg.Host {
		t.Fatal("ToRESTConfig must return a copy")
	}
	cfg.Host = "changed-by-caller"
	if again, _ := g.ToRESTConfig(); again.Host != "https://127.0.0.1:1" {
		t.Fatal("the getter must not alias the caller's config")
	}

	loader := g.ToRawKubeConfigLoader()
	ns, overridden, err := loader.Namespace()
	if err != nil || ns != "storage" || !overridden {
		t.Fatalf("Namespace() = %q %v %v", ns, overridden, err)
	}
	raw, err := loader.RawConfig()
	if err != nil {
		t.Fatal(err)
	}
	if ctx := raw.Contexts[raw.CurrentContext]; ctx == nil || ctx.Namespace != "storage" {
		t.Fatalf("raw config has no current context with the namespace: %+v", raw)
	}
	if raw.Clusters[raw.CurrentContext].Server != "https://127.0.0.1:1" {
		t.Fatalf("raw config server = %q", raw.Clusters[raw.CurrentContext].Server)
	}
	if cc, err := loader.ClientConfig(); err != nil || cc.BearerToken != "secret" {
		t.Fatalf("ClientConfig() = %v %v", cc, err)
	}
	if loader.ConfigAccess() == nil {
		t.Fatal("ConfigAccess() is nil")
	}

	dc1, err := g.ToDiscoveryClient()
	if err != nil {
		t.Fatal(err)
	}
	dc2, _ := g.ToDiscoveryClient()
	if dc1 != dc2 {
		t.Fatal("discovery client must be shared so Helm's Invalidate reaches the mapper")
	}
	m, err := g.ToRESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(meta.ResettableRESTMapper); !ok {
		t.Fatalf("REST mapper %T is not resettable", m)
	}

	def := NewRESTClientGetter(cfg, "")
	if ns, overridden, _ := def.ToRawKubeConfigLoader().Namespace(); ns != "default" || overridden {
		t.Fatalf("empty namespace: got %q %v", ns, overridden)
	}
}
