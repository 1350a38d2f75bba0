// Command kube is a hyperkube-style multi-call binary holding the Kubernetes
// components that tools/kube/cluster.sh runs: kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet and kubectl.
//
// The component is chosen from the name the binary was called by (a symlink
// such as bin/kubectl -> kube) or, failing that, from the first argument
// ("kube kubelet --config=..."). Linking everything once keeps a cold build to
// one long link instead of five.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	_ "time/tzdata" // CronJob time zones, as the upstream apiserver and controller-manager mains do.

	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins.
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream.
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream.
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream.
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// components maps a component name to a function that runs it and returns
// the process exit code.
var components = map[string]func() int{
	"kube-apiserver":          func() int { return cli.Run(apiserver.NewAPIServerCommand()) },
	"kube-controller-manager": func() int { return cli.Run(controllermanager.NewControllerManagerCommand()) },
	"kube-scheduler":          func() int { return cli.Run(scheduler.NewSchedulerCommand()) },
	"kubelet":                 func() int { return cli.Run(kubelet.NewKubeletCommand(context.Background())) },
	"kubectl":                 runKubectl,
}

// runKubectl mirrors k8s.io/kubernetes/cmd/kubectl: verbosity is set before
// the command is built so that plugin and kuberc handling can log.
func runKubectl() int {
	logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) //nolint:errcheck // as upstream
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err) // prints the error and exits non-zero
	}
	return 0
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := components[name]; !ok && len(os.Args) > 1 {
		if _, ok := components[os.Args[1]]; ok {
			// Drop our own name so that the component sees the argv it
			// expects: cobra and kubectl's plugin handling read os.Args.
			name = os.Args[1]
			os.Args = append([]string{name}, os.Args[2:]...)
		}
	}
	run, ok := components[name]
	if !ok {
		names := make([]string, 0, len(components))
		for n := range components {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: kube COMPONENT [flags...] (or call through a symlink named COMPONENT)\ncomponents: %v\n", names)
		os.Exit(2)
	}
	os.Exit(run())
}
