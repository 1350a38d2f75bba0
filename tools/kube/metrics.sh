#!/usr/bin/env bash
# The real metrics API (metrics.k8s.io) for a running local cluster: metrics-server
# v0.8.0 (built from tools/metrics-server) as a host process on 127.0.0.1, behind
# the API server's aggregation layer.
#
#   tools/kube/metrics.sh up   STATE_DIR KUBECONFIG   build, start, register; wait until served
#   tools/kube/metrics.sh down STATE_DIR KUBECONFIG   unregister and stop
#   tools/kube/metrics.sh status STATE_DIR KUBECONFIG
#
# e.g. tools/kube/metrics.sh up .cluster/metrics-server .cluster/kubeconfig
#
# STATE_DIR is metrics-server's own directory (made if missing): certificates, pidfile,
# log. KUBECONFIG is an admin kubeconfig of the cluster; its CA (which signed the
# kubelets' serving certificates, as tools/kube/cluster.sh does) verifies the kubelets.
# Nothing leaves 127.0.0.0/8.
#
# How the API server reaches it: an ExternalName Service kube-system/metrics-server
# pointing at `localhost` (there is no kube-proxy or pod network, so a ClusterIP
# would lead nowhere; the aggregator dials an ExternalName service's name and the
# APIService's port), and the APIService v1beta1.metrics.k8s.io with the CA of a
# serving certificate made here for metrics-server.kube-system.svc (the name the
# aggregator checks).
#
# Who may read it: the API server authorizes every request (RBAC on
# pods.metrics.k8s.io) before it proxies it. metrics-server then authenticates the
# proxied request by the front-proxy client certificate the API server presents and
# the user it names in X-Remote-User, and asks the API server (SubjectAccessReview)
# again. That needs the API server started with the front-proxy flags
# (--requestheader-client-ca-file, --requestheader-allowed-names,
# --requestheader-username-headers, --requestheader-group-headers,
# --requestheader-extra-headers-prefix, --proxy-client-cert-file,
# --proxy-client-key-file). When the cluster's kube-system/extension-apiserver-
# authentication ConfigMap shows the API server runs without them, the proxied
# requests arrive without a client certificate, as system:anonymous: then a
# ClusterRole that may only get/list pods and nodes of metrics.k8s.io is bound to
# system:anonymous, so metrics-server's own check passes. Requests through the API
# server are still authorized there for the real user first, but anonymous clients
# of this cluster (and local processes talking to 127.0.0.1:$METRICS_PORT) can then
# read pod and node metrics, nothing else. The log says so; `down` removes the binding.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${CLUSTER_BIN:-$ROOT/bin}
METRICS_PORT=${METRICS_PORT:-10352}
MODULE=$ROOT/tools/metrics-server
# shellcheck source=tools/bincache.sh
source "$ROOT/tools/bincache.sh"

usage() {
	echo "usage: $0 up|down|status STATE_DIR KUBECONFIG" >&2
	exit 2
}
[[ $# -eq 3 ]] || usage
cmd=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
KUBECONFIG_PATH=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
PIDFILE=$DIR/metrics-server.pid

log() { echo "metrics.sh: $*" >&2; }
kubectl() { "$BIN/kube" kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"; }

running() { [[ -s $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

# build: bin/metrics-server from the tools module, when missing or older than its go.mod/go.sum.
build() {
	if [[ -x $BIN/metrics-server && $BIN/metrics-server -nt $MODULE/go.mod && $BIN/metrics-server -nt $MODULE/go.sum ]]; then
		return 0
	fi
	mkdir -p "$BIN"
	# The same build linked by another checkout on this machine (tools/bincache.sh).
	local key
	key=$(cd "$MODULE" && bincache_key metrics-server "-s -w" file:go.mod file:go.sum)
	if bincache_get metrics-server "$key" "$BIN/metrics-server"; then
		log "metrics-server: the build linked earlier on this machine ($BINCACHE)"
		return 0
	fi
	log "building metrics-server v0.8.0 (cold: minutes; warm Go cache: seconds)"
	(cd "$MODULE" && go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$BIN/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server)
	bincache_put metrics-server "$key" "$BIN/metrics-server"
}

# certs: a CA of its own and a serving certificate for the name the aggregator checks.
certs() {
	[[ -f $DIR/serving.crt ]] && return 0
	openssl ecparam -name prime256v1 -genkey -noout -out "$DIR/ca.key" 2>/dev/null
	printf '[req]\ndistinguished_name=dn\n[dn]\n[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' >"$DIR/ca.cnf"
	openssl req -x509 -new -key "$DIR/ca.key" -subj "/CN=clusterstorage-metrics-server-ca" -days 3650 -sha256 \
		-config "$DIR/ca.cnf" -extensions ca -out "$DIR/ca.crt" 2>/dev/null
	openssl ecparam -name prime256v1 -genkey -noout -out "$DIR/serving.key" 2>/dev/null
	openssl req -new -key "$DIR/serving.key" -subj "/CN=metrics-server.kube-system.svc" -out "$DIR/serving.csr" 2>/dev/null
	printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:metrics-server.kube-system.svc,DNS:localhost,IP:127.0.0.1\n' >"$DIR/serving.ext"
	openssl x509 -req -in "$DIR/serving.csr" -CA "$DIR/ca.crt" -CAkey "$DIR/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
		-days 3650 -sha256 -extfile "$DIR/serving.ext" -out "$DIR/serving.crt" 2>/dev/null
	rm -f "$DIR/ca.cnf" "$DIR/serving.csr" "$DIR/serving.ext"
}

# front_proxy: true when the API server presents front-proxy client certificates.
front_proxy() {
	[[ -n $(kubectl -n kube-system get configmap extension-apiserver-authentication \
		-o 'jsonpath={.data.requestheader-client-ca-file}' 2>/dev/null) ]]
}

# anonymous_metrics_reader lets system:anonymous read metrics.k8s.io, and nothing else.
anonymous_metrics_reader() {
	kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: clusterstorage:metrics-reader-anonymous
  labels: {app.kubernetes.io/name: metrics-server, app.kubernetes.io/managed-by: clusterstorage-metrics-sh}
rules:
  - apiGroups: [metrics.k8s.io]
    resources: [pods, nodes]
    verbs: [get, list]
  - nonResourceURLs: [/apis/metrics.k8s.io, /apis/metrics.k8s.io/*]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: clusterstorage:metrics-reader-anonymous
  labels: {app.kubernetes.io/name: metrics-server, app.kubernetes.io/managed-by: clusterstorage-metrics-sh}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "clusterstorage:metrics-reader-anonymous"}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:anonymous"}
EOF
}

register() {
	local ca
	ca=$(base64 -w0 "$DIR/ca.crt")
	kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {app.kubernetes.io/name: metrics-server, app.kubernetes.io/managed-by: clusterstorage-metrics-sh}
spec:
  type: ExternalName
  externalName: localhost
  ports:
    - {name: https, port: $METRICS_PORT, protocol: TCP}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
  labels: {app.kubernetes.io/name: metrics-server, app.kubernetes.io/managed-by: clusterstorage-metrics-sh}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  caBundle: $ca
  service: {name: metrics-server, namespace: kube-system, port: $METRICS_PORT}
EOF
}

up() {
	chmod 700 "$DIR"
	build
	certs
	kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$DIR/cluster-ca.crt"
	if ! running; then
		if front_proxy; then
			log "the API server presents front-proxy certificates: metrics-server authenticates and authorizes every request"
		else
			log "WARNING: the API server runs without --requestheader-client-ca-file/--proxy-client-cert-file:" \
				"proxied requests arrive as system:anonymous, which is allowed to read metrics.k8s.io (only that)"
			anonymous_metrics_reader
		fi
		log "starting metrics-server on 127.0.0.1:$METRICS_PORT"
		# shellcheck disable=SC2016 # $$, $0 and $@ are for the inner bash
		setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" "$BIN/metrics-server" \
			--bind-address=127.0.0.1 \
			--secure-port="$METRICS_PORT" \
			--tls-cert-file="$DIR/serving.crt" \
			--tls-private-key-file="$DIR/serving.key" \
			--cert-dir="$DIR" \
			--kubeconfig="$KUBECONFIG_PATH" \
			--authentication-kubeconfig="$KUBECONFIG_PATH" \
			--authorization-kubeconfig="$KUBECONFIG_PATH" \
			--kubelet-preferred-address-types=InternalIP \
			--kubelet-use-node-status-port \
			--kubelet-certificate-authority="$DIR/cluster-ca.crt" \
			--metric-resolution=15s \
			--kubelet-request-timeout=5s \
			>>"$DIR/metrics-server.log" 2>&1 </dev/null 9<&- &
	fi
	register
	local deadline=$((SECONDS + 120))
	until kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes >/dev/null 2>&1 &&
		[[ $(kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes 2>/dev/null) == *'"usage"'* ]]; do
		if ! running; then
			log "metrics-server exited; its log:"
			grep -v "missing content for CA bundle" "$DIR/metrics-server.log" | tail -20 >&2
			down
			exit 1
		fi
		if ((SECONDS > deadline)); then
			log "the metrics API was not served within 120 s; metrics-server's log:"
			grep -v "missing content for CA bundle" "$DIR/metrics-server.log" | tail -20 >&2
			down
			exit 1
		fi
		sleep 1
	done
	log "metrics.k8s.io served (node metrics available)"
}

down() {
	# Unregister first: an APIService whose server is gone breaks discovery for every client.
	kubectl delete apiservice v1beta1.metrics.k8s.io --ignore-not-found >/dev/null 2>&1 || true
	kubectl -n kube-system delete service metrics-server --ignore-not-found >/dev/null 2>&1 || true
	kubectl delete clusterrolebinding,clusterrole clusterstorage:metrics-reader-anonymous --ignore-not-found >/dev/null 2>&1 || true
	if running; then
		local pid
		pid=$(cat "$PIDFILE")
		log "stopping metrics-server (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 15))
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$PIDFILE"
}

case $cmd in
up) up ;;
down) down ;;
status)
	if running; then echo "metrics-server running (pid $(cat "$PIDFILE")) on 127.0.0.1:$METRICS_PORT"; else echo "metrics-server not running"; fi
	kubectl get apiservice v1beta1.metrics.k8s.io 2>/dev/null || true
	;;
*) usage ;;
esac
