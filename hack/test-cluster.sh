#!/usr/bin/env bash
# test-cluster.sh runs the e2e test cluster (package e2e/cluster) by hand:
# N nodes as network namespaces on one bridge, each with its own kubelet,
# a containerd of its own with the CRI plugin (crictl shows its pods; with
# TUGBOAT_E2E_RUNTIME=containerd the native backend, one shared containerd),
# the real apiserver (TLS, its own PKI), and the scheduler and controller-manager — all removed again by `down`.
#
# Usage (as root, with hack/install-deps.sh done):
#   hack/test-cluster.sh up [N]   start N nodes (default 2) in the background;
#                                 prints how to reach it, writes
#                                 .tugboat/test-cluster/config for tugctl
#   hack/test-cluster.sh down     stop it and remove everything it made
#                                 (also what a killed run left behind)
#   hack/test-cluster.sh status   is it running?
set -euo pipefail
cd "$(dirname "$0")/.."
state=${TEST_CLUSTER_STATE:-$PWD/.tugboat/test-cluster}
pidf=$state/testcluster.pid

die() { echo "test-cluster: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, containerd, CNI)"

running() { [[ -f $pidf ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; }

build() {
  mkdir -p "$state"
  go build -o "$state/testcluster" ./hack/testcluster
}

up() {
  local n=${1:-2}
  running && die "already running (pid $(cat "$pidf")); hack/test-cluster.sh down first"
  build
  "$state/testcluster" cleanup >/dev/null
  rm -f "$state/ready"
  setsid nohup "$state/testcluster" up -nodes "$n" -state "$state" >"$state/testcluster.log" 2>&1 &
  echo $! >"$pidf"
  for _ in $(seq 1 600); do
    [[ -f $state/ready ]] && { cat "$state/ready"; return 0; }
    running || { tail -n 30 "$state/testcluster.log" >&2; die "failed to start (log: $state/testcluster.log)"; }
    sleep 0.5
  done
  die "not ready after 5 minutes (log: $state/testcluster.log)"
}

down() {
  if running; then
    local pid; pid=$(cat "$pidf")
    kill -TERM "$pid"
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped the test cluster (pid $pid)"
  fi
  rm -f "$pidf"
  [[ -x $state/testcluster ]] || build
  "$state/testcluster" cleanup
}

status() {
  if running; then echo "running (pid $(cat "$pidf"))"; cat "$state/ready" 2>/dev/null || echo "starting"; else echo "not running"; fi
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down ;;
  status) status ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
