package capacity

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
)

// backendAttrTypes are the attribute types of the backend object.
func backendAttrTypes(t *testing.T, s datasource.SchemaResponse) map[string]attr.Type {
	t.Helper()
	ot, ok := s.Schema.Attributes["backend"].GetType().(types.ObjectType)
	if !ok {
		t.Fatalf("backend is a %T", s.Schema.Attributes["backend"].GetType())
	}
	return ot.AttrTypes
}

func testSchema(t *testing.T) datasource.SchemaResponse {
	t.Helper()
	var resp datasource.SchemaResponse
	(&DataSource{}).Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	if diags := resp.Schema.ValidateImplementation(context.Background()); diags.HasError() {
		t.Fatal(diags)
	}
	return resp
}

// Every result kind fits the schema: tfsdk tags and types match, and what is written reads back.
func TestModelMatchesSchema(t *testing.T) {
	ctx := context.Background()
	resp := testSchema(t)
	s := resp.Schema
	pct := int64(12)
	fs := Filesystem{
		Path: "/data", ResolvedPath: "/mnt/data", Exists: true, MountPoint: "/mnt", Device: "/dev/mapper/vg-data", FSType: "ext4",
		SizeBytes: 100, UsedBytes: 12, AvailableBytes: 80, UsedPercent: &pct, InodesTotal: 10, InodesUsed: 1, InodesFree: 9,
		BlockDevices: []string{"dm-0", "sda"}, Disks: []Disk{{Name: "sda", Model: "X", Rotational: true, SizeBytes: 200}},
	}
	tmpfs := Filesystem{Path: "/run", ResolvedPath: "/run", Exists: true, MountPoint: "/run", Device: "tmpfs", FSType: "tmpfs", AvailableBytes: 5}
	max5 := int64(5)
	sel := "zone=a"
	yes := true
	for name, fill := range map[string]func(*model){
		"filesystems": func(m *model) { m.setFilesystems(map[string]Filesystem{"n1": fs, "n2": tmpfs}) },
		"longhorn": func(m *model) {
			m.setLonghorn(map[string]LonghornNode{"n1": {Name: "n1", Ready: &yes, Disks: map[string]LonghornDisk{
				"d1": {Path: "/var/lib/longhorn", StorageMaximum: &max5, StorageAvailable: &max5},
				"d2": {Path: "/mnt/new"},
			}}})
		},
		"class": func(m *model) {
			m.setClass(ClassCapacity{Name: "c", Provisioner: NoProvisioner,
				CSI:       &CSICapacity{CapacityBytes: 5, Segments: []Segment{{Selector: &sel, MatchLabels: map[string]string{"zone": "a"}, Nodes: []string{"n1"}, CapacityBytes: 5, Objects: 1}, {Nodes: []string{}}}},
				Available: &VolumeStats{Count: 1, TotalBytes: 5, LargestBytes: 5}, AvailableByNode: map[string]VolumeStats{"n1": {Count: 1, TotalBytes: 5, LargestBytes: 5}},
			})
		},
		"class without capacity": func(m *model) { m.setClass(ClassCapacity{Name: "c", Provisioner: "x"}) },
	} {
		t.Run(name, func(t *testing.T) {
			m := model{
				ID: types.StringValue("x"), NodePath: types.StringNull(), StorageClass: types.StringNull(),
				Backend: types.ObjectNull(backendAttrTypes(t, resp)),
				Nodes:   types.ListNull(types.StringType), Summary: types.StringValue("s"), Provisioner: types.StringNull(),
			}
			m.Timeouts.Object = types.ObjectNull(map[string]attr.Type{"read": types.StringType})
			fill(&m)
			state := tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}
			if diags := state.Set(ctx, &m); diags.HasError() {
				t.Fatal(diags)
			}
			var back model
			if diags := state.Get(ctx, &back); diags.HasError() {
				t.Fatal(diags)
			}
			if name == "filesystems" {
				if got := back.Filesystems["n2"]; got.BlockDevices == nil || got.Disks == nil || got.Rotational != nil {
					t.Errorf("tmpfs: block_devices and disks must be empty lists and rotational null: %+v", got)
				}
				if back.Totals.MinAvailableNode != "n2" || back.Totals.AvailableBytes != 85 || back.Totals.ScheduledBytes != nil {
					t.Errorf("totals %+v", back.Totals)
				}
			}
			if name == "class without capacity" && (back.CapacitySources == nil || len(back.CapacitySources) != 0 || back.CSIStorageCapacity != nil || back.AvailableVolumes != nil) {
				t.Errorf("no capacity: sources %v, csi %v, available %v", back.CapacitySources, back.CSIStorageCapacity, back.AvailableVolumes)
			}
		})
	}
}

func TestRequest(t *testing.T) {
	ctx := context.Background()
	backendTypes := backendAttrTypes(t, testSchema(t))
	backend := func(typ, ns, base string) types.Object {
		b := types.StringNull()
		if base != "" {
			b = types.StringValue(base)
		}
		return types.ObjectValueMust(backendTypes, map[string]attr.Value{"type": types.StringValue(typ), "namespace": types.StringValue(ns), "base_path": b})
	}
	nodes := types.ListValueMust(types.StringType, []attr.Value{types.StringValue("n1")})
	base := func() model {
		return model{NodePath: types.StringNull(), StorageClass: types.StringNull(), Backend: types.ObjectNull(backendTypes), Nodes: types.ListNull(types.StringType)}
	}
	cases := []struct {
		name  string
		set   func(*model)
		want  string // error text; "" for none
		check func(request) bool
	}{
		{"none", func(*model) {}, "Set exactly one of node_path, storage_class and backend (set: none)", nil},
		{"two", func(m *model) { m.NodePath, m.StorageClass = types.StringValue("/x"), types.StringValue("c") }, "(set: node_path, storage_class)", nil},
		{"node_path", func(m *model) { m.NodePath = types.StringValue("/x") }, "", func(r request) bool { return r.Kind == targetNodePath && r.Nodes == nil && r.ID() == "node_path:/x" }},
		{"node_path with nodes", func(m *model) { m.NodePath, m.Nodes = types.StringValue("/x"), nodes }, "", func(r request) bool { return len(r.Nodes) == 1 && r.Nodes[0] == "n1" }},
		{"class with nodes", func(m *model) { m.StorageClass, m.Nodes = types.StringValue("c"), nodes }, "nodes applies to node_path and backend only", nil},
		{"longhorn", func(m *model) { m.Backend = backend(catalog.BackendLonghorn, "longhorn-system", "") }, "", func(r request) bool {
			return r.Kind == targetBackend && r.Backend.Type == catalog.BackendLonghorn && r.ID() == "backend:longhorn/longhorn-system"
		}},
		{"longhorn base_path", func(m *model) { m.Backend = backend(catalog.BackendLonghorn, "lh", "/x") }, "base_path names the OpenEBS hostpath directory", nil},
		{"openebs base_path", func(m *model) { m.Backend = backend(catalog.BackendOpenEBS, "openebs", "/srv") }, "", func(r request) bool { return r.Backend.BasePath == "/srv" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := base()
			c.set(&m)
			r, diags := m.request(ctx)
			var msgs []string
			for _, d := range diags.Errors() {
				msgs = append(msgs, d.Detail())
			}
			got := strings.Join(msgs, "\n")
			switch {
			case c.want == "" && got != "":
				t.Fatalf("unexpected error: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Fatalf("error %q, want %q", got, c.want)
			case c.check != nil && !c.check(r):
				t.Errorf("request %+v", r)
			}
		})
	}
}

// TestCheckPath: checkPath is only about absolute paths; characters are validate.NodePath's
// (its own tests), checked first.
func TestCheckPath(t *testing.T) {
	for p, ok := range map[string]bool{"/": true, "/var/lib/rancher/k3s": true, "/with space": true, "rel": false, "": false} {
		if err := checkPath(p); (err == nil) != ok {
			t.Errorf("checkPath(%q) = %v", p, err)
		}
	}
}

func TestIEC(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 8 << 20: "8.0 MiB", 78293622784: "72.9 GiB"} {
		if got := IEC(n); got != want {
			t.Errorf("IEC(%d) = %s, want %s", n, got, want)
		}
	}
}
