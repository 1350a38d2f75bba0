package comparison

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

// cacheKeys returns the key each target's result is cached under (max_age): a hash of the whole
// comparison (every target's name and benchmark id, which covers its target and the job, and the
// rounds) and the target's name. A comparison reuses only what the same comparison measured in
// interleaved rounds, never a lone benchmark's result of one of its targets.
func cacheKeys(targets []target, rounds int) map[string]string {
	lines := make([]string, 0, len(targets))
	for _, t := range targets {
		lines = append(lines, t.Name+"="+benchmark.CacheKey(t.Request, rounds))
	}
	sort.Strings(lines)
	whole := fmt.Sprintf("clusterstorage-comparison/v1\nrounds=%d\n%s\n", rounds, strings.Join(lines, "\n"))
	keys := make(map[string]string, len(targets))
	for _, t := range targets {
		sum := sha256.Sum256([]byte(whole + "target=" + t.Name + "\n"))
		keys[t.Name] = hex.EncodeToString(sum[:])[:16]
	}
	return keys
}

// cachedResults returns every target's cached result when each is younger than maxAge, and the
// oldest one's time; nil when any target misses (reason says which and why): a comparison is
// either reused whole or run again whole.
func cachedResults(ctx context.Context, client kubernetes.Interface, targets []target, keys map[string]string, maxAge time.Duration, now time.Time) (map[string]*benchmark.CachedResult, time.Time, string, error) {
	out := make(map[string]*benchmark.CachedResult, len(targets))
	var oldest time.Time
	for _, t := range targets {
		hit, reason, err := benchmark.NewResultCache(client, t.Request.Target.Namespace).Get(ctx, keys[t.Name], maxAge, now)
		if hit == nil {
			return nil, time.Time{}, fmt.Sprintf("target %q: %s", t.Name, reason), err
		}
		if oldest.IsZero() || hit.MeasuredAt.Before(oldest) {
			oldest = hit.MeasuredAt
		}
		out[t.Name] = hit
	}
	return out, oldest, "every target's cached result is younger than max_age", nil
}

// storeResults caches each target's median and spread, measured in rounds that started at.
func storeResults(ctx context.Context, client kubernetes.Interface, targets []target, keys map[string]string, ms []measured, spec fio.Spec, at time.Time) error {
	byName := make(map[string]measured, len(ms))
	for _, mt := range ms {
		byName[mt.Name] = mt
	}
	var errs []string
	for _, t := range targets {
		mt := byName[t.Name]
		err := benchmark.NewResultCache(client, t.Request.Target.Namespace).Put(ctx, keys[t.Name], benchmark.CachedResult{
			Target: t.Request.Target.String(), JobHash: fio.Hash(spec), MeasuredAt: at, Result: mt.Median, Rounds: mt.Rounds, Spread: mt.Spreads,
		})
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
