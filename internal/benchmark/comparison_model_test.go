package benchmark

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// cmpCfg returns a comparison as Terraform hands it over: every attribute null unless set.
func cmpCfg(targets map[string]comparisonTargetModel, change func(m *comparisonModel)) comparisonModel {
	m := comparisonModel{Targets: targets}
	if change != nil {
		change(&m)
	}
	return m
}

func nullTarget(change func(t *comparisonTargetModel)) comparisonTargetModel {
	var t comparisonTargetModel
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

func TestComparisonRequest(t *testing.T) {
	targets := map[string]comparisonTargetModel{
		"disk": nullTarget(func(t *comparisonTargetModel) { t.NodePath = types.StringValue("/mnt/data") }),
		"local": nullTarget(func(t *comparisonTargetModel) {
			t.StorageClass = types.StringValue("local")
			t.Namespace = types.StringValue("bench")
		}),
	}
	got, rounds, diags := cmpCfg(targets, func(m *comparisonModel) {
		m.Baseline = types.StringValue("disk")
		m.Node = types.StringValue("n1")
		m.Image = types.StringValue("fio:3")
		m.Runtime = types.StringValue("5s")
	}).request()
	if diags.HasError() {
		t.Fatalf("diagnostics: %v", diags)
	}
	if rounds != DefaultComparisonRounds || len(got) != 2 || got[0].Name != "disk" || got[1].Name != "local" {
		t.Fatalf("rounds %d targets %+v", rounds, got)
	}
	disk, local := got[0].Request, got[1].Request
	if disk.Target.Kind != targetNodePath || disk.Target.Node != "n1" || disk.Target.Namespace != "default" {
		t.Errorf("disk target = %+v", disk.Target)
	}
	if local.Target.Kind != targetStorageClass || local.Target.Node != "n1" || local.Target.Namespace != "bench" || local.Image != "fio:3" {
		t.Errorf("local = %+v", local)
	}
	if disk.Spec.Jobs[0].Runtime.String() != "5s" || local.Spec.Jobs[0].Runtime != disk.Spec.Jobs[0].Runtime {
		t.Errorf("the job differs: %v %v", disk.Spec.Jobs[0].Runtime, local.Spec.Jobs[0].Runtime)
	}
}

func TestComparisonRequestRefuses(t *testing.T) {
	one := map[string]comparisonTargetModel{"a": nullTarget(func(t *comparisonTargetModel) { t.StorageClass = types.StringValue("x") })}
	for _, c := range []struct {
		name    string
		m       comparisonModel
		at      path.Path
		summary string
	}{
		{"no targets", cmpCfg(map[string]comparisonTargetModel{}, func(m *comparisonModel) { m.Baseline = types.StringValue("a") }),
			path.Root("targets"), "No targets"},
		{"unknown baseline", cmpCfg(one, func(m *comparisonModel) { m.Baseline = types.StringValue("b") }),
			path.Root("baseline"), "Unknown baseline"},
		{"rounds 0", cmpCfg(one, func(m *comparisonModel) { m.Baseline = types.StringValue("a"); m.Rounds = types.Int64Value(0) }),
			path.Root("rounds"), "Invalid rounds"},
		{"two kinds in a target", cmpCfg(map[string]comparisonTargetModel{"a": nullTarget(func(t *comparisonTargetModel) {
			t.StorageClass = types.StringValue("x")
			t.Claim = types.StringValue("y")
		})}, func(m *comparisonModel) { m.Baseline = types.StringValue("a") }),
			path.Root("targets").AtMapKey("a"), "Exactly one target required"},
		{"node_path without node", cmpCfg(map[string]comparisonTargetModel{"a": nullTarget(func(t *comparisonTargetModel) {
			t.NodePath = types.StringValue("/mnt")
		})}, func(m *comparisonModel) { m.Baseline = types.StringValue("a") }),
			path.Root("targets").AtMapKey("a").AtName("node"), "node required with node_path"},
		{"volume_size on a claim", cmpCfg(map[string]comparisonTargetModel{"a": nullTarget(func(t *comparisonTargetModel) {
			t.Claim = types.StringValue("c")
			t.VolumeSize = types.StringValue("1Gi")
		})}, func(m *comparisonModel) { m.Baseline = types.StringValue("a") }),
			path.Root("targets").AtMapKey("a").AtName("volume_size"), "volume_size needs storage_class"},
	} {
		_, _, diags := c.m.request()
		if !errorAt(diags, c.at, c.summary) {
			t.Errorf("%s: want %q at %s, got %v", c.name, c.summary, c.at, diags)
		}
	}
}

func TestRoundsKey(t *testing.T) {
	if roundsKey("abc", 1) != "abc" {
		t.Error("one round must keep the benchmark's key")
	}
	if a, b := roundsKey("abc", 2), roundsKey("abc", 3); a == b || a == "abc" || len(a) != 16 {
		t.Errorf("roundsKey = %q, %q", a, b)
	}
}
