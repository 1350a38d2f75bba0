package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// appliedRecorder is Helm's kube client noting the resourceVersion the API server answered each
// of Helm's writes with. An object at that resourceVersion is exactly what the apply made of it, so
// a drift dry run of the same manifest over it would find nothing: the first drift check after the
// install or upgrade can take that answer from the cache (AppliedCache) until anyone, a controller
// writing status included, writes the object again.
type appliedRecorder struct {
	*kube.Client
	mu  sync.Mutex
	rvs map[string]string // infoName -> resourceVersion
}

// recordApplied puts an appliedRecorder in front of cfg's kube client (Helm's own) and returns
// it; nil when cfg's client is another kind.
func recordApplied(cfg *action.Configuration) *appliedRecorder {
	c, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		return nil
	}
	r := &appliedRecorder{Client: c, rvs: map[string]string{}}
	cfg.KubeClient = r
	return r
}

// Create creates resources through Helm's client and notes what the server answered.
func (r *appliedRecorder) Create(resources kube.ResourceList, options ...kube.ClientCreateOption) (*kube.Result, error) {
	res, err := r.Client.Create(resources, options...)
	r.note(resources)
	return res, err
}

// Update updates resources through Helm's client and notes what the server answered.
func (r *appliedRecorder) Update(original, target kube.ResourceList, options ...kube.ClientUpdateOption) (*kube.Result, error) {
	res, err := r.Client.Update(original, target, options...)
	r.note(target)
	return res, err
}

// note keeps the resourceVersion of each object Helm refreshed from the server's answer (a
// server-side apply does; an object left as built has none and is not noted).
func (r *appliedRecorder) note(resources kube.ResourceList) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, info := range resources {
		if info == nil || info.Mapping == nil {
			continue
		}
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok || u.GetResourceVersion() == "" {
			continue
		}
		r.rvs[infoName(info)] = u.GetResourceVersion()
	}
}

// cache is the drift cache of the release whose manifest is manifest: every noted object without
// drift at the resourceVersion the apply left it at; nil when none was noted.
func (r *appliedRecorder) cache(manifest string) *DriftCache {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rvs) == 0 {
		return nil
	}
	sum := sha256.Sum256([]byte(manifest))
	c := &DriftCache{Format: driftCacheFormat, Manifest: hex.EncodeToString(sum[:]), Objects: make(map[string]CachedDrift, len(r.rvs))}
	for name, rv := range r.rvs {
		c.Objects[name] = CachedDrift{ResourceVersion: rv}
	}
	return c
}
