package k3smigration

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
)

type model struct {
	ID               types.String   `tfsdk:"id"`
	Node             types.String   `tfsdk:"node"`
	Source           types.String   `tfsdk:"source"`
	Target           types.String   `tfsdk:"target"`
	Service          types.String   `tfsdk:"service"`
	SwitchMethod     types.String   `tfsdk:"switch_method"`
	ConfigFile       types.String   `tfsdk:"config_file"`
	KeepBackup       types.Bool     `tfsdk:"keep_backup"`
	Drain            types.Bool     `tfsdk:"drain"`
	FreeSpaceMargin  types.String   `tfsdk:"free_space_margin"`
	RestoreOnDestroy types.Bool     `tfsdk:"restore_on_destroy"`
	MeasureWrite     types.Bool     `tfsdk:"measure_write_speed"`
	CarryMounts      types.Bool     `tfsdk:"carry_mounts"`
	SourceWriteBps   types.Float64  `tfsdk:"source_write_bytes_per_second"`
	TargetWriteBps   types.Float64  `tfsdk:"target_write_bytes_per_second"`
	BackupPath       types.String   `tfsdk:"backup_path"`
	BytesCopied      types.Int64    `tfsdk:"bytes_copied"`
	FilesCopied      types.Int64    `tfsdk:"files_copied"`
	DowntimeSeconds  types.Float64  `tfsdk:"downtime_seconds"`
	MigratedAt       types.String   `tfsdk:"migrated_at"`
	SourceFilesystem types.String   `tfsdk:"source_filesystem"`
	TargetFilesystem types.String   `tfsdk:"target_filesystem"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
}

// attrError is a value of the model that cannot be used: which attribute, and why.
type attrError struct {
	attr string
	err  error
}

func (e *attrError) Error() string { return e.attr + ": " + e.err.Error() }
func (e *attrError) Unwrap() error { return e.err }

// spec turns the model into the machinery's Spec; an error is an *attrError.
func (m model) spec() (Spec, error) {
	margin, err := k8sresource.ParseQuantity(m.FreeSpaceMargin.ValueString())
	if err != nil {
		return Spec{}, &attrError{attr: "free_space_margin", err: fmt.Errorf("%q is not a quantity such as `1Gi`: %w", m.FreeSpaceMargin.ValueString(), err)}
	}
	s := Spec{
		Source:       m.Source.ValueString(),
		Target:       m.Target.ValueString(),
		Service:      m.Service.ValueString(),
		Method:       Method(m.SwitchMethod.ValueString()),
		ConfigFile:   m.ConfigFile.ValueString(),
		KeepBackup:   m.KeepBackup.ValueBool(),
		MeasureWrite: m.MeasureWrite.ValueBool(),
		MarginBytes:  margin.Value(),
		CarryMounts:  m.CarryMounts.ValueBool(),
	}
	if err := CheckPath("config_file", s.ConfigFile); err != nil {
		return Spec{}, &attrError{attr: "config_file", err: err}
	}
	if err := CheckPaths(s.Source, s.Target); err != nil {
		attr := "target"
		if CheckPath("source", s.Source) != nil {
			attr = "source"
		}
		return Spec{}, &attrError{attr: attr, err: err}
	}
	return s, nil
}

// observed writes what a finished migration saw into the model.
func (m *model) observed(res Result) {
	m.ID = types.StringValue(m.Node.ValueString() + ":" + m.Source.ValueString())
	m.Service = types.StringValue(res.Service)
	m.BackupPath = types.StringValue(res.BackupPath)
	m.BytesCopied = types.Int64Value(res.BytesCopied)
	m.FilesCopied = types.Int64Value(res.FilesCopied)
	m.DowntimeSeconds = types.Float64Value(float64(res.Downtime.Milliseconds()) / 1000)
	m.MigratedAt = types.StringValue(res.Finished.UTC().Format(time.RFC3339))
	m.SourceFilesystem = types.StringValue(res.SourceFS.String())
	m.TargetFilesystem = types.StringValue(res.TargetFS.String())
	m.SourceWriteBps, m.TargetWriteBps = types.Float64Null(), types.Float64Null()
	if res.SourceWriteBps > 0 || res.TargetWriteBps > 0 {
		m.SourceWriteBps, m.TargetWriteBps = types.Float64Value(res.SourceWriteBps), types.Float64Value(res.TargetWriteBps)
	}
}

// identityModel is the migration's resource identity (Terraform 1.12+, OpenTofu 1.12+): the node
// and the data directory moved, which the `id` names, and where to and how, which an import needs
// too. A migration keeps all four for its life: changing any replaces it.
type identityModel struct {
	Node         types.String `tfsdk:"node"`
	Source       types.String `tfsdk:"source"`
	Target       types.String `tfsdk:"target"`
	SwitchMethod types.String `tfsdk:"switch_method"`
}

// identity is the model's identity.
func (m model) identity() identityModel {
	return identityModel{Node: m.Node, Source: m.Source, Target: m.Target, SwitchMethod: m.SwitchMethod}
}

// parseImportID reads "<node>,<source>,<target>[,<switch_method>]".
func parseImportID(id string) (nodeName, source, target string, method Method, err error) {
	parts := strings.Split(id, ",")
	if len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return "", "", "", "", fmt.Errorf("import ID %q must be <node>,<source>,<target> or <node>,<source>,<target>,<switch_method>", id)
	}
	m := ""
	if len(parts) == 4 {
		m = parts[3]
	}
	if method, err = checkImport(parts[1], parts[2], m); err != nil {
		return "", "", "", "", fmt.Errorf("import ID %q: %w", id, err)
	}
	return parts[0], parts[1], parts[2], method, nil
}

// parseImportIdentity reads an import block's identity; source and switch_method may be left
// out (their defaults).
func parseImportIdentity(ident identityModel) (nodeName, source, target string, method Method, err error) {
	source = ident.Source.ValueString()
	if ident.Source.IsNull() {
		source = DefaultSource
	}
	if ident.Node.ValueString() == "" {
		return "", "", "", "", fmt.Errorf("the import block's identity needs node")
	}
	if method, err = checkImport(source, ident.Target.ValueString(), ident.SwitchMethod.ValueString()); err != nil {
		return "", "", "", "", fmt.Errorf("the import block's identity: %w", err)
	}
	return ident.Node.ValueString(), source, ident.Target.ValueString(), method, nil
}

// checkImport checks an import's paths and switch method ("" for the default, symlink).
func checkImport(source, target, m string) (Method, error) {
	method := MethodSymlink
	if m != "" {
		method = Method(m)
		switch method {
		case MethodSymlink, MethodConfig, MethodBindMount:
		default:
			return "", fmt.Errorf("switch_method must be symlink, config or bind_mount")
		}
	}
	if err := CheckPaths(source, target); err != nil {
		return "", err
	}
	return method, nil
}
