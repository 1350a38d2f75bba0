# shellcheck shell=sh
# A cache of the linked tool binaries (terraform, tofu, the cluster's kube, etcd, ...) shared by
# every checkout of the project on this machine, so that a fresh clone (CI's) copies them instead
# of linking each again: the Go build cache keeps compiled packages, not linked executables, and
# linking these takes 5-30 s each on 2 cores. Sourced by tools/build-tool.sh, tools/kube/cluster.sh
# and tools/kube/metrics.sh (POSIX sh).
#
# An entry is NAME/KEY, KEY a hash of everything the build depends on (bincache_key). Only the
# newest entry of a NAME is kept. CLUSTERSTORAGE_BIN_CACHE moves the cache; "off" disables it.

BINCACHE=${CLUSTERSTORAGE_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/clusterstorage/bin}

# bincache_key ARG...: prints the cache key of a build: the Go toolchain and its environment, and
# each ARG: file:PATH stands for that file's contents, anything else for itself.
bincache_key() {
	{
		go version
		go env GOOS GOARCH CGO_ENABLED GOFLAGS GOAMD64 GOEXPERIMENT
		for arg in "$@"; do
			case $arg in
			file:*) sha256sum <"${arg#file:}" ;;
			*) printf '%s\n' "$arg" ;;
			esac
		done
	} | sha256sum | cut -d' ' -f1
}

# bincache_get NAME KEY OUT: copies NAME built for KEY to OUT; fails when the cache has none.
bincache_get() {
	[ "$BINCACHE" != off ] && [ -x "$BINCACHE/$1/$2" ] || return 1
	cp "$BINCACHE/$1/$2" "$3.cache.$$" && mv -f "$3.cache.$$" "$3"
}

# bincache_put NAME KEY FILE: keeps a copy of FILE as NAME built for KEY, dropping NAME's older
# entries. A cache that cannot be written is only a slower next build.
bincache_put() {
	[ "$BINCACHE" != off ] || return 0
	mkdir -p "$BINCACHE/$1" 2>/dev/null || return 0
	for old in "$BINCACHE/$1"/*; do
		[ "$old" = "$BINCACHE/$1/$2" ] || rm -f "$old"
	done
	if ! cp "$3" "$BINCACHE/$1/.$2.$$" 2>/dev/null || ! mv -f "$BINCACHE/$1/.$2.$$" "$BINCACHE/$1/$2"; then
		rm -f "$BINCACHE/$1/.$2.$$"
	fi
	return 0
}
