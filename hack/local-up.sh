#!/usr/bin/env bash
# local-up.sh runs a Tugboat control plane (and, as root, a node) as
# processes on this machine, with state under .tugboat/.
#   hack/local-up.sh up     start (idempotent), wait until healthy
#   hack/local-up.sh down   stop what `up` started (by PID) and remove what
#                           it put on the host: pods, their network
#                           namespaces, mounts and cgroups, the CNI config,
#                           bridge and nftables tables, routes, the cluster
#                           DNS address, the containerd it started, the
#                           tugctl config and kubeconfigs it wrote. Data
#                           stays in .tugboat/ (etcd, certificates, logs,
#                           images).
#   hack/local-up.sh status
#
# The kubelet drives its runtime over CRI (--runtime cri): a containerd
# of its own in .tugboat/containerd (as k3s does), configured for it (CRI
# on, Tugboat's pause image as the sandbox image, the CNI folders below),
# unless TUGBOAT_CONTAINERD_SOCKET names a CRI runtime that answers (then
# configure it yourself: its CNI conf dir must be .tugboat/cni/net.d and
# the pause image imported). The pause image (hack/mkimage pause) goes into
# the kubelet's import folder. `crictl --config .tugboat/crictl.yaml pods`
# shows the node's pods. TUGBOAT_RUNTIME=containerd picks the native
# backend: the containerd at TUGBOAT_CONTAINERD_SOCKET
# (/run/containerd/containerd.sock) if one answers, else its own. The CNI
# config goes to .tugboat/cni/net.d, never /etc/cni.
#
# Settings (environment): TUGBOAT_STATE (.tugboat), TUGBOAT_BIN (bin),
# TUGBOAT_LISTEN (127.0.0.1:6443), TUGBOAT_KUBE_LISTEN (127.0.0.1:6444, the
# Kubernetes API for kubectl), TUGBOAT_NODE_NAME (the host name),
# TUGBOAT_NODE_IP (default: the kubelet's choice), TUGBOAT_RUNTIME (cri or
# containerd), TUGBOAT_CONTAINERD_SOCKET,
# TUGBOAT_CONTAINERD_NAMESPACE (tugboat), TUGBOAT_CGROUP_ROOT (/tugboat),
# TUGBOAT_CONFIG (~/.tugboat/config, the admin's tugctl config).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
state=${TUGBOAT_STATE:-$top/.tugboat}
bin=${TUGBOAT_BIN:-$top/bin}
api=${TUGBOAT_LISTEN:-127.0.0.1:6443}
kube=${TUGBOAT_KUBE_LISTEN:-127.0.0.1:6444}
tugctl_config=${TUGBOAT_CONFIG:-$HOME/.tugboat/config}
pki=$state/pki
config_mark="# Written by hack/local-up.sh"
kube_mark="# Written by hack/local-up.sh (make local-up)."
# The components, in start order; down stops them in reverse.
components=(apiserver scheduler controller-manager kubelet proxy)

start() { # name args...
  local name=$1; shift
  local pidf=$state/$name.pid
  if [[ -f $pidf ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
    echo "$name already running (pid $(cat "$pidf"))"; return
  fi
  [[ -x $bin/$name ]] || { echo "skip $name: $bin/$name not built"; return; }
  "$bin/$name" "$@" >"$state/logs/$name.log" 2>&1 &
  echo $! >"$pidf"
  echo "started $name (pid $!, log $state/logs/$name.log)"
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

# node_flags writes the kubelet's and the proxy's host-facing flags to
# $state/<component>.flags, one per line: up starts them with these, and
# down's --cleanup uses the same, whatever the environment says then.
node_flags() {
  local node=$1 ip=${TUGBOAT_NODE_IP:-}
  {
    printf '%s\n' --node-name "$node" --root-dir "$state/kubelet" --runtime "$runtime"
    if [[ $runtime == cri ]]; then
      # Nothing answers at the own containerd's socket before the kubelet
      # starts it (nor after, where a long path puts it under /run).
      printf '%s\n' --container-runtime-endpoint "unix://$(cri_socket)"
    else
      printf '%s\n' --containerd-socket "${TUGBOAT_CONTAINERD_SOCKET:-/run/containerd/containerd.sock}" \
        --containerd-namespace "${TUGBOAT_CONTAINERD_NAMESPACE:-tugboat}"
    fi
    printf '%s\n' --containerd-dir "$state/containerd" \
      --cgroup-root "${TUGBOAT_CGROUP_ROOT:-/tugboat}" \
      --cni-conf-dir "$state/cni/net.d" --cluster-cidr 10.244.0.0/16
    [[ -n $ip ]] && printf '%s\n' --node-ip "$ip"
  } >"$state/kubelet.flags"
  {
    printf '%s\n' --node-name "$node"
    [[ -n $ip ]] && printf '%s\n' --node-ip "$ip"
  } >"$state/proxy.flags"
}

runtime=${TUGBOAT_RUNTIME:-cri}

# cri_socket: the CRI runtime's socket — TUGBOAT_CONTAINERD_SOCKET's, else
# the kubelet's own containerd's (<state>/containerd/containerd.sock while
# that fits a unix socket path; else the kubelet puts it under /run and
# logs it).
cri_socket() { echo "${TUGBOAT_CONTAINERD_SOCKET:-$state/containerd/containerd.sock}"; }

# sandbox_image: under CRI, the pause image into the kubelet's import
# folder (the runtime's config names it; it is never pulled): bin/images's
# (make images), else built with hack/mkimage.
sandbox_image() {
  local dir=$state/kubelet/images
  [[ $runtime == cri && ! -f $dir/pause.tar ]] || return 0
  mkdir -p "$dir"
  if [[ -f $bin/images/pause.tar ]]; then
    cp "$bin/images/pause.tar" "$dir/.pause.tar.tmp"
  elif command -v go >/dev/null; then
    go run ./hack/mkimage -o "$dir/.pause.tar.tmp" pause >/dev/null
  else
    echo "the CRI runtime needs the pause image: make images (bin/images/pause.tar), or put one in $dir" >&2
    exit 1
  fi
  mv -f "$dir/.pause.tar.tmp" "$dir/pause.tar"
  echo "put the sandbox (pause) image into $dir"
}

# crictl_config: crictl's config for the node's runtime (crictl --config).
crictl_config() {
  [[ $runtime == cri ]] || return 0
  local sock
  sock=$(cri_socket)
  ((${#sock} <= 100)) || return 0
  printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 10\n' "$sock" "$sock" >"$state/crictl.yaml"
}

read_flags() { # component -> the array flags
  flags=()
  [[ -f $state/$1.flags ]] && mapfile -t flags <"$state/$1.flags"
  return 0
}

# preflight says, before anything starts, what the node lacks and how to
# get it.
preflight() {
  command -v curl >/dev/null || { echo "curl missing: run hack/install-deps.sh" >&2; exit 1; }
  [[ $(id -u) == 0 ]] || return 0
  local sock=${TUGBOAT_CONTAINERD_SOCKET:-/run/containerd/containerd.sock} missing=()
  [[ $runtime == cri ]] && sock=$(cri_socket)
  if [[ ! -S $sock ]]; then
    for b in containerd containerd-shim-runc-v2 runc; do command -v "$b" >/dev/null || missing+=("$b"); done
  fi
  [[ -x /usr/lib/cni/bridge || -x /opt/cni/bin/bridge ]] || missing+=("CNI plugins")
  command -v iptables >/dev/null || missing+=(iptables)
  if ((${#missing[@]})); then
    echo "the node needs ${missing[*]} (no containerd answers at $sock, and the kubelet starts its own only if the binaries are here):" >&2
    echo "  sudo apt-get install containerd runc containernetworking-plugins iptables   (or: sudo hack/install-deps.sh)" >&2
    echo "or run local-up as a normal user for the control plane alone." >&2
    exit 1
  fi
}

up() {
  preflight
  mkdir -p "$state/logs" "$state/etcd"
  node=${TUGBOAT_NODE_NAME:-$(hostname | tr '[:upper:]_' '[:lower:]-')}
  if [[ ! -f $pki/ca.crt ]]; then
    "$bin/apiserver" pki init --dir "$pki" --nodes "$node" >/dev/null
    echo "made the cluster CA and certificates in $pki"
  fi
  start apiserver --listen "$api" --kube-listen "$kube" --metrics-listen 127.0.0.1:9443 --data-dir "$state/etcd" --pki-dir "$pki"
  wait_http apiserver http://127.0.0.1:9443/healthz
  start scheduler --server "$api" $(creds scheduler) --metrics-listen 127.0.0.1:10259
  start controller-manager --server "$api" $(creds controller-manager) --metrics-listen 127.0.0.1:10257
  if [[ $(id -u) == 0 ]]; then
    node_flags "$node"
    sandbox_image
    crictl_config
    read_flags kubelet
    start kubelet --server "$api" $(creds "node-$node") --metrics-listen 127.0.0.1:10248 "${flags[@]}"
    read_flags proxy
    start proxy --server "$api" $(creds proxy) --metrics-listen 127.0.0.1:10249 "${flags[@]}"
  fi
  mkdir -p "$(dirname "$tugctl_config")"
  if [[ -f $tugctl_config ]] && ! head -n1 "$tugctl_config" | grep -qxF "$config_mark"; then
    echo "left $tugctl_config alone (not written by local-up); use TUGBOAT_CONFIG=$state/admin.config"
    tugctl_config=$state/admin.config
  fi
  cat >"$tugctl_config" <<CFG
$config_mark
server: $api
caFile: $pki/ca.crt
certFile: $pki/admin.crt
keyFile: $pki/admin.key
CFG
  local kubeconfig
  kubeconfig=$(dirname "$tugctl_config")/kubeconfig
  # shellcheck source=lib/kubeconfig.sh
  . "$top/hack/lib/kubeconfig.sh"
  write_kubeconfig "$kubeconfig" "$kube" "$pki/ca.crt" "$pki/admin.crt" "$pki/admin.key" "$kube_mark"
  printf '%s\n' "$tugctl_config" "$kubeconfig" >"$state/configs-written"
  echo "cluster up (TLS, RBAC on; you are admin): $bin/tugctl get nodes — config in $tugctl_config"
  [[ -f $state/crictl.yaml ]] && echo "the node's runtime: crictl --config $state/crictl.yaml pods"
  offer_kube_config "$kubeconfig"
  [[ -f $HOME/.kube/config ]] && head -n1 "$HOME/.kube/config" | grep -qxF "$kube_mark" && echo "$HOME/.kube/config" >>"$state/configs-written"
  return 0
}

stop() { # name
  local pidf=$state/$1.pid pid
  [[ -f $pidf ]] || return 0
  pid=$(cat "$pidf")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "stopped $1 (pid $pid)"
  fi
  rm -f "$pidf"
}

down() {
  local i rc=0
  for ((i = ${#components[@]} - 1; i >= 0; i--)); do stop "${components[i]}"; done
  if [[ $(id -u) == 0 && -f $state/kubelet.flags ]]; then
    read_flags kubelet
    "$bin/kubelet" --cleanup "${flags[@]}" || rc=1
    read_flags proxy
    "$bin/proxy" --cleanup "${flags[@]}" || rc=1
    ((rc)) || rm -f "$state/kubelet.flags" "$state/proxy.flags" "$state/crictl.yaml"
  fi
  # The configs up wrote (each starts with its marker line), and their
  # folders if up made them and they are empty now.
  if [[ -f $state/configs-written ]]; then
    local cfg
    while read -r cfg; do
      if [[ -f $cfg ]] && head -n1 "$cfg" | grep -qxF -e "$config_mark" -e "$kube_mark"; then
        rm -f "$cfg"
        rmdir "$(dirname "$cfg")" 2>/dev/null || true
      fi
    done <"$state/configs-written"
    rm -f "$state/configs-written"
  fi
  ((rc == 0)) && echo "down: nothing of the node left on the host; data stays in $state" || { echo "down: cleanup failed (see above)" >&2; return 1; }
}

status() {
  for name in "${components[@]}"; do
    pidf=$state/$name.pid
    [[ -f $pidf ]] || continue
    pid=$(cat "$pidf")
    if kill -0 "$pid" 2>/dev/null; then s=running; else s=dead; fi
    echo "$name $pid $s"
  done
}

case ${1:-up} in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
