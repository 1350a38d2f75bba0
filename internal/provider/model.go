package provider

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

type providerModel struct {
	Kubernetes *kubernetesModel     `tfsdk:"kubernetes"`
	SSH        *sshModel            `tfsdk:"ssh"`
	Nodes      map[string]nodeModel `tfsdk:"nodes"`
}

type kubernetesModel struct {
	ConfigPath            types.String `tfsdk:"config_path"`
	ConfigPaths           types.List   `tfsdk:"config_paths"`
	ConfigContext         types.String `tfsdk:"config_context"`
	ConfigContextCluster  types.String `tfsdk:"config_context_cluster"`
	ConfigContextAuthInfo types.String `tfsdk:"config_context_auth_info"`
	Host                  types.String `tfsdk:"host"`
	Username              types.String `tfsdk:"username"`
	Password              types.String `tfsdk:"password"`
	Token                 types.String `tfsdk:"token"`
	ClusterCACertificate  types.String `tfsdk:"cluster_ca_certificate"`
	ClientCertificate     types.String `tfsdk:"client_certificate"`
	ClientKey             types.String `tfsdk:"client_key"`
	Insecure              types.Bool   `tfsdk:"insecure"`
	TLSServerName         types.String `tfsdk:"tls_server_name"`
	ProxyURL              types.String `tfsdk:"proxy_url"`
	Exec                  *execModel   `tfsdk:"exec"`
}

type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

// kubeClients turns the kubernetes block (and the KUBE_* environment variables for whatever the
// block leaves unset) into the shared, lazily connecting clients. Attributes unknown at plan
// time produce deferred clients instead of an error.
func (m providerModel) kubeClients(ctx context.Context, diags *diag.Diagnostics) *kube.Clients {
	k := m.Kubernetes
	if k == nil {
		k = &kubernetesModel{}
	}
	r := reader{diags: diags}
	cfg := kube.Config{
		ConfigPath:            r.str(k.ConfigPath, "config_path", "KUBE_CONFIG_PATH"),
		ConfigContext:         r.str(k.ConfigContext, "config_context", "KUBE_CTX"),
		ConfigContextCluster:  r.str(k.ConfigContextCluster, "config_context_cluster", "KUBE_CTX_CLUSTER"),
		ConfigContextAuthInfo: r.str(k.ConfigContextAuthInfo, "config_context_auth_info", "KUBE_CTX_AUTH_INFO"),
		Host:                  r.str(k.Host, "host", "KUBE_HOST"),
		Username:              r.str(k.Username, "username", "KUBE_USER"),
		Password:              r.str(k.Password, "password", "KUBE_PASSWORD"),
		Token:                 r.str(k.Token, "token", "KUBE_TOKEN"),
		ClusterCACertificate:  r.str(k.ClusterCACertificate, "cluster_ca_certificate", "KUBE_CLUSTER_CA_CERT_DATA"),
		ClientCertificate:     r.str(k.ClientCertificate, "client_certificate", "KUBE_CLIENT_CERT_DATA"),
		ClientKey:             r.str(k.ClientKey, "client_key", "KUBE_CLIENT_KEY_DATA"),
		Insecure:              r.boolean(k.Insecure, "insecure", "KUBE_INSECURE"),
		TLSServerName:         r.str(k.TLSServerName, "tls_server_name", "KUBE_TLS_SERVER_NAME"),
		ProxyURL:              r.str(k.ProxyURL, "proxy_url", "KUBE_PROXY_URL"),
		ConfigPaths:           r.list(ctx, k.ConfigPaths, "config_paths", "KUBE_CONFIG_PATHS"),
	}
	if e := k.Exec; e != nil {
		cfg.Exec = &kube.ExecConfig{
			APIVersion: r.str(e.APIVersion, "exec.api_version", ""),
			Command:    r.str(e.Command, "exec.command", ""),
			Args:       r.list(ctx, e.Args, "exec.args", ""),
			Env:        r.stringMap(ctx, e.Env, "exec.env"),
		}
		if cfg.Exec.Command == "" && !e.Command.IsUnknown() {
			diags.AddAttributeError(path.Root("kubernetes").AtName("exec").AtName("command"),
				"Missing exec command", "The kubernetes.exec block needs a command that prints an ExecCredential.")
		}
	}
	if len(r.unknown) > 0 {
		return kube.NewDeferredClients(r.unknown)
	}
	return kube.NewClients(cfg)
}

// reader reads optional attributes, falling back to environment variables, and remembers which
// attributes were unknown.
type reader struct {
	diags   *diag.Diagnostics
	unknown []string
}

func (r *reader) str(v types.String, name, env string) string {
	switch {
	case v.IsUnknown():
		r.unknown = append(r.unknown, "kubernetes."+name)
		return ""
	case !v.IsNull():
		return v.ValueString()
	case env != "":
		return os.Getenv(env)
	}
	return ""
}

func (r *reader) boolean(v types.Bool, name, env string) bool {
	switch {
	case v.IsUnknown():
		r.unknown = append(r.unknown, "kubernetes."+name)
		return false
	case !v.IsNull():
		return v.ValueBool()
	}
	raw := os.Getenv(env)
	if raw == "" {
		return false
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		r.diags.AddError("Invalid "+env, env+" must be true or false, got "+strconv.Quote(raw)+".")
	}
	return b
}

func (r *reader) list(ctx context.Context, v types.List, name, env string) []string {
	switch {
	case v.IsUnknown():
		r.unknown = append(r.unknown, "kubernetes."+name)
		return nil
	case !v.IsNull():
		var out []string
		for _, e := range v.Elements() {
			if !e.IsUnknown() {
				continue
			}
			r.unknown = append(r.unknown, "kubernetes."+name)
			return nil
		}
		r.diags.Append(v.ElementsAs(ctx, &out, false)...)
		return out
	case env != "" && os.Getenv(env) != "":
		return filepath.SplitList(os.Getenv(env))
	}
	return nil
}

func (r *reader) stringMap(ctx context.Context, v types.Map, name string) map[string]string {
	if v.IsUnknown() || anyUnknown(v.Elements()) {
		r.unknown = append(r.unknown, "kubernetes."+name)
		return nil
	}
	out := map[string]string{}
	if !v.IsNull() {
		r.diags.Append(v.ElementsAs(ctx, &out, false)...)
	}
	return out
}

func anyUnknown(values map[string]attr.Value) bool {
	for _, v := range values {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}
