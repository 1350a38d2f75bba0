package helm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// TestIntegrationRecoverMixedHistory: a release whose deployed revision was applied client-side
// (Helm 3, or this provider before Helm 4) and whose interrupted upgrade was server-side is rolled
// back client-side, as Helm's rollback applies the target revision, without forcing conflicts
// (which Helm refuses with client-side apply).
func TestIntegrationRecoverMixedHistory(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()
	rel := fieldRelease(t, k, "1.0.0")
	if _, err := k.c.Install(ctx, rel); err != nil {
		t.Fatal(err)
	}
	storeAs(t, k, func(cfg *action.Configuration) {
		r1, err := helm.AsRelease(cfg.Releases.Get("fm", 1))
		if err != nil {
			t.Fatal(err)
		}
		r1.ApplyMethod = string(release.ApplyMethodClientSideApply)
		if err := cfg.Releases.Update(r1); err != nil {
			t.Fatal(err)
		}
		r2 := *r1
		info := *r1.Info
		r2.Info = &info
		r2.Version = 2
		r2.Chart = fieldChart("2.0.0")
		r2.ApplyMethod = string(release.ApplyMethodServerSideApply)
		r2.SetStatus(rcommon.StatusPendingUpgrade, "Preparing upgrade")
		abandoned(&r2)
		r2.Labels = map[string]string{helm.OwnerLabel: testOwner, helm.RevisionLabel: "2"}
		if err := cfg.Releases.Create(&r2); err != nil {
			t.Fatal(err)
		}
	})
	msg, err := k.c.Recover(ctx, "fm", k.ns, time.Minute, 0)
	if err != nil {
		t.Fatalf("recovering a server-side upgrade over a client-side revision: %v", err)
	}
	if !strings.Contains(msg, "rolled back to the last deployed revision 1") {
		t.Errorf("description %q", msg)
	}
	st, err := k.c.Get("fm", k.ns)
	if err != nil || st.Status != "deployed" || st.Revision != 3 {
		t.Fatalf("after recovery: %+v %v", st, err)
	}
}
