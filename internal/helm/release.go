package helm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	ri "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	kubeconst "github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// DefaultTimeout bounds an action whose Release has no Timeout.
const DefaultTimeout = 10 * time.Minute

// Labels this package puts on the releases it installs and upgrades (Helm
// release labels: on the release's storage Secret and in `helm get metadata`).
const (
	// OwnerLabel names the program that made the release (Options.Owner).
	OwnerLabel = "clusterstorage.io/managed-by"
	// TimeoutLabel holds the timeout, in seconds, of the install or upgrade
	// that wrote the revision: while it has not passed, that operation may
	// still be running and Recover leaves the release alone.
	TimeoutLabel = "clusterstorage.io/operation-timeout"
	// RevisionLabel is the revision the labelled install or upgrade made.
	// Helm copies a release's labels into every later revision (a person's
	// `helm upgrade` too), so a pending revision is this client's own only
	// when this label names it.
	RevisionLabel = "clusterstorage.io/revision"
)

// RecoverSkew is added to a pending operation's timeout before Recover treats
// it as abandoned (clock skew between machines, Helm's own cleanup).
const RecoverSkew = 30 * time.Second

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
	// MaxHistory is how many revisions an upgrade keeps (older ones are
	// deleted); 0 keeps all of them, as helm does.
	MaxHistory int
	// Adopted: the first server-side upgrade after the release was adopted (imported) also
	// takes over the fields the helm CLI's field manager owns (fieldmanager.go), so that what
	// a later chart drops is removed.
	Adopted bool
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
	// ChartValues are the defaults of the revision's chart (its values.yaml; a subchart's own
	// below the subchart's name only where the chart's values set them), nil when unknown.
	ChartValues map[string]any
	// Manifest is the rendered manifest, hooks excluded.
	Manifest      string
	FirstDeployed time.Time
	// LastDeployed is when the latest operation on the release started.
	LastDeployed time.Time
	Notes        string
	// Labels are the release's own labels (Helm's system labels excluded).
	Labels map[string]string
	// Applied is, after an Install or Upgrade, the drift cache of what it applied: each object
	// at the resourceVersion the apply left it at, without drift (appliedRecorder); nil otherwise.
	Applied *DriftCache
}

// Pending reports whether the release is in the middle of an operation.
func (s *Status) Pending() bool { return rcommon.Status(s.Status).IsPending() }

// OwnedBy reports whether the release carries OwnerLabel=owner.
func (s *Status) OwnedBy(owner string) bool { return owner != "" && s.Labels[OwnerLabel] == owner }

// Objects parses the rendered manifest.
func (s *Status) Objects() ([]Object, error) { return ParseManifest(s.Manifest) }

func statusOf(r *release.Release) *Status {
	s := &Status{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Manifest: r.Manifest, Values: r.Config, Labels: map[string]string{}}
	system := map[string]bool{}
	for _, k := range driver.GetSystemLabels() {
		system[k] = true
	}
	for k, v := range r.Labels {
		if !system[k] {
			s.Labels[k] = v
		}
	}
	if r.Info != nil {
		s.Status = r.Info.Status.String()
		s.Description = r.Info.Description
		s.FirstDeployed = r.Info.FirstDeployed
		s.LastDeployed = r.Info.LastDeployed
		s.Notes = r.Info.Notes
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		s.ChartName = r.Chart.Metadata.Name
		s.ChartVersion = r.Chart.Metadata.Version
		s.AppVersion = r.Chart.Metadata.AppVersion
	}
	if r.Chart != nil {
		s.ChartValues = r.Chart.Values
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
	applied := recordApplied(cfg)
	act := action.NewInstall(cfg)
	act.ReleaseName = rel.Name
	act.Namespace = rel.Namespace
	act.CreateNamespace = rel.CreateNamespace
	act.Timeout = rel.timeout()
	act.WaitStrategy = waitStrategy(rel.Wait)
	act.WaitForJobs = rel.Wait
	act.RollbackOnFailure = rel.Wait
	// Server-side apply (Helm 4's default for new releases): the release's objects are owned
	// field by field by Helm's field manager, so another manager's change to one of them shows.
	act.ServerSideApply = true
	act.Description = rel.Description
	act.Labels = c.labels(act.Timeout, 1)
	c.log("helm install %s in namespace %s: chart %s %s (wait=%t, timeout=%s)", rel.Name, rel.Namespace, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Wait, act.Timeout)
	r, err := AsRelease(act.RunWithContext(ctx, rel.Chart, copyValues(rel.Values)))
	if err != nil {
		return nil, fmt.Errorf("installing release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	c.log("helm install %s: revision %d %s", rel.Name, r.Version, r.Info.Status)
	st := statusOf(r)
	st.Applied = applied.cache(st.Manifest)
	return st, nil
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
	applied := recordApplied(cfg)
	act := action.NewUpgrade(cfg)
	act.Namespace = rel.Namespace
	act.Timeout = rel.timeout()
	act.WaitStrategy = waitStrategy(rel.Wait)
	act.WaitForJobs = rel.Wait
	act.RollbackOnFailure = rel.Wait
	act.CleanupOnFail = rel.Wait
	// "auto": a release last applied server-side stays so; one made client-side (by Helm 3, or
	// by this provider before it moved to Helm 4) is upgraded client-side, as Helm 4's CLI does,
	// so its objects' field managers do not conflict.
	act.ServerSideApply = "auto"
	act.ResetValues = true
	act.MaxHistory = rel.MaxHistory
	act.Description = rel.Description
	if last, err := lastRelease(cfg, rel.Name); err == nil {
		act.Labels = c.labels(act.Timeout, last.Version+1)
		// A field another manager took (`kubectl edit`, `kubectl scale`) goes back to the chart's
		// value: the configuration wins, as an apply should. Without it a server-side upgrade,
		// and then its rollback, fails on the conflict (TestIntegrationUpgradeTakesBackEditedFields).
		// Only for a server-side upgrade: Helm refuses the option with client-side apply, which
		// "auto" keeps for a release made client-side (TestAccStorageBackend_movedFromHelmRelease).
		act.ForceConflicts = serverSide(last)
		if act.ForceConflicts {
			if act.PostRenderer, err = c.prepareApply(ctx, cfg, last, rel.Adopted); err != nil {
				return nil, fmt.Errorf("upgrading release %s/%s: %w", rel.Namespace, rel.Name, err)
			}
		}
	}
	c.log("helm upgrade %s in namespace %s: chart %s %s (wait=%t, timeout=%s)", rel.Name, rel.Namespace, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Wait, act.Timeout)
	r, err := AsRelease(act.RunWithContext(ctx, rel.Name, rel.Chart, copyValues(rel.Values)))
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
	st := statusOf(r)
	st.Applied = applied.cache(st.Manifest)
	return st, nil
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
	// The wait for the deleted objects polls (Helm's legacy waiter) instead of watching: Helm
	// 4.3.2's watcher once returned, under load, while a Deployment deleted in the foreground was
	// still Terminating, failing a destroy that then completed (TestAccStorageBackend_unverifiedVersion
	// under tofu). Installs and upgrades keep the watcher.
	act.WaitStrategy = waitStrategy(opts.Wait)
	if opts.Wait {
		act.WaitStrategy = kube.LegacyStrategy
	}
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
	r, err := lastRelease(cfg, name)
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
	rels, err := history(cfg, name)
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

// NotOwnedError says that a pending release was not made by this client's
// owner, so Recover left it alone.
type NotOwnedError struct {
	Name, Namespace string
	Status          string
	Revision        int
	// Owner is the release's OwnerLabel ("" when it has none).
	Owner string
	// Inherited: the revision carries the owner's labels only because Helm
	// copied them from an earlier revision (RevisionLabel names another one):
	// someone else's operation on the owner's release.
	Inherited bool
}

func (e *NotOwnedError) Error() string {
	by := "has no " + OwnerLabel + " label"
	switch {
	case e.Inherited:
		by = fmt.Sprintf("was not written by %s (its labels are copied from an earlier revision)", e.Owner)
	case e.Owner != "":
		by = fmt.Sprintf("is labelled %s=%s", OwnerLabel, e.Owner)
	}
	return fmt.Sprintf("release %s/%s is %s at revision %d and %s: that operation was not started by this provider, so it is not repaired "+
		"(another Helm operation, e.g. a person's `helm upgrade`, may still be running on it)", e.Namespace, e.Name, e.Status, e.Revision, by)
}

// InProgressError says that a pending release's operation may still be
// running: its timeout has not passed since it started.
type InProgressError struct {
	Name, Namespace string
	Status          string
	Revision        int
	Started         time.Time
	// Until is when the operation's timeout (and a margin) has passed.
	Until time.Time
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("release %s/%s is %s at revision %d since %s; the operation that started then may still be running "+
		"until %s (its timeout), so it is not repaired before that", e.Namespace, e.Name, e.Status, e.Revision,
		e.Started.UTC().Format(time.RFC3339), e.Until.UTC().Format(time.RFC3339))
}

// Recover repairs a release that an interrupted apply left in a pending
// state, so the next install or upgrade can run. It acts only on a release
// labelled with this client's owner whose pending operation cannot still be
// running: it started longer ago than its own timeout (the TimeoutLabel of
// the pending revision; timeout when the label is absent), plus a margin.
// A pending release of another owner is a *NotOwnedError, one whose
// operation may still run an *InProgressError; neither is changed. Then:
//   - pending-install with no deployed revision: the half-made release is
//     uninstalled (hooks skipped); the caller installs it again;
//   - pending-upgrade or pending-rollback (or pending-install after a deployed
//     revision): rolled back to the last deployed revision, or, when there is
//     none, the pending revision is marked failed.
//
// It returns a description of what it did ("" when the release is absent or
// not pending), suitable for a warning. maxHistory bounds the revisions a
// rollback keeps (0: all).
func (c *Client) Recover(ctx context.Context, name, namespace string, timeout time.Duration, maxHistory int) (string, error) {
	cfg, err := c.actionConfig(namespace)
	if err != nil {
		return "", err
	}
	last, err := lastRelease(cfg, name)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return "", nil
		}
		return "", fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	if last.Info == nil || !last.Info.Status.IsPending() {
		return "", nil
	}
	stuck := last.Info.Status
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	owner := last.Labels[OwnerLabel]
	if c.owner == "" || owner != c.owner || last.Labels[RevisionLabel] != strconv.Itoa(last.Version) {
		return "", &NotOwnedError{Name: name, Namespace: namespace, Status: stuck.String(), Revision: last.Version, Owner: owner,
			Inherited: owner != "" && last.Labels[RevisionLabel] != strconv.Itoa(last.Version)}
	}
	bound := timeout
	if secs, err := strconv.Atoi(last.Labels[TimeoutLabel]); err == nil && secs > 0 {
		bound = time.Duration(secs) * time.Second
	}
	started := last.Info.LastDeployed
	if until := started.Add(bound + RecoverSkew); time.Now().Before(until) {
		return "", &InProgressError{Name: name, Namespace: namespace, Status: stuck.String(), Revision: last.Version, Started: started, Until: until}
	}
	revisions, err := history(cfg, name)
	if err != nil {
		return "", err
	}
	sortByRevision(revisions)
	var deployed *release.Release
	for _, r := range revisions {
		if r.Version != last.Version && r.Info != nil && r.Info.Status == rcommon.StatusDeployed {
			deployed = r
		}
	}
	c.log("release %s/%s is stuck in %s at revision %d since %s; recovering", namespace, name, stuck, last.Version, started.UTC().Format(time.RFC3339))
	why := fmt.Sprintf("Helm release %s/%s was stuck in %s at revision %d since %s (an earlier apply of this provider was interrupted)",
		namespace, name, stuck, last.Version, started.UTC().Format(time.RFC3339))

	if stuck == rcommon.StatusPendingInstall && deployed == nil {
		if err := c.Uninstall(ctx, name, namespace, UninstallOptions{Wait: true, Timeout: timeout, DisableHooks: true}); err != nil {
			return "", fmt.Errorf("removing release %s/%s stuck in %s: %w", namespace, name, stuck, err)
		}
		return why + "; it had never been deployed, so it was uninstalled (hooks skipped) and will be installed again.", nil
	}

	if deployed != nil {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		rb := action.NewRollback(cfg)
		rb.Version = deployed.Version
		rb.WaitStrategy = kube.StatusWatcherStrategy
		rb.WaitForJobs = true
		rb.Timeout = timeout
		rb.CleanupOnFail = true
		// Helm's "auto" applies a rollback as the target revision was applied, and refuses to force
		// conflicts with client-side apply: a mixed history (a Helm 3 revision, then a Helm 4 one)
		// has them differ.
		rb.ForceConflicts = serverSide(deployed)
		rb.MaxHistory = maxHistory
		if err := rb.Run(name); err != nil {
			return "", fmt.Errorf("rolling release %s/%s back from %s revision %d to revision %d: %w", namespace, name, stuck, last.Version, deployed.Version, err)
		}
		return fmt.Sprintf("%s; it was rolled back to the last deployed revision %d (chart %s %s).", why,
			deployed.Version, deployed.Chart.Metadata.Name, deployed.Chart.Metadata.Version), nil
	}

	last.SetStatus(rcommon.StatusFailed, fmt.Sprintf("marked failed by recovery: was %s after an interrupted apply", stuck))
	if err := cfg.Releases.Update(last); err != nil {
		return "", fmt.Errorf("marking release %s/%s revision %d failed: %w", namespace, name, last.Version, err)
	}
	return why + "; it has no deployed revision to roll back to, so it was marked failed and the next upgrade can run.", nil
}

// prepareApply readies the objects of release last for a server-side upgrade: the fields the
// provider's former field managers own (and, when adopted, the helm CLI's) are taken over
// (takeOverFields), and it returns the
// post-renderer that leaves the fields held through a subresource out of the applied objects
// (leaveHeldFields), so that forcing conflicts never takes them.
func (c *Client) prepareApply(ctx context.Context, cfg *action.Configuration, last *release.Release, adopted bool) (leaveHeldFields, error) {
	none := leaveHeldFields{}
	infos, err := cfg.KubeClient.Build(strings.NewReader(last.Manifest), false)
	if err != nil {
		return none, fmt.Errorf("reading the manifest of revision %d: %w", last.Version, err)
	}
	taken, err := takeOverFields(ctx, infos, adopted)
	if err != nil {
		return none, err
	}
	for _, t := range taken {
		c.log("field manager %s took over the fields of %s", kubeconst.FieldManager, t)
	}
	held, err := heldFields(ctx, infos)
	if err != nil {
		return none, err
	}
	return leaveHeldFields{held: held, namespace: last.Namespace, log: c.log}, nil
}

// labels returns the release labels of an install or upgrade that makes
// revision and is bounded by timeout: none without an owner.
func (c *Client) labels(timeout time.Duration, revision int) map[string]string {
	if c.owner == "" {
		return nil
	}
	return map[string]string{OwnerLabel: c.owner, TimeoutLabel: strconv.Itoa(int(timeout.Seconds())), RevisionLabel: strconv.Itoa(revision)}
}

// waitStrategy is Helm 4's wait for Release.Wait: its watcher (kstatus), which ends as soon as
// every object is ready rather than at the next poll; without wait, hooks only.
func waitStrategy(wait bool) kube.WaitStrategy {
	if wait {
		return kube.StatusWatcherStrategy
	}
	return kube.HookOnlyStrategy
}

// AsRelease is the release an action or Helm's storage returned, in the one format this package
// reads: Helm 4's actions and storage speak of releases as an opaque Releaser, and charts of API
// v2 (every chart this provider installs) make v1 releases. Callers that read Helm's storage
// directly (tests that fake an interrupted apply) use it too.
func AsRelease(r ri.Releaser, err error) (*release.Release, error) {
	if err != nil {
		return nil, err
	}
	switch rel := r.(type) {
	case *release.Release:
		return rel, nil
	case release.Release:
		return &rel, nil
	case nil:
		return nil, errors.New("helm returned no release")
	default:
		return nil, fmt.Errorf("helm returned a release of an unsupported kind (%T)", r)
	}
}

// lastRelease is the latest stored revision of release name.
// serverSide reports whether Helm's "auto" applies the next revision after r server-side: when
// r was applied so (Helm 4's install; never a release Helm 3 made).
func serverSide(r *release.Release) bool {
	return r.ApplyMethod == string(release.ApplyMethodServerSideApply)
}

func lastRelease(cfg *action.Configuration, name string) (*release.Release, error) {
	return AsRelease(cfg.Releases.Last(name))
}

// history is every stored revision of release name, in storage order.
func history(cfg *action.Configuration, name string) ([]*release.Release, error) {
	return AsReleases(cfg.Releases.History(name))
}

// AsReleases is AsRelease for a list.
func AsReleases(stored []ri.Releaser, err error) ([]*release.Release, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*release.Release, 0, len(stored))
	for _, s := range stored {
		r, err := AsRelease(s, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func copyValues(v map[string]any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	return deepCopyMap(v)
}
