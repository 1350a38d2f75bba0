package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func providerSchema() schema.Schema {
	return schema.Schema{
		MarkdownDescription: "Declares, provisions and measures persistent storage on your own Kubernetes " +
			"clusters (k3s, kubeadm): storage backends through Helm, local PersistentVolumes, StorageClasses, " +
			"k3s data directory moves and fio benchmarks.",
		Attributes: map[string]schema.Attribute{
			"nodes": nodesAttribute(),
		},
		Blocks: map[string]schema.Block{
			"kubernetes": kubernetesBlock(),
			"ssh":        sshBlock(),
		},
	}
}

// kubernetesBlock mirrors the connection settings of the hashicorp/kubernetes and hashicorp/helm
// providers, with the same names and environment variables.
func kubernetesBlock() schema.SingleNestedBlock {
	str := func(desc string, sensitive bool) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Sensitive: sensitive, MarkdownDescription: desc}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "How to reach the cluster's API server. The names and environment variables are those " +
			"of the `hashicorp/kubernetes` and `hashicorp/helm` providers. Without `config_path`, `config_paths` " +
			"or `host` (or their environment variables) the provider has no cluster; `~/.kube/config` is not " +
			"read implicitly. Values unknown at plan time (a cluster created in the same apply) are fine: the " +
			"client is built when first needed.",
		Attributes: map[string]schema.Attribute{
			"config_path": str("Path to a kubeconfig file. Environment variable: `KUBE_CONFIG_PATH`.", false),
			"config_paths": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Paths to kubeconfig files, merged in order. Environment variable: " +
					"`KUBE_CONFIG_PATHS` (separated by `:`; `;` on Windows).",
			},
			"config_context":           str("Context to use from the kubeconfig. Environment variable: `KUBE_CTX`.", false),
			"config_context_cluster":   str("Cluster to use, overriding the context's. Environment variable: `KUBE_CTX_CLUSTER`.", false),
			"config_context_auth_info": str("User to use, overriding the context's. Environment variable: `KUBE_CTX_AUTH_INFO`.", false),
			"host":                     str("API server address, e.g. `https://10.0.0.1:6443`. Environment variable: `KUBE_HOST`.", false),
			"username":                 str("Username for basic authentication. Environment variable: `KUBE_USER`.", false),
			"password":                 str("Password for basic authentication. Environment variable: `KUBE_PASSWORD`.", true),
			"token":                    str("Bearer token. Environment variable: `KUBE_TOKEN`.", true),
			"cluster_ca_certificate":   str("PEM-encoded root certificate(s) of the API server. Environment variable: `KUBE_CLUSTER_CA_CERT_DATA`.", false),
			"client_certificate":       str("PEM-encoded client certificate. Environment variable: `KUBE_CLIENT_CERT_DATA`.", false),
			"client_key":               str("PEM-encoded client key. Environment variable: `KUBE_CLIENT_KEY_DATA`.", true),
			"insecure": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verification of the API server's certificate (default: `false`). Environment variable: `KUBE_INSECURE`.",
			},
			"tls_server_name": str("Server name to verify the API server's certificate against. Environment variable: `KUBE_TLS_SERVER_NAME`.", false),
			"proxy_url":       str("URL of the proxy to reach the API server through. Environment variable: `KUBE_PROXY_URL`.", false),
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "Obtain credentials by running a command (an exec credential plugin such as " +
					"`aws eks get-token`), as in a kubeconfig's `exec` section.",
				Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{Optional: true, MarkdownDescription: "API version of the ExecCredential, e.g. `client.authentication.k8s.io/v1`."},
					"command":     schema.StringAttribute{Optional: true, MarkdownDescription: "Command to run."},
					"args":        schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments of the command."},
					"env":         schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Environment variables set for the command."},
				},
			},
		},
	}
}
