#!/usr/bin/env bash
# ha-up.sh runs a highly available control plane as processes on this
# machine, on loopback: a 3-member etcd (Debian's etcd; client-certificate
# TLS for clients and peer TLS between members, from `apiserver pki
# init`), two apiservers on it (one shared --encryption-key-file), two
# schedulers and two controller-managers (leader election: one of each
# acts), every client given both apiservers' addresses. It is the set-up
# e2e/ha tests, to try faults by hand: kill one member, one apiserver or
# the leading scheduler (`hack/ha-up.sh status` prints the PIDs) and watch
# the others carry on.
#   hack/ha-up.sh up       start, wait until both apiservers answer, print
#                          the tugctl settings
#   hack/ha-up.sh status   each process: PID, running or not
#   hack/ha-up.sh down     stop what `up` started (by the PIDs it recorded)
#                          and remove the state directory
#
# Settings (environment): TUGBOAT_HA_STATE (/tmp/tugboat-ha), TUGBOAT_BIN
# (bin: apiserver, scheduler, controller-manager, tugctl; `make build`),
# TUGBOAT_HA_PORT (16000: etcd clients on PORT+1..3, peers PORT+11..13,
# apiservers' gRPC on PORT+443 and PORT+453, their Kubernetes API on +444
# and +454, metrics from PORT+500).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
state=${TUGBOAT_HA_STATE:-/tmp/tugboat-ha}
bin=${TUGBOAT_BIN:-$top/bin}
base=${TUGBOAT_HA_PORT:-16000}
pki=$state/pki
members=3 apiservers=2

say() { echo "ha-up: $*"; }
die() { echo "ha-up: $*" >&2; exit 1; }

etcd_url() { echo "https://127.0.0.1:$((base + 1 + $1))"; }
peer_url() { echo "https://127.0.0.1:$((base + 11 + $1))"; }
api_addr() { echo "127.0.0.1:$((base + 443 + 10 * $1))"; }
servers() {
  local s=() i
  for ((i = 0; i < apiservers; i++)); do s+=("$(api_addr $i)"); done
  local IFS=,
  echo "${s[*]}"
}

# start NAME BINARY ARGS...: runs it in the background, PID in
# $state/pids/NAME, output in $state/logs/NAME.log.
start() {
  local name=$1
  shift
  if [[ -f $state/pids/$name ]] && kill -0 "$(cat "$state/pids/$name")" 2>/dev/null; then
    say "$name already runs (pid $(cat "$state/pids/$name"))"
    return
  fi
  nohup "$@" >>"$state/logs/$name.log" 2>&1 &
  echo $! >"$state/pids/$name"
  say "started $name (pid $!)"
}

up() {
  command -v etcd >/dev/null || die "no etcd binary: hack/install-deps.sh installs Debian's etcd-server"
  for b in apiserver scheduler controller-manager tugctl; do
    [[ -x $bin/$b ]] || die "no $bin/$b: make build (or set TUGBOAT_BIN)"
  done
  mkdir -p "$state/pids" "$state/logs"
  if [[ ! -f $pki/ca.crt ]]; then
    "$bin/apiserver" pki init --dir "$pki" --server-ips 127.0.0.1 >/dev/null
    say "made the certificates in $pki"
  fi
  if [[ ! -f $pki/encryption.key ]]; then
    (umask 077 && echo "key1:$(head -c 32 /dev/urandom | base64 -w0)" >"$pki/encryption.key")
  fi
  local initial=() i
  for ((i = 0; i < members; i++)); do initial+=("etcd$i=$(peer_url $i)"); done
  local cluster
  cluster=$(IFS=,; echo "${initial[*]}")
  local etcd_state=new
  [[ -d $state/etcd0 ]] && etcd_state=existing
  for ((i = 0; i < members; i++)); do
    start "etcd$i" etcd --name "etcd$i" --data-dir "$state/etcd$i" \
      --listen-client-urls "$(etcd_url $i)" --advertise-client-urls "$(etcd_url $i)" \
      --cert-file "$pki/etcd/server.crt" --key-file "$pki/etcd/server.key" \
      --trusted-ca-file "$pki/etcd/ca.crt" --client-cert-auth \
      --listen-peer-urls "$(peer_url $i)" --initial-advertise-peer-urls "$(peer_url $i)" \
      --peer-cert-file "$pki/etcd/peer.crt" --peer-key-file "$pki/etcd/peer.key" \
      --peer-trusted-ca-file "$pki/etcd/ca.crt" --peer-client-cert-auth \
      --initial-cluster "$cluster" --initial-cluster-state "$etcd_state" \
      --initial-cluster-token tugboat-ha --log-level warn
  done
  local endpoints=()
  for ((i = 0; i < members; i++)); do endpoints+=("$(etcd_url $i)"); done
  endpoints=$(IFS=,; echo "${endpoints[*]}")
  for ((i = 0; i < apiservers; i++)); do
    start "apiserver$i" "$bin/apiserver" --listen "$(api_addr $i)" \
      --kube-listen "127.0.0.1:$((base + 444 + 10 * i))" --metrics-listen "127.0.0.1:$((base + 500 + i))" \
      --pki-dir "$pki" --etcd-servers "$endpoints" --encryption-key-file "$pki/encryption.key"
  done
  local s
  s=$(servers)
  for ((i = 0; i < 2; i++)); do
    start "scheduler$i" "$bin/scheduler" --server "$s" --ca-file "$pki/ca.crt" \
      --cert-file "$pki/scheduler.crt" --key-file "$pki/scheduler.key" --metrics-listen "127.0.0.1:$((base + 510 + i))"
    start "controller-manager$i" "$bin/controller-manager" --server "$s" --ca-file "$pki/ca.crt" \
      --cert-file "$pki/controller-manager.crt" --key-file "$pki/controller-manager.key" --metrics-listen "127.0.0.1:$((base + 520 + i))"
  done
  for ((i = 0; i < apiservers; i++)); do
    local ok=0 try
    for try in $(seq 1 60); do
      if "$bin/tugctl" --server "$(api_addr $i)" --ca-file "$pki/ca.crt" --cert-file "$pki/admin.crt" \
        --key-file "$pki/admin.key" get namespaces >/dev/null 2>&1; then
        ok=1
        break
      fi
      sleep 1
    done
    ((ok)) || die "apiserver$i at $(api_addr $i) does not answer; see $state/logs/apiserver$i.log"
  done
  say "up: both apiservers answer. Use it with:"
  echo "  export TUGBOAT_SERVER=$s"
  echo "  alias tugctl='$bin/tugctl --ca-file $pki/ca.crt --cert-file $pki/admin.crt --key-file $pki/admin.key'"
}

status() {
  local f
  for f in "$state"/pids/*; do
    [[ -e $f ]] || { say "nothing started in $state"; return; }
    local pid
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      echo "$(basename "$f") pid $pid running"
    else
      echo "$(basename "$f") pid $pid not running"
    fi
  done
}

down() {
  local f
  for f in "$state"/pids/*; do
    [[ -e $f ]] || continue
    local pid
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      say "stopped $(basename "$f") (pid $pid)"
    fi
  done
  rm -rf "$state"
  say "removed $state"
}

case ${1:-} in
  up) up ;;
  status) status ;;
  down) down ;;
  *) die "usage: hack/ha-up.sh up|status|down" ;;
esac
