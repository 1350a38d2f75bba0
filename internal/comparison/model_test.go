package comparison

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// cfg returns a comparison as Terraform hands it over: every attribute null unless set.
func cfg(targets map[string]targetModel, change func(m *model)) model {
	m := model{Targets: targets}
	if change != nil {
		change(&m)
	}
	return m
}

func nullTarget(change func(t *targetModel)) targetModel {
	var t targetModel
	change(&t)
	return t
}

func errorAt(diags diag.Diagnostics, p path.Path, summary string) bool {
	for _, d := range diags.Errors() {
		if dp, ok := d.(diag.DiagnosticWithPath); ok && dp.Path().Equal(p) && strings.Contains(d.Summary(), summary) {
			return true
		}
	}
	return false
}

func TestRequest(t *testing.T) {
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
		m.Image = types.StringValue("fio:3")
		m.Runtime = types.StringValue("5s")
	}).request()
	if diags.HasError() {
		t.Fatalf("diagnostics: %v", diags)
	}
	if rounds != DefaultRounds || len(got) != 2 || got[0].Name != "disk" || got[1].Name != "local" {
		t.Fatalf("rounds %d targets %+v", rounds, got)
	}
	disk, local := got[0].Request, got[1].Request
	if disk.Target.Kind != benchmark.TargetNodePath || disk.Target.Node != "n1" || disk.Target.Namespace != "default" {
		t.Errorf("disk target = %+v", disk.Target)
	}
	if local.Target.Kind != benchmark.TargetStorageClass || local.Target.Node != "n1" || local.Target.Namespace != "bench" || local.Image != "fio:3" {
		t.Errorf("local = %+v", local)
	}
	if disk.Spec.Jobs[0].Runtime.String() != "5s" || local.Spec.Jobs[0].Runtime != disk.Spec.Jobs[0].Runtime {
		t.Errorf("the job differs: %v %v", disk.Spec.Jobs[0].Runtime, local.Spec.Jobs[0].Runtime)
	}
}

func TestRequestRefuses(t *testing.T) {
	one := map[string]targetModel{"a": nullTarget(func(t *targetModel) { t.StorageClass = types.StringValue("x") })}
	for _, c := range []struct {
		name    string
		m       model
		at      path.Path
		summary string
	}{
		{"no targets", cfg(map[string]targetModel{}, func(m *model) { m.Baseline = types.StringValue("a") }),
			path.Root("targets"), "No targets"},
		{"unknown baseline", cfg(one, func(m *model) { m.Baseline = types.StringValue("b") }),
			path.Root("baseline"), "Unknown baseline"},
		{"rounds 0", cfg(one, func(m *model) { m.Baseline = types.StringValue("a"); m.Rounds = types.Int64Value(0) }),
			path.Root("rounds"), "Invalid rounds"},
		{"two kinds in a target", cfg(map[string]targetModel{"a": nullTarget(func(t *targetModel) {
			t.StorageClass = types.StringValue("x")
			t.Claim = types.StringValue("y")
		})}, func(m *model) { m.Baseline = types.StringValue("a") }),
			path.Root("targets").AtMapKey("a"), "Exactly one target required"},
		{"node_path without node", cfg(map[string]targetModel{"a": nullTarget(func(t *targetModel) {
			t.NodePath = types.StringValue("/mnt")
		})}, func(m *model) { m.Baseline = types.StringValue("a") }),
			path.Root("targets").AtMapKey("a").AtName("node"), "node required with node_path"},
		{"volume_size on a claim", cfg(map[string]targetModel{"a": nullTarget(func(t *targetModel) {
			t.Claim = types.StringValue("c")
			t.VolumeSize = types.StringValue("1Gi")
		})}, func(m *model) { m.Baseline = types.StringValue("a") }),
			path.Root("targets").AtMapKey("a").AtName("volume_size"), "volume_size needs storage_class"},
	} {
		_, _, diags := c.m.request()
		if !errorAt(diags, c.at, c.summary) {
			t.Errorf("%s: want %q at %s, got %v", c.name, c.summary, c.at, diags)
		}
	}
}
