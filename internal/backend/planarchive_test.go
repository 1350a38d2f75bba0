package backend_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// countingRepo serves the fixture charts (packaged as acctest.StartChartRepo packages them) from
// a server of the test's own that counts what it serves: index.yaml, which the provider reads once
// per chart fetch, and chart archives. It returns the repository's URL and the counters.
func countingRepo(t *testing.T) (string, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	packaged := acctest.StartChartRepoWith(t, acctest.ChartsDir(), acctest.ChartRepoOptions{})
	dir := t.TempDir()
	archives, err := filepath.Glob(filepath.Join(packaged.Dir, "*.tgz"))
	if err != nil || len(archives) == 0 {
		t.Fatalf("no packaged charts in %s: %v", packaged.Dir, err)
	}
	for _, a := range archives {
		data, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(a)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var indexes, tgz atomic.Int64
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/index.yaml":
			indexes.Add(1)
		case strings.HasSuffix(r.URL.Path, ".tgz"):
			tgz.Add(1)
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	index, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, &indexes, &tgz
}

// fetchCount is a plan check that the chart repository was asked for its index want times since
// the step began (each fetch of the chart archive reads the index first).
type fetchCount struct {
	indexes, archives *atomic.Int64
	want              int64
	when              string
}

func (c fetchCount) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	if got := c.indexes.Load(); got != c.want {
		resp.Error = fmt.Errorf("%s the chart was fetched %d times (index.yaml; %d archive downloads), want %d: one per plan", c.when, got, c.archives.Load(), c.want)
	}
}

// TestAccStorageBackend_oneArchivePerPlan: a plan that changes a release (LVM turned on) renders
// the planned version's chart archive (the chart check) and reads its values (the update guard's
// engine state) from one fetch: the chart repository serves its index once per plan.
// plugin-testing's plan-only step plans twice (without and with refresh).
func TestAccStorageBackend_oneArchivePerPlan(t *testing.T) {
	f := newFixture(t)
	url, indexes, archives := countingRepo(t)
	f.repo = url
	class := acctest.RandomName("acc-hostpath")
	settings := func(lvm bool) string {
		return fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = %q\n    lvm_enabled = %t", class, t.TempDir(), lvm)
	}
	base := settings(false)
	// force_destroy: the destroy guard counts every volume of OpenEBS's drivers on the cluster,
	// other tests' included; this test is not about it.
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{Config: f.openebs("4.4.0", base, "  force_destroy = true")},
			{
				PreConfig: func() { indexes.Store(0); archives.Store(0) },
				Config:    f.openebs("4.4.0", strings.Replace(base, "lvm_enabled = false", "lvm_enabled = true", 1), "  force_destroy = true"),
				PlanOnly:  true, ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPreRefresh:  []plancheck.PlanCheck{fetchCount{indexes, archives, 1, "after the first plan"}},
					PostApplyPostRefresh: []plancheck.PlanCheck{fetchCount{indexes, archives, 2, "after the second plan"}},
				},
			},
		},
	})
}
