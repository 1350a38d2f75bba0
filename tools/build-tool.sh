#!/bin/sh
# Build one pinned developer tool into $ROOT/bin/NAME.
#
#   tools/build-tool.sh terraform|terraform1.5|tofu|tfplugindocs|golangci-lint|helm|helm3
#
# Every tool lives in its own Go module under tools/NAME (go.mod pins the
# version with a `tool` directive), so none of their dependencies leak into the
# provider's go.mod. The binary is rebuilt only when it is missing or older
# than tools/NAME/go.mod, go.sum or a file under tools/NAME/stubs (terraform's
# stand-ins for the modules its module zip leaves out: tools/terraform/README.md);
# FORCE=1 rebuilds anyway.
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
	# terraform: 1.15.9, which runs the whole suite; its module zip leaves out the nested modules
	# of its state backends, so tools/terraform replaces them with stubs (tools/terraform/README.md).
	# terraform1.5: the oldest supported (1.5.7), a plain Go module, which runs a smoke subset.
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

cd "$moddir"
# The files the build depends on besides the module cache: go.mod, go.sum and the stubs (relative
# to $moddir, in a fixed order; none has a space in its name).
inputs="go.mod go.sum"
if [ -d stubs ]; then
	inputs="$inputs $(find stubs -type f | LC_ALL=C sort | tr '\n' ' ')"
fi

fresh=false
if [ "${FORCE:-}" != 1 ] && [ -x "$out" ]; then
	fresh=true
	for f in $inputs; do
		# shellcheck disable=SC3013 # -nt is not POSIX, but every sh this runs under has it (dash, bash, busybox)
		[ "$out" -nt "$f" ] || fresh=false
	done
fi
$fresh && exit 0

# The tools modules are standalone: never let a go.work above them take over.
export GOWORK=off
version=$("$GO" list -m -f '{{.Version}}' "$mod")

# Stamp versions the way the release builds do (otherwise tfplugindocs says
# "dev", tofu "1.12.6-dev" and golangci-lint has no date).
case $name in
terraform)
	# 1.15 reads its version from a file and marks it -dev unless told; -s -w: no symbol table or
	# DWARF (74 MB instead of 105; nobody debugs it).
	ldflags="-s -w -X github.com/hashicorp/terraform/version.dev=no"
	;;
terraform1.5)
	# 1.5's version is a constant: the linker ignores a -X of a variable the program does not have
	# (kept so that the build, and its bincache key, stay as they were).
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
# shellcheck disable=SC2046 # $inputs splits on purpose (no spaces in the names)
key=$(bincache_key "$name" "$pkg" "$ldflags" $(for f in $inputs; do
	case $f in
	go.mod | go.sum) echo "file:$f" ;; # as before the stubs, so that other tools' keys stay the same
	*) printf '%s\nfile:%s\n' "$f" "$f" ;;
	esac
done))
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
