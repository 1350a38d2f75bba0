package backend

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
)

// privateDriftCache holds what the last refresh's drift check found per object of the release
// (helm.DriftCache: the manifest checked, each object's resourceVersion and drift there), so the
// next refresh dry-runs only the objects someone wrote since. An install or upgrade leaves the
// objects as it applied them (helm.Status.Applied: no drift at the resourceVersions its writes
// got), so the first refresh after it dry-runs only what was written since (status included).
const privateDriftCache = "drift_cache"

// loadDriftCache returns the cache the last refresh left, nil when there is none or it cannot be
// read (every object is then checked).
func loadDriftCache(ctx context.Context, private importmark.Getter) *helm.DriftCache {
	raw, diags := private.GetKey(ctx, privateDriftCache)
	if diags.HasError() || len(raw) == 0 {
		return nil
	}
	var c helm.DriftCache
	if err := json.Unmarshal(raw, &c); err != nil {
		tflog.Debug(ctx, "the drift cache in private state is unreadable; every object is checked", map[string]any{"error": err.Error()})
		return nil
	}
	return &c
}

// saveDriftCache keeps c for the next refresh (nil removes the cache).
func saveDriftCache(ctx context.Context, private importmark.Setter, c *helm.DriftCache) diag.Diagnostics {
	var raw []byte
	if c != nil && len(c.Objects) > 0 {
		var err error
		if raw, err = json.Marshal(c); err != nil {
			return nil // never fails for this type; without a cache the next refresh checks everything
		}
	}
	return private.SetKey(ctx, privateDriftCache, raw)
}
