package k3smigration

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// KubeHooks are the resource's Kubernetes hooks for a node, for tests outside the package.
func KubeHooks(client kubernetes.Interface, nodeName string, drain bool) Hooks {
	k := &kubeHooks{client: client, node: nodeName}
	return k.hooks(drain)
}

// ScriptNames lists the node-side scripts by name, for tests outside the package.
func ScriptNames() []string {
	out := make([]string, len(allScripts))
	for i, s := range allScripts {
		out[i] = string(s)
	}
	return out
}

// RunScript runs the named node-side script, for tests outside the package.
func RunScript(ctx context.Context, host *node.Host, name string, args ...string) (*node.Result, error) {
	return runScript(ctx, host, script(name), args...)
}

// HoldersScript is a node program that prints what the migration's stop looks at for the
// directories given as its arguments (lib.sh's holders), for OtherHolders.
func HoldersScript() string {
	lib, err := scriptFiles.ReadFile("scripts/lib.sh")
	if err != nil {
		panic(err) // embedded: TestScripts finds it
	}
	return string(lib) + "holders \"$@\"\n"
}

// OtherHolders reads HoldersScript's output as the migration's stop does and describes the
// processes other than containerd shims (and their children) that use the directories: "" when
// none does, which is when the stop may go on.
func OtherHolders(out []byte) string {
	return parseProcesses(out).others().describe()
}
