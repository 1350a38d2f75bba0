package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

// credentialAttributes are shared by the ssh block, its bastion and each nodes entry.
func credentialAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"port": schema.Int64Attribute{Optional: true, MarkdownDescription: "SSH port (default: `22`).",
			Validators: []validator.Int64{int64validator.Between(1, 65535)}},
		"user":                   schema.StringAttribute{Optional: true, MarkdownDescription: "Login user (default: `root`). A non-root user needs `sudo = true` and passwordless sudo."},
		"private_key":            schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: "Private key in PEM or OpenSSH format, e.g. `file(\"~/.ssh/id_ed25519\")`."},
		"private_key_path":       schema.StringAttribute{Optional: true, MarkdownDescription: "Path to a private key file on the machine running Terraform."},
		"private_key_passphrase": schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: "Passphrase of an encrypted private key."},
		"agent":                  schema.BoolAttribute{Optional: true, MarkdownDescription: "Authenticate with the ssh-agent at `SSH_AUTH_SOCK` (default: `false`)."},
		"password":               schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: "Login password."},
		"known_hosts_path":       schema.StringAttribute{Optional: true, MarkdownDescription: "known_hosts file the host key is verified against (default: `~/.ssh/known_hosts`)."},
		"host_key": schema.StringAttribute{Optional: true, MarkdownDescription: "The host's public key in authorized_keys format (`ssh-ed25519 AAAA...`), " +
			"pinned instead of reading known_hosts."},
		"insecure_ignore_host_key": schema.BoolAttribute{Optional: true, MarkdownDescription: "Accept any host key (default: `false`). Only for throw-away machines: " +
			"it lets anyone on the network path impersonate the node."},
	}
}

func sshBlock() schema.SingleNestedBlock {
	attrs := credentialAttributes()
	attrs["sudo"] = schema.BoolAttribute{Optional: true, MarkdownDescription: "Run commands through `sudo -n` (default: `false`). Needs passwordless sudo."}
	attrs["connect_timeout"] = schema.StringAttribute{Optional: true, MarkdownDescription: "Time allowed to connect and log in, e.g. `30s` (default: `30s`)."}
	attrs["command_timeout"] = schema.StringAttribute{Optional: true, MarkdownDescription: "Time allowed for each command, e.g. `10m`. By default a command may run as long as its operation's timeout allows, " +
		"and `" + node.DefaultCommandTimeout.String() + "` where the operation has none (a refresh during `terraform plan`), so a hung mount on a node fails the plan instead of hanging it. " +
		"Long steps (copies, benchmarks) have their own limits."}
	bastion := credentialAttributes()
	bastion["host"] = schema.StringAttribute{Optional: true, MarkdownDescription: "Address of the jump host."}
	return schema.SingleNestedBlock{
		MarkdownDescription: "How to reach nodes over SSH (for `clusterstorage_local_pv` directories, node-path benchmarks " +
			"and k3s data directory moves). A node's address is its InternalIP (then Hostname) unless `nodes` says " +
			"otherwise. One connection per host is shared by every resource of an apply.",
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"bastion": schema.SingleNestedBlock{
				MarkdownDescription: "A jump host every node connection goes through.",
				Attributes:          bastion,
			},
		},
	}
}

func nodesAttribute() schema.MapNestedAttribute {
	attrs := credentialAttributes()
	attrs["host"] = schema.StringAttribute{Optional: true, MarkdownDescription: "Address to reach this node at, instead of its InternalIP."}
	attrs["sudo"] = schema.BoolAttribute{Optional: true, MarkdownDescription: "Overrides `ssh.sudo` for this node."}
	return schema.MapNestedAttribute{
		Optional: true,
		MarkdownDescription: "Per-node SSH settings, keyed by Kubernetes node name. Set credentials here replace the " +
			"`ssh` block's credentials for that node as a whole; other settings are inherited.",
		NestedObject: schema.NestedAttributeObject{Attributes: attrs},
	}
}

type credentialsModel struct {
	Port                  types.Int64  `tfsdk:"port"`
	User                  types.String `tfsdk:"user"`
	PrivateKey            types.String `tfsdk:"private_key"`
	PrivateKeyPath        types.String `tfsdk:"private_key_path"`
	PrivateKeyPassphrase  types.String `tfsdk:"private_key_passphrase"`
	Agent                 types.Bool   `tfsdk:"agent"`
	Password              types.String `tfsdk:"password"`
	KnownHostsPath        types.String `tfsdk:"known_hosts_path"`
	HostKey               types.String `tfsdk:"host_key"`
	InsecureIgnoreHostKey types.Bool   `tfsdk:"insecure_ignore_host_key"`
}

type sshModel struct {
	credentialsModel
	SudoBool       types.Bool   `tfsdk:"sudo"`
	ConnectTimeout types.String `tfsdk:"connect_timeout"`
	CommandTimeout types.String `tfsdk:"command_timeout"`
	Bastion        *hostModel   `tfsdk:"bastion"`
}

type hostModel struct {
	credentialsModel
	Host types.String `tfsdk:"host"`
}

type nodeModel struct {
	credentialsModel
	Host types.String `tfsdk:"host"`
	Sudo types.Bool   `tfsdk:"sudo"`
}

func (c credentialsModel) auth() node.Auth {
	return node.Auth{
		PrivateKey:     c.PrivateKey.ValueString(),
		PrivateKeyFile: c.PrivateKeyPath.ValueString(),
		Passphrase:     c.PrivateKeyPassphrase.ValueString(),
		Agent:          c.Agent.ValueBool(),
		Password:       c.Password.ValueString(),
	}
}

func (c credentialsModel) hostKey() node.HostKeyPolicy {
	return node.HostKeyPolicy{
		KnownHostsFile:        c.KnownHostsPath.ValueString(),
		PinnedKeys:            c.HostKey.ValueString(),
		InsecureIgnoreHostKey: c.InsecureIgnoreHostKey.ValueBool(),
	}
}

func (c credentialsModel) endpoint(host string) node.Endpoint {
	return node.Endpoint{Host: host, Port: int(c.Port.ValueInt64()), User: c.User.ValueString(), Auth: c.auth(), HostKey: c.hostKey()}
}

// nodeAccess builds the SSH defaults and per-node overrides; unknown names the attributes not
// known yet, with which no node is reached. Nothing connects here.
func (m providerModel) nodeAccess(unknown []string, diags *diag.Diagnostics) *providerdata.NodeAccess {
	access := &providerdata.NodeAccess{
		Pool: node.NewPool(node.PoolOptions{Logger: func(ctx context.Context, msg string, fields map[string]any) {
			tflog.Debug(ctx, msg, fields)
		}}),
		Overrides: map[string]node.Override{},
		Unknown:   unknown,
	}
	if s := m.SSH; s != nil {
		access.Configured = true
		access.Defaults = node.Target{
			Endpoint:       s.endpoint(""),
			Sudo:           s.SudoBool.ValueBool(),
			ConnectTimeout: duration(s.ConnectTimeout, path.Root("ssh").AtName("connect_timeout"), diags),
			CommandTimeout: duration(s.CommandTimeout, path.Root("ssh").AtName("command_timeout"), diags),
		}
		if b := s.Bastion; b != nil && !b.Host.IsNull() {
			e := b.endpoint(b.Host.ValueString())
			access.Defaults.Bastion = &e
		}
	}
	for name, n := range m.Nodes {
		access.Configured = true
		o := node.Override{Host: n.Host.ValueString(), Port: int(n.Port.ValueInt64()), User: n.User.ValueString()}
		if a := n.auth(); !a.IsZero() {
			o.Auth = &a
		}
		if hk := n.hostKey(); hk != (node.HostKeyPolicy{}) {
			o.HostKey = &hk
		}
		if !n.Sudo.IsNull() {
			sudo := n.Sudo.ValueBool()
			o.Sudo = &sudo
		}
		access.Overrides[name] = o
	}
	return access
}

func duration(v types.String, p path.Path, diags *diag.Diagnostics) time.Duration {
	if v.IsNull() || v.IsUnknown() {
		return 0
	}
	d, err := time.ParseDuration(v.ValueString())
	if err != nil || d < 0 {
		diags.AddAttributeError(p, "Invalid duration", "Expected a duration such as `30s` or `10m`, got "+v.String()+".")
	}
	return d
}
