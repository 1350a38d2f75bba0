package helm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// SetValues upgrades release name to the same chart it runs now with values changed by edit
// (which receives a copy of the current user-supplied values). Nothing is downloaded, so it
// works when the chart source is gone, e.g. at destroy time. Without wait the upgrade is not
// atomic.
func (c *Client) SetValues(ctx context.Context, name, namespace string, edit func(values map[string]any), wait bool, timeout time.Duration) (*Status, error) {
	cfg, err := c.actionConfig(namespace)
	if err != nil {
		return nil, err
	}
	last, err := lastRelease(cfg, name)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	if last.Chart == nil {
		return nil, fmt.Errorf("release %s/%s revision %d has no chart stored", namespace, name, last.Version)
	}
	values := copyValues(last.Config)
	edit(values)
	return c.Upgrade(ctx, Release{
		Name: name, Namespace: namespace, Chart: last.Chart, Values: values,
		Wait: wait, Timeout: timeout, Description: "values changed by terraform-provider-clusterstorage",
	})
}
