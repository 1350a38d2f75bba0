package comparison

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

// cacheTargets is a comparison of a node path and a class in another namespace, rounds 3.
func cacheTargets(t *testing.T, maxAge string, change func(m *model)) ([]target, int) {
	t.Helper()
	targets := map[string]targetModel{
		"disk": nullTarget(func(t *targetModel) { t.NodePath = types.StringValue("/mnt/data") }),
		"local": nullTarget(func(t *targetModel) {
			t.StorageClass = types.StringValue("local")
			t.Namespace = types.StringValue("bench")
		}),
	}
	got, rounds, diags := cfg(targets, func(m *model) {
		m.Baseline = types.StringValue("disk")
		m.Node = types.StringValue("n1")
		m.Rounds = types.Int64Value(3)
		if maxAge != "" {
			m.MaxAge = types.StringValue(maxAge)
		}
		if change != nil {
			change(m)
		}
	}).request()
	if diags.HasError() {
		t.Fatalf("diagnostics: %v", diags)
	}
	return got, rounds
}

func TestRequestMaxAge(t *testing.T) {
	got, _ := cacheTargets(t, "2h", nil)
	for _, tg := range got {
		if tg.Request.MaxAge != 2*time.Hour {
			t.Errorf("%s: MaxAge = %v, want 2h", tg.Name, tg.Request.MaxAge)
		}
	}
	if got, _ := cacheTargets(t, "", nil); got[0].Request.MaxAge != 0 {
		t.Errorf("no max_age: MaxAge = %v", got[0].Request.MaxAge)
	}
	_, _, diags := cfg(map[string]targetModel{"a": nullTarget(func(t *targetModel) { t.StorageClass = types.StringValue("x") })}, func(m *model) {
		m.Baseline = types.StringValue("a")
		m.MaxAge = types.StringValue("soon")
	}).request()
	if !errorAt(diags, path.Root("max_age"), "Invalid duration") {
		t.Errorf("max_age = soon: %v", diags)
	}
}

func TestCacheKeys(t *testing.T) {
	targets, rounds := cacheTargets(t, "1h", nil)
	keys := cacheKeys(targets, rounds)
	if len(keys) != 2 || keys["disk"] == keys["local"] || len(keys["disk"]) != 16 {
		t.Fatalf("keys = %v", keys)
	}
	// The same comparison, its targets in another order and another max_age: the same keys.
	reversed := []target{targets[1], targets[0]}
	again, _ := cacheTargets(t, "5m", nil)
	for name, k := range cacheKeys(reversed, rounds) {
		if k != keys[name] || cacheKeys(again, rounds)[name] != k {
			t.Errorf("%s: key changed with the order or max_age", name)
		}
	}
	// Never a lone benchmark's key.
	for _, tg := range targets {
		if keys[tg.Name] == benchmark.CacheKey(tg.Request, rounds) {
			t.Errorf("%s: the comparison reuses the benchmark's key", tg.Name)
		}
	}
	// Another job, other rounds, another set of targets: other keys.
	job, _ := cacheTargets(t, "1h", func(m *model) { m.Runtime = types.StringValue("7s") })
	for name, k := range map[string]map[string]string{
		"job": cacheKeys(job, rounds), "rounds": cacheKeys(targets, rounds+1), "targets": cacheKeys(targets[:1], rounds),
	} {
		if k["disk"] == keys["disk"] {
			t.Errorf("%s changed, the key did not", name)
		}
	}
}

func TestCachedResults(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	targets, rounds := cacheTargets(t, "1h", nil)
	keys := cacheKeys(targets, rounds)
	at := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)

	if hit, _, reason, err := cachedResults(ctx, client, targets, keys, time.Hour, at); hit != nil || err != nil || !strings.Contains(reason, "no cached result") {
		t.Fatalf("empty cache: %v %q %v", hit, reason, err)
	}
	ms := []measured{
		{Name: "disk", Median: fio.Result{Read: fio.IOStats{IOPS: 1000}}, Rounds: 3, Spreads: map[string]benchmark.Spread{"read_iops": {Min: 900, Max: 1100}}},
		{Name: "local", Median: fio.Result{Read: fio.IOStats{IOPS: 500}}, Rounds: 3},
	}
	if err := storeResults(ctx, client, targets, keys, ms, targets[0].Request.Spec, at); err != nil {
		t.Fatal(err)
	}
	// Each target's entry in its own namespace.
	for _, tg := range targets {
		if _, err := client.CoreV1().ConfigMaps(tg.Request.Target.Namespace).Get(ctx, benchmark.CacheName(keys[tg.Name]), metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", tg.Name, err)
		}
	}
	hit, oldest, _, err := cachedResults(ctx, client, targets, keys, time.Hour, at.Add(30*time.Minute))
	if err != nil || hit == nil {
		t.Fatalf("within max_age: %v %v", hit, err)
	}
	if !oldest.Equal(at) || hit["disk"].Result.Read.IOPS != 1000 || hit["local"].Result.Read.IOPS != 500 || hit["disk"].Rounds != 3 ||
		hit["disk"].Spread["read_iops"].Max != 1100 {
		t.Errorf("cached = %+v %+v at %v", hit["disk"], hit["local"], oldest)
	}
	if hit, _, reason, _ := cachedResults(ctx, client, targets, keys, time.Hour, at.Add(2*time.Hour)); hit != nil || !strings.Contains(reason, "older than max_age") {
		t.Errorf("past max_age: %v %q", hit, reason)
	}
	// One target's entry gone: the whole comparison runs again.
	if err := client.CoreV1().ConfigMaps("bench").Delete(ctx, benchmark.CacheName(keys["local"]), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if hit, _, reason, _ := cachedResults(ctx, client, targets, keys, time.Hour, at.Add(time.Minute)); hit != nil || !strings.Contains(reason, `target "local"`) {
		t.Errorf("one entry missing: %v %q", hit, reason)
	}
}
