package benchmark

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// Labels on everything the data source creates.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "terraform-provider-clusterstorage"
	labelComponent = "app.kubernetes.io/component"
	// LabelRun is set on the temporary pod and claim of one run, with the run's id as value.
	LabelRun = "clusterstorage.io/benchmark-run"
	// LabelCache is set on the ConfigMaps that cache results, with the benchmark's id as value.
	LabelCache = "clusterstorage.io/benchmark-cache"

	cacheDataKey = "result.json"
	// maxRawJSON bounds the raw fio JSON kept in a cache ConfigMap (which holds at most 1 MiB).
	maxRawJSON = 512 << 10
)

// CacheName returns the name of the ConfigMap that caches the benchmark with id key.
func CacheName(key string) string { return "clusterstorage-benchmark-" + key }

// stored is one measured result, as the cache keeps it.
type stored struct {
	Version    int        `json:"version"`
	Target     string     `json:"target"`
	JobHash    string     `json:"job_hash"`
	MeasuredAt time.Time  `json:"measured_at"`
	Result     fio.Result `json:"result"`
	RawJSON    string     `json:"raw_json,omitempty"`
	// Rounds is how many fio runs Result is the median of (0 for entries written before rounds
	// existed: one run); Spread is the spread of each headline figure over them.
	Rounds int               `json:"rounds,omitempty"`
	Spread map[string]Spread `json:"spread,omitempty"`
}

const storedVersion = 1

// cache reads and writes results in ConfigMaps of one namespace.
type cache struct {
	client    kubernetes.Interface
	namespace string
}

// get returns the result cached under key if it is younger than maxAge. A missing, unreadable or
// stale entry is a miss (reason says why); only API errors other than not-found are errors.
func (c cache) get(ctx context.Context, key string, maxAge time.Duration, now time.Time) (s *stored, reason string, err error) {
	cm, err := c.client.CoreV1().ConfigMaps(c.namespace).Get(ctx, CacheName(key), metav1.GetOptions{})
	if kube.IsNotFound(err) {
		return nil, "no cached result", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading cache ConfigMap %s/%s: %w", c.namespace, CacheName(key), err)
	}
	v, ok := decodeStored(cm.Data[cacheDataKey])
	if !ok {
		return nil, "the cached result is unreadable or from another version", nil
	}
	age := now.Sub(v.MeasuredAt)
	if age > maxAge {
		return nil, fmt.Sprintf("the cached result is %s old, older than max_age %s", age.Round(time.Second), maxAge), nil
	}
	return &v, fmt.Sprintf("the cached result is %s old", age.Round(time.Second)), nil
}

// decodeStored reads a cached result; false when it is not one of this version.
func decodeStored(data string) (stored, bool) {
	var v stored
	if json.Unmarshal([]byte(data), &v) != nil {
		return stored{}, false
	}
	return v, v.Version == storedVersion
}

// put stores s under key, replacing what was there.
func (c cache) put(ctx context.Context, key string, s stored) error {
	if len(s.RawJSON) > maxRawJSON {
		s.RawJSON = ""
	}
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      CacheName(key),
			Namespace: c.namespace,
			Labels:    map[string]string{labelManagedBy: managedBy, labelComponent: "benchmark-cache", LabelCache: key},
			Annotations: map[string]string{
				"clusterstorage.io/benchmark-target": s.Target,
				"clusterstorage.io/measured-at":      s.MeasuredAt.UTC().Format(time.RFC3339),
			},
		},
		Data: map[string]string{cacheDataKey: string(data)},
	}
	cms := c.client.CoreV1().ConfigMaps(c.namespace)
	cur, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case kube.IsNotFound(err):
		_, err = cms.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		cur.Labels, cur.Annotations, cur.Data = want.Labels, want.Annotations, want.Data
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing cache ConfigMap %s/%s: %w", c.namespace, want.Name, err)
	}
	return nil
}

// rawJSON returns the JSON document in fio's output (the first line starting with '{' to the end
// of that object), compacted; "" when there is none.
func rawJSON(out []byte) string {
	for pos := 0; pos < len(out); {
		end := bytes.IndexByte(out[pos:], '\n')
		if end < 0 {
			end = len(out)
		} else {
			end += pos + 1
		}
		line := bytes.TrimLeft(out[pos:end], " \t\r")
		if len(line) > 0 && line[0] == '{' {
			var raw json.RawMessage
			if json.NewDecoder(bytes.NewReader(out[end-len(line):])).Decode(&raw) == nil {
				var b bytes.Buffer
				if json.Compact(&b, raw) == nil {
					return b.String()
				}
			}
		}
		pos = end
	}
	return ""
}

// CachedResult is a result as the cache keeps it: the median of Rounds runs and their spread,
// for data sources other than this one that cache what Measure measured (the comparison).
type CachedResult struct {
	Target     string
	JobHash    string
	MeasuredAt time.Time
	Result     fio.Result
	Rounds     int
	Spread     map[string]Spread
}

// ResultCache is the result cache that max_age uses, in ConfigMaps of one namespace.
type ResultCache struct{ c cache }

// NewResultCache returns the result cache in namespace.
func NewResultCache(client kubernetes.Interface, namespace string) ResultCache {
	return ResultCache{c: cache{client: client, namespace: namespace}}
}

// Get returns the result cached under key if it is younger than maxAge, as max_age does here: a
// missing, unreadable or stale entry is a miss (reason says why).
func (rc ResultCache) Get(ctx context.Context, key string, maxAge time.Duration, now time.Time) (*CachedResult, string, error) {
	s, reason, err := rc.c.get(ctx, key, maxAge, now)
	if s == nil {
		return nil, reason, err
	}
	return &CachedResult{Target: s.Target, JobHash: s.JobHash, MeasuredAt: s.MeasuredAt, Result: s.Result, Rounds: s.Rounds, Spread: s.Spread}, reason, nil
}

// Put stores r under key (ConfigMap CacheName(key)), replacing what was there.
func (rc ResultCache) Put(ctx context.Context, key string, r CachedResult) error {
	return rc.c.put(ctx, key, stored{Version: storedVersion, Target: r.Target, JobHash: r.JobHash, MeasuredAt: r.MeasuredAt, Result: r.Result,
		Rounds: r.Rounds, Spread: r.Spread})
}

// CacheKey is the key of r's result measured over rounds runs: the benchmark's id.
func CacheKey(r Request, rounds int) string { return roundsKey(r.cacheKey(), rounds) }
