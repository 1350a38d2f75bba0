package benchmark

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

// cfg returns a model as Terraform hands it over: every attribute null unless set by change.
func cfg(change func(m *Model)) Model {
	m := Model{
		TargetModel: TargetModel{
			StorageClass: types.StringNull(), Claim: types.StringNull(), NodePath: types.StringNull(), Node: types.StringNull(),
			Namespace: types.StringNull(), VolumeSize: types.StringNull(),
		},
		PodModel: PodModel{Image: types.StringNull(), ImagePullPolicy: types.StringNull(), HostNetwork: types.BoolNull()},
		JobModel: JobModel{
			Profile: types.StringNull(), BlockSize: types.StringNull(), RW: types.StringNull(),
			RWMixRead: types.Int64Null(), IODepth: types.Int64Null(), NumJobs: types.Int64Null(), Size: types.StringNull(),
			Runtime: types.StringNull(), RampTime: types.StringNull(), Direct: types.BoolNull(), IOEngine: types.StringNull(),
			Fsync: types.Int64Null(),
		},
		MaxAge: types.StringNull(), IncludeRawJSON: types.BoolNull(),
	}
	change(&m)
	return m
}

func TestRequestDefaults(t *testing.T) {
	r, diags := cfg(func(m *Model) { m.StorageClass = types.StringValue("fast") }).Request()
	if diags.HasError() {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	want, _ := fio.Profile("database")
	if fio.Hash(r.Spec) != fio.Hash(want) {
		t.Errorf("spec = %+v, want the database profile", r.Spec)
	}
	if r.Target.Kind != TargetStorageClass || r.Target.Name != "fast" || r.Target.Namespace != "default" {
		t.Errorf("target = %+v", r.Target)
	}
	if got := r.Target.VolumeSize.String(); got != "1Gi" {
		t.Errorf("volume size = %s, want 1Gi", got)
	}
	if r.Image != DefaultImage || r.MaxAge != 0 {
		t.Errorf("image %q max_age %s", r.Image, r.MaxAge)
	}
}

func TestRequestOverrides(t *testing.T) {
	r, diags := cfg(func(m *Model) {
		m.Claim = types.StringValue("data")
		m.Namespace = types.StringValue("db")
		m.Profile = types.StringValue("random_read")
		m.BlockSize = types.StringValue("16k")
		m.Runtime = types.StringValue("2m")
		m.RampTime = types.StringValue("5s")
		m.NumJobs = types.Int64Value(4)
		m.Direct = types.BoolValue(false)
		m.MaxAge = types.StringValue("24h")
	}).Request()
	if diags.HasError() {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	j := r.Spec.Jobs[0]
	if j.RW != "randread" || j.BlockSize != "16k" || j.Runtime != 2*time.Minute || j.RampTime != 5*time.Second || j.NumJobs != 4 || j.Direct || j.IODepth != 64 {
		t.Errorf("job = %+v", j)
	}
	if r.Target.Kind != TargetClaim || r.Target.Namespace != "db" || r.MaxAge != 24*time.Hour {
		t.Errorf("request = %+v", r)
	}
}

func TestRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(m *Model)
		want   string
	}{
		{"no target", func(*Model) {}, "Set exactly one of storage_class, claim and node_path (set: none)"},
		{"two targets", func(m *Model) {
			m.StorageClass, m.Claim = types.StringValue("a"), types.StringValue("b")
		}, "(set: storage_class, claim)"},
		{"node_path without node", func(m *Model) { m.NodePath = types.StringValue("/mnt") }, "set node to the Kubernetes node"},
		{"volume_size with claim", func(m *Model) {
			m.Claim, m.VolumeSize = types.StringValue("c"), types.StringValue("1Gi")
		}, "volume_size sizes the temporary claim"},
		{"image with node_path", func(m *Model) {
			m.NodePath, m.Node, m.Image = types.StringValue("/mnt"), types.StringValue("n"), types.StringValue("fio")
		}, "image applies to the fio pod"},
		{"volume too small", func(m *Model) {
			m.StorageClass, m.VolumeSize, m.NumJobs = types.StringValue("c"), types.StringValue("300Mi"), types.Int64Value(2)
		}, "smaller than the 400M fio's files need"},
		{"block size above size", func(m *Model) {
			m.StorageClass, m.BlockSize, m.Size = types.StringValue("c"), types.StringValue("4M"), types.StringValue("2M")
		}, `block_size "4M" is larger than size "2M"`},
		{"fractional runtime", func(m *Model) {
			m.StorageClass, m.Runtime = types.StringValue("c"), types.StringValue("1500ms")
		}, "must be a whole number of seconds"},
		{"bad max_age", func(m *Model) {
			m.StorageClass, m.MaxAge = types.StringValue("c"), types.StringValue("soon")
		}, "is not a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := cfg(tc.change).Request()
			if !diags.HasError() {
				t.Fatal("no error")
			}
			var all []string
			for _, d := range diags.Errors() {
				all = append(all, d.Summary()+": "+d.Detail())
			}
			if text := strings.Join(all, "\n"); !strings.Contains(text, tc.want) {
				t.Errorf("errors %q do not contain %q", text, tc.want)
			}
		})
	}
}

func TestCacheKey(t *testing.T) {
	base := func(m *Model) { m.StorageClass = types.StringValue("fast") }
	key := func(change func(m *Model)) string {
		r, diags := cfg(func(m *Model) { base(m); change(m) }).Request()
		if diags.HasError() {
			t.Fatalf("diagnostics: %v", diags)
		}
		return r.cacheKey()
	}
	k := key(func(*Model) {})
	if len(k) != 16 {
		t.Errorf("key %q is not 16 hex digits", k)
	}
	// The same job spelled differently, and pod settings that do not change the measurement,
	// share the key.
	for name, change := range map[string]func(m *Model){
		"size spelling":   func(m *Model) { m.Size = types.StringValue("200m") },
		"runtime spelled": func(m *Model) { m.Runtime = types.StringValue("1m") },
		"image":           func(m *Model) { m.Image = types.StringValue("other/fio") },
		"max_age":         func(m *Model) { m.MaxAge = types.StringValue("1h") },
	} {
		if got := key(change); got != k {
			t.Errorf("%s changed the key", name)
		}
	}
	for name, change := range map[string]func(m *Model){
		"job":         func(m *Model) { m.IODepth = types.Int64Value(1) },
		"class":       func(m *Model) { m.StorageClass = types.StringValue("slow") },
		"node":        func(m *Model) { m.Node = types.StringValue("n1") },
		"namespace":   func(m *Model) { m.Namespace = types.StringValue("other") },
		"volume size": func(m *Model) { m.VolumeSize = types.StringValue("2Gi") },
	} {
		if got := key(change); got == k {
			t.Errorf("%s did not change the key", name)
		}
	}
}

func TestDefaultVolumeSize(t *testing.T) {
	for _, tc := range []struct {
		size    string
		numJobs int
		want    string
	}{
		{"16M", 1, "1Gi"}, {"200M", 1, "1Gi"}, {"1G", 1, "2Gi"}, {"4G", 4, "20Gi"},
	} {
		s, _ := fio.Profile("database")
		s = s.Apply(fio.Override{Size: &tc.size, NumJobs: &tc.numJobs})
		if got := defaultVolumeSize(s); got.String() != tc.want {
			t.Errorf("%s x %d: %s, want %s", tc.size, tc.numJobs, got.String(), tc.want)
		}
	}
}

func TestEffectiveKeepsConfiguredSpelling(t *testing.T) {
	m := cfg(func(m *Model) {
		m.StorageClass = types.StringValue("fast")
		m.Size = types.StringValue("16m")
		m.Runtime = types.StringValue("1m")
	})
	r, diags := m.Request()
	if diags.HasError() {
		t.Fatal(diags)
	}
	m.Effective(r, r.cacheKey())
	if m.Size.ValueString() != "16m" || m.Runtime.ValueString() != "1m" {
		t.Errorf("configured values changed: size %s runtime %s", m.Size, m.Runtime)
	}
	if m.Profile.ValueString() != "database" || m.RampTime.ValueString() != "0s" || m.IODepth.ValueInt64() != 16 ||
		!m.Direct.ValueBool() || m.Namespace.ValueString() != "default" || m.VolumeSize.ValueString() != "1Gi" || m.Image.ValueString() != DefaultImage {
		t.Errorf("effective values: %+v", m)
	}
}

func TestRawJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"note: something\n{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\nfio: trailing message\n", `{"a":1,"b":[1,2]}`},
		{"{\"x\": {\"y\": 2}}", `{"x":{"y":2}}`},
		{"fio: no JSON at all\n", ""},
		{"{ broken\n", ""},
	} {
		if got := rawJSON([]byte(tc.in)); got != tc.want {
			t.Errorf("rawJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// fio's percentiles are histogram bucket edges and can exceed the exact maximum (seen: p99.9
// 69730 µs with max 69391 µs); they are capped there.
func TestLatencyPercentilesCappedAtMax(t *testing.T) {
	got := latencyOf(fio.Latency{Mean: 11231, P50: 8585, P95: 30801, P99: 46399, P999: 69730.304, Max: 69391.013})
	if got.P999 != 69391.013 || got.P99 != 46399 || got.Max != 69391.013 {
		t.Errorf("latency = %+v", got)
	}
	if got := latencyOf(fio.Latency{}); got.P50 != 0 || got.Max != 0 {
		t.Errorf("empty latency = %+v", got)
	}
}
