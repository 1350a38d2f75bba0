package helm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// DefaultTimeout bounds an action whose Release has no Timeout.
const DefaultTimeout = 10 * time.Minute

// Release is what to install or upgrade.
type Release struct {
	Name            string
	Namespace       string
	CreateNamespace bool
	Chart           *chart.Chart
	// Values are the user-supplied values (see MergeValues); the chart's
	// defaults are not included.
	Values map[string]any
	// Wait waits until every workload of the release is ready and every Job
	// has completed, up to Timeout. A release that does not get there fails:
	// a failed install is uninstalled, a failed upgrade is rolled back.
	Wait    bool
	Timeout time.Duration
	// Description is recorded in the release history.
	Description string
}

func (r Release) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

func (r Release) validate() error {
	switch {
	case r.Name == "":
		return errors.New("release name must be set")
	case r.Namespace == "":
		return errors.New("release namespace must be set")
	case r.Chart == nil:
		return errors.New("release chart must be set")
	}
	return nil
}

// Status is what a release looks like in the cluster.
type Status struct {
	Name         string
	Namespace    string
	Revision     int
	Status       string // deployed, failed, pending-install, ...
	Description  string
	ChartName    string
	ChartVersion string
	AppVersion   string
	// Values are the user-supplied values of this revision.
	Values map[string]any
	// Manifest is the rendered manifest, hooks excluded.
	Manifest      string
	FirstDeployed time.Time
	LastDeployed  time.Time
	Notes         string
}

// Pending reports whether the release is in the middle of an operation.
func (s *Status) Pending() bool { return release.Status(s.Status).IsPending() }

// Objects parses the rendered manifest.
func (s *Status) Objects() ([]Object, error) { return ParseManifest(s.Manifest) }

func statusOf(r *release.Release) *Status {
	s := &Status{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Manifest: r.Manifest, Values: r.Config}
	if r.Info != nil {
		s.Status = r.Info.Status.String()
		s.Description = r.Info.Description
		s.FirstDeployed = r.Info.FirstDeployed.Time
		s.LastDeployed = r.Info.LastDeployed.Time
		s.Notes = r.Info.Notes
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		s.ChartName = r.Chart.Metadata.Name
		s.ChartVersion = r.Chart.Metadata.Version
		s.AppVersion = r.Chart.Metadata.AppVersion
	}
	if s.Values == nil {
		s.Values = map[string]any{}
	}
	return s
}

// Install installs rel. With rel.Wait the install is atomic: when a workload
// does not become ready within rel.Timeout, or ctx is cancelled, the release
// is uninstalled again and the error says why.
func (c *Client) Install(ctx context.Context, rel Release) (*Status, error) {
	if err := rel.validate(); err != nil {
		return nil, err
	}
	cfg, err := c.actionConfig(rel.Namespace)
	if err != nil {
		return nil, err
	}
	act := action.NewInstall(cfg)
	act.ReleaseName = rel.Name
	act.Namespace = rel.Namespace
	act.CreateNamespace = rel.CreateNamespace
	act.Timeout = rel.timeout()
	act.Wait = rel.Wait
	act.WaitForJobs = rel.Wait
	act.Atomic = rel.Wait
	act.Description = rel.Description
	c.log("helm install %s in namespace %s: chart %s %s (wait=%t, timeout=%s)", rel.Name, rel.Namespace, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Wait, act.Timeout)
	r, err := act.RunWithContext(ctx, rel.Chart, copyValues(rel.Values))
	if err != nil {
		return nil, fmt.Errorf("installing release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	c.log("helm install %s: revision %d %s", rel.Name, r.Version, r.Info.Status)
	return statusOf(r), nil
}

// Upgrade upgrades the existing release rel.Name to rel.Chart with exactly
// rel.Values (values of earlier revisions are not reused). With rel.Wait a
// failed upgrade is rolled back to the previous revision.
func (c *Client) Upgrade(ctx context.Context, rel Release) (*Status, error) {
	if err := rel.validate(); err != nil {
		return nil, err
	}
	cfg, err := c.actionConfig(rel.Namespace)
	if err != nil {
		return nil, err
	}
	act := action.NewUpgrade(cfg)
	act.Namespace = rel.Namespace
	act.Timeout = rel.timeout()
	act.Wait = rel.Wait
	act.WaitForJobs = rel.Wait
	act.Atomic = rel.Wait
	act.CleanupOnFail = rel.Wait
	act.ResetValues = true
	act.MaxHistory = 10
	act.Description = rel.Description
	c.log("helm upgrade %s in namespace %s: chart %s %s (wait=%t, timeout=%s)", rel.Name, rel.Namespace, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Wait, act.Timeout)
	r, err := act.RunWithContext(ctx, rel.Name, rel.Chart, copyValues(rel.Values))
	if err != nil {
		// Helm reports a missing release as "has no deployed releases"; tell
		// that apart from a release that exists but cannot be upgraded.
		if errors.Is(err, driver.ErrNoDeployedReleases) || errors.Is(err, driver.ErrReleaseNotFound) {
			if _, getErr := c.Get(rel.Name, rel.Namespace); errors.Is(getErr, ErrNotFound) {
				return nil, fmt.Errorf("upgrading release %s/%s: %w", rel.Namespace, rel.Name, ErrNotFound)
			}
		}
		return nil, fmt.Errorf("upgrading release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	c.log("helm upgrade %s: revision %d %s", rel.Name, r.Version, r.Info.Status)
	return statusOf(r), nil
}

// UninstallOptions tunes Uninstall.
type UninstallOptions struct {
	// Wait waits until every resource of the release is gone.
	Wait    bool
	Timeout time.Duration
	// DisableHooks skips the chart's pre-/post-delete hooks.
	DisableHooks bool
}

// Uninstall removes a release and its history. A release that does not exist
// is not an error.
func (c *Client) Uninstall(ctx context.Context, name, namespace string, opts UninstallOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cfg, err := c.actionConfig(namespace)
	if err != nil {
		return err
	}
	act := action.NewUninstall(cfg)
	act.Wait = opts.Wait
	act.Timeout = opts.Timeout
	if act.Timeout <= 0 {
		act.Timeout = DefaultTimeout
	}
	act.DisableHooks = opts.DisableHooks
	act.IgnoreNotFound = true
	act.DeletionPropagation = "foreground"
	c.log("helm uninstall %s in namespace %s (wait=%t, hooks=%t)", name, namespace, opts.Wait, !opts.DisableHooks)
	// Helm's uninstall takes no context; run it aside so cancellation returns
	// promptly (the action itself is bounded by its timeout).
	done := make(chan error, 1)
	go func() {
		res, err := act.Run(name)
		if err == nil && res != nil && res.Info != "" {
			c.log("helm uninstall %s: %s", name, res.Info)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			if errors.Is(err, driver.ErrReleaseNotFound) {
				return nil
			}
			return fmt.Errorf("uninstalling release %s/%s: %w", namespace, name, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("uninstalling release %s/%s: %w", namespace, name, ctx.Err())
	}
}

// Get returns the latest revision of a release, whatever its status, or
// ErrNotFound.
func (c *Client) Get(name, namespace string) (*Status, error) {
	cfg, err := c.actionConfig(namespace)
	if err != nil {
		return nil, err
	}
	r, err := cfg.Releases.Last(name)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	return statusOf(r), nil
}

// History returns every stored revision of a release, oldest first.
func (c *Client) History(name, namespace string) ([]*Status, error) {
	cfg, err := c.actionConfig(namespace)
	if err != nil {
		return nil, err
	}
	rels, err := cfg.Releases.History(name)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	sortByRevision(rels)
	out := make([]*Status, 0, len(rels))
	for _, r := range rels {
		out = append(out, statusOf(r))
	}
	return out, nil
}

func sortByRevision(rels []*release.Release) {
	for i := 1; i < len(rels); i++ {
		for j := i; j > 0 && rels[j].Version < rels[j-1].Version; j-- {
			rels[j], rels[j-1] = rels[j-1], rels[j]
		}
	}
}

// Recover repairs a release that an interrupted apply left in a pending
// state, so the next install or upgrade can run:
//   - pending-install with no deployed revision: the half-made release is
//     uninstalled (hooks skipped); the caller installs it again;
//   - pending-upgrade or pending-rollback (or pending-install after a deployed
//     revision): rolled back to the last deployed revision, or, when there is
//     none, the pending revision is marked failed.
//
// It returns a description of what it did ("" when the release is absent or
// not pending), suitable for a warning.
func (c *Client) Recover(ctx context.Context, name, namespace string, timeout time.Duration) (string, error) {
	cfg, err := c.actionConfig(namespace)
	if err != nil {
		return "", err
	}
	last, err := cfg.Releases.Last(name)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return "", nil
		}
		return "", fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	if last.Info == nil || !last.Info.Status.IsPending() {
		return "", nil
	}
	history, err := cfg.Releases.History(name)
	if err != nil {
		return "", err
	}
	sortByRevision(history)
	var deployed *release.Release
	for _, r := range history {
		if r.Version != last.Version && r.Info != nil && r.Info.Status == release.StatusDeployed {
			deployed = r
		}
	}
	stuck := last.Info.Status
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c.log("release %s/%s is stuck in %s at revision %d; recovering", namespace, name, stuck, last.Version)

	if stuck == release.StatusPendingInstall && deployed == nil {
		if err := c.Uninstall(ctx, name, namespace, UninstallOptions{Wait: true, Timeout: timeout, DisableHooks: true}); err != nil {
			return "", fmt.Errorf("removing release %s/%s stuck in %s: %w", namespace, name, stuck, err)
		}
		return fmt.Sprintf("Helm release %s/%s was stuck in %s at revision %d (an earlier apply was interrupted); "+
			"it had never been deployed, so it was uninstalled and will be installed again.", namespace, name, stuck, last.Version), nil
	}

	if deployed != nil {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		rb := action.NewRollback(cfg)
		rb.Version = deployed.Version
		rb.Wait = true
		rb.WaitForJobs = true
		rb.Timeout = timeout
		rb.CleanupOnFail = true
		rb.MaxHistory = 10
		if err := rb.Run(name); err != nil {
			return "", fmt.Errorf("rolling release %s/%s back from %s revision %d to revision %d: %w", namespace, name, stuck, last.Version, deployed.Version, err)
		}
		return fmt.Sprintf("Helm release %s/%s was stuck in %s at revision %d (an earlier apply was interrupted); "+
			"it was rolled back to the last deployed revision %d (chart %s %s).", namespace, name, stuck, last.Version,
			deployed.Version, deployed.Chart.Metadata.Name, deployed.Chart.Metadata.Version), nil
	}

	last.SetStatus(release.StatusFailed, fmt.Sprintf("marked failed by recovery: was %s after an interrupted apply", stuck))
	if err := cfg.Releases.Update(last); err != nil {
		return "", fmt.Errorf("marking release %s/%s revision %d failed: %w", namespace, name, last.Version, err)
	}
	return fmt.Sprintf("Helm release %s/%s was stuck in %s at revision %d (an earlier apply was interrupted) and "+
		"has no deployed revision to roll back to; it was marked failed so that the next upgrade can run.", namespace, name, stuck, last.Version), nil
}

func copyValues(v map[string]any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	return deepCopyMap(v)
}
