//go:build tools

// This file keeps dependencies that packages under construction use in go.mod while they are
// being written in parallel; it is removed once every one is imported by real code.
package main

import (
	_ "github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	_ "github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	_ "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	_ "github.com/hashicorp/terraform-plugin-testing/knownvalue"
	_ "github.com/hashicorp/terraform-plugin-testing/plancheck"
	_ "github.com/hashicorp/terraform-plugin-testing/statecheck"
	_ "golang.org/x/crypto/ssh"
	_ "golang.org/x/crypto/ssh/agent"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "helm.sh/helm/v3/pkg/action"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/cli"
	_ "helm.sh/helm/v3/pkg/getter"
	_ "helm.sh/helm/v3/pkg/kube"
	_ "helm.sh/helm/v3/pkg/registry"
	_ "helm.sh/helm/v3/pkg/release"
	_ "helm.sh/helm/v3/pkg/repo"
	_ "helm.sh/helm/v3/pkg/storage/driver"
	_ "helm.sh/helm/v3/pkg/strvals"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/cli-runtime/pkg/genericclioptions"
	_ "k8s.io/client-go/discovery/cached/memory"
	_ "k8s.io/client-go/dynamic"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/restmapper"
	_ "sigs.k8s.io/yaml"
)
