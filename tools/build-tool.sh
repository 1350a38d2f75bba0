#!/bin/sh
# Build one pinned developer tool into $ROOT/bin/NAME.
#
#   tools/build-tool.sh terraform|terraform1.5|tofu|tfplugindocs|golangci-lint|helm|helm3
#
# Every tool lives in its own Go module under tools/NAME (go.mod pins the
# version with a `tool` directive), so none of their dependencies leak into the
# provider's go.mod. The binary is rebuilt only when it is missing or older
# than tools/NAME/go.mod or go.sum (FORCE=1 rebuilds anyway).
#
# Always `go build -trimpath`: the provider is built with -trimpath too, and
# mixing the flag would make the two builds miss each other's Go build cache.
set -eu

usage() {
	echo "usage: $0 terraform|terraform1.5|tofu|tfplugindocs|golangci-lint|helm|helm3" >&2
	exit 2
}
[ $# -eq 1 ] || usage
name=$1

tools_dir=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(dirname "$tools_dir")}
GO=${GO:-go}

# pkg: main package; mod: module whose version is pinned; cold: rough cold
# build time on 2 cores (warm Go build cache: 1-20 s).
case $name in
terraform | terraform1.5)
	# terraform: the newest release that builds as a plain Go module (1.8.5; later ones need their
	# source changed), which runs the whole suite. terraform1.5: the oldest supported (1.5.7), which
	# runs a smoke subset.
	mod=github.com/hashicorp/terraform
	pkg=$mod
	cold="~5 min"
	;;
tofu)
	mod=github.com/opentofu/opentofu
	pkg=$mod/cmd/tofu
	cold="~10 min"
	;;
tfplugindocs)
	mod=github.com/hashicorp/terraform-plugin-docs
	pkg=$mod/cmd/tfplugindocs
	cold="~1 min"
	;;
golangci-lint)
	mod=github.com/golangci/golangci-lint/v2
	pkg=$mod/cmd/golangci-lint
	cold="~4 min"
	;;
helm)
	# The helm CLI at the Helm 4 version the provider links (scripts/bench-backend.sh compares with it).
	mod=helm.sh/helm/v4
	pkg=$mod/cmd/helm
	cold="~4 min"
	;;
helm3)
	# The last Helm 3 CLI: tests make releases with it as users of Helm 3 did, and the benchmark compares with it.
	mod=helm.sh/helm/v3
	pkg=$mod/cmd/helm
	cold="~4 min"
	;;
*) usage ;;
esac

moddir=$tools_dir/$name
out=$ROOT/bin/$name

# shellcheck disable=SC3013 # -nt is not POSIX, but every sh this runs under has it (dash, bash, busybox)
if [ "${FORCE:-}" != 1 ] && [ -x "$out" ] &&
	[ "$out" -nt "$moddir/go.mod" ] && [ "$out" -nt "$moddir/go.sum" ]; then
	exit 0
fi

cd "$moddir"
# The tools modules are standalone: never let a go.work above them take over.
export GOWORK=off
version=$("$GO" list -m -f '{{.Version}}' "$mod")

# Stamp versions the way the release builds do (otherwise tfplugindocs says
# "dev", tofu "1.12.6-dev" and golangci-lint has no date).
case $name in
terraform | terraform1.5)
	# 1.8 reads its version from a file and marks it -dev unless told (1.5's is a constant; the
	# linker ignores a -X of a variable the program does not have).
	ldflags="-X github.com/hashicorp/terraform/version.dev=no"
	;;
tofu)
	ldflags="-X github.com/opentofu/opentofu/version.dev=no"
	;;
tfplugindocs)
	ldflags="-X $mod/cmd/tfplugindocs/build.version=${version#v}"
	;;
helm | helm3)
	ldflags="-X $mod/internal/version.version=$version"
	;;
golangci-lint)
	date=$("$GO" list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' "$mod")
	ldflags="-X main.version=${version#v} -X main.commit=$version -X main.date=${date:-unknown}"
	;;
esac

mkdir -p "$ROOT/bin"
# The same build linked by another checkout on this machine (tools/bincache.sh).
# shellcheck source=tools/bincache.sh
. "$tools_dir/bincache.sh"
key=$(bincache_key "$name" "$pkg" "$ldflags" file:go.mod file:go.sum)
if bincache_get "$name" "$key" "$out"; then
	touch "$out"
	echo "$name $version: the build linked earlier on this machine ($BINCACHE)" >&2
	exit 0
fi
echo "building $name $version (cold: $cold)..." >&2
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT
trap 'rm -f "$tmp"; exit 130' INT TERM
start=$(date +%s)
# -buildvcs=false: the binary must not depend on this repository's git state.
"$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp" "$pkg"
mv -f "$tmp" "$out"
touch "$out"
bincache_put "$name" "$key" "$out"
echo "built $out in $(($(date +%s) - start))s" >&2
