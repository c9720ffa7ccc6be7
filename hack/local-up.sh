#!/usr/bin/env bash
# local-up.sh runs a Tugboat control plane (and, as root with containerd,
# a node) as processes on this machine, with state under .tugboat/.
#   hack/local-up.sh up     start (idempotent), wait until healthy
#   hack/local-up.sh down   stop what `up` started (by PID) and keep data
#   hack/local-up.sh status
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
state=$top/.tugboat
bin=$top/bin
api=${TUGBOAT_LISTEN:-127.0.0.1:6443}
kube=${TUGBOAT_KUBE_LISTEN:-127.0.0.1:6444}

start() { # name args...
  local name=$1; shift
  local pidf=$state/$name.pid
  if [[ -f $pidf ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
    echo "$name already running (pid $(cat "$pidf"))"; return
  fi
  [[ -x $bin/$name ]] || { echo "skip $name: $bin/$name not built"; return; }
  "$bin/$name" "$@" >"$state/logs/$name.log" 2>&1 &
  echo $! >"$pidf"
  echo "started $name (pid $!, log .tugboat/logs/$name.log)"
}

wait_http() { # name url
  for _ in $(seq 1 100); do
    curl -fsS "$2" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "$1 did not become healthy at $2; last log lines:" >&2
  tail -n 20 "$state/logs/$1.log" >&2 || true
  return 1
}

creds() { # certificate pair name -> client flags
  echo --ca-file "$pki/ca.crt" --cert-file "$pki/$1.crt" --key-file "$pki/$1.key"
}

up() {
  mkdir -p "$state/logs" "$state/etcd"
  command -v curl >/dev/null || { echo "curl missing: run hack/install-deps.sh" >&2; exit 1; }
  node=$(hostname | tr '[:upper:]_' '[:lower:]-')
  pki=$state/pki
  if [[ ! -f $pki/ca.crt ]]; then
    "$bin/apiserver" pki init --dir "$pki" --nodes "$node" >/dev/null
    echo "made the cluster CA and certificates in .tugboat/pki"
  fi
  start apiserver --listen "$api" --kube-listen "$kube" --metrics-listen 127.0.0.1:9443 --data-dir "$state/etcd" --pki-dir "$pki"
  wait_http apiserver http://127.0.0.1:9443/healthz
  start scheduler --server "$api" $(creds scheduler) --metrics-listen 127.0.0.1:10259
  start controller-manager --server "$api" $(creds controller-manager) --metrics-listen 127.0.0.1:10257
  if [[ $(id -u) == 0 && -x $bin/kubelet ]]; then
    start kubelet --server "$api" $(creds "node-$node") --node-name "$node" --root-dir "$state/kubelet" --metrics-listen 127.0.0.1:10248
  fi
  if [[ $(id -u) == 0 && -x $bin/proxy ]]; then
    start proxy --server "$api" $(creds proxy) --node-name "$node" --metrics-listen 127.0.0.1:10249
  fi
  mkdir -p "$HOME/.tugboat"
  cat >"$HOME/.tugboat/config" <<CFG
server: $api
caFile: $pki/ca.crt
certFile: $pki/admin.crt
keyFile: $pki/admin.key
CFG
  # shellcheck source=lib/kubeconfig.sh
  . "$(dirname "$0")/lib/kubeconfig.sh"
  write_kubeconfig "$HOME/.tugboat/kubeconfig" "$kube" "$pki/ca.crt" "$pki/admin.crt" "$pki/admin.key" "# Written by hack/local-up.sh (make local-up)."
  echo "cluster up (TLS, RBAC on; you are admin): $bin/tugctl get nodes — config in ~/.tugboat/config"
  offer_kube_config "$HOME/.tugboat/kubeconfig"
}

down() {
  for pidf in "$state"/*.pid; do
    [[ -f $pidf ]] || continue
    pid=$(cat "$pidf")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      echo "stopped $(basename "$pidf" .pid) (pid $pid)"
    fi
    rm -f "$pidf"
  done
}

status() {
  for pidf in "$state"/*.pid; do
    [[ -f $pidf ]] || continue
    pid=$(cat "$pidf")
    if kill -0 "$pid" 2>/dev/null; then s=running; else s=dead; fi
    echo "$(basename "$pidf" .pid) $pid $s"
  done
}

case ${1:-up} in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
