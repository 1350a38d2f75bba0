// Command terraform-provider-clusterstorage serves the clusterstorage Terraform provider.
package main

import (
	"flag"
	"log"
	"os"
	runtimedebug "runtime/debug"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/protoserver"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/provider"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()
	if !debug {
		for _, name := range unreadLogs(os.Getenv) {
			if err := os.Setenv(name, "off"); err != nil {
				log.Fatal(err)
			}
		}
	}

	if os.Getenv("GOGC") == "" {
		runtimedebug.SetGCPercent(gcPercent)
	}
	var profiler *heapProfiler
	if dir := os.Getenv(heapProfileEnv); dir != "" {
		p, err := startHeapProfiler(dir)
		if err != nil {
			log.Fatal(err)
		}
		profiler = p
	}
	// As providerserver.Serve serves it, but through protoserver: the framework keeps every
	// request's context, and what each request logged, until the provider stops.
	var opts []tf6server.ServeOpt
	if debug {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	err := tf6server.Serve("registry.terraform.io/clusterstorage/clusterstorage",
		protoserver.Wrap(func() tfprotov6.ProviderServer { return providerserver.NewProtocol6(provider.New(version)())() }), opts...)
	// Terraform has every answer once it stops the provider: the marks of this run's creates go.
	importmark.Flush(1500 * time.Millisecond)
	if profiler != nil {
		profiler.Stop()
	}
	if err != nil {
		log.Fatal(err)
	}
}

// gcPercent is the garbage collector's target (GOGC), unless the user sets GOGC: the heap may grow
// by this percentage of what is live before a collection. A provider's live heap is small and its
// work short, so collecting more often costs little time and keeps its peak memory down.
const gcPercent = 50

// logLevels are the variables that set the provider's log levels: its own (tflog) and the SDK's
// (terraform-plugin-go, its protocol subsystem, terraform-plugin-framework). Unset, each means
// TRACE: the provider formats every line, and the CLI decides what to keep.
var logLevels = []string{"TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"}

// unreadLogs returns the log-level variables to set to "off" because nobody reads those logs:
// Terraform and OpenTofu keep a provider's logs only when TF_LOG or TF_LOG_PROVIDER is set (the
// provider runs with the CLI's environment), and otherwise drop them. Formatting them for nothing
// took a third of the provider's CPU time in a plan of 200 resources. A level the user set is
// kept. (A provider started with -debug writes its logs itself, so it is left alone.)
func unreadLogs(getenv func(string) string) []string {
	if getenv("TF_LOG") != "" || getenv("TF_LOG_PROVIDER") != "" {
		return nil
	}
	var off []string
	for _, name := range logLevels {
		if getenv(name) == "" {
			off = append(off, name)
		}
	}
	return off
}
