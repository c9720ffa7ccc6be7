#!/usr/bin/env bash
# up.sh brings up the docker-compose cluster (`make up`): checks docker,
# compose and the host ports, builds the images (hack/build-images.sh, no
# registry or base image needed), starts docker-compose.yaml, copies the
# admin credentials out and writes a tugctl config, then waits until every
# node is Ready. Idempotent: running it again rebuilds what changed and
# recreates only those containers. Any failure stops with what went wrong,
# how to fix it, and the failing container's last log lines.
#
# TUGBOAT_HA=1 (make up HA=1) starts deploy/docker/docker-compose.ha.yaml
# instead: three etcd members, two apiservers, two schedulers, two
# controller-managers; the tugctl config names both apiservers.
#
# Settings: see hack/lib/compose.sh; TUGBOAT_NODES (nodes to wait for,
# default 2), TUGBOAT_READY_TIMEOUT (seconds, default 240),
# TUGBOAT_SKIP_BUILD=1 (use the images as they are).
set -euo pipefail
source "$(dirname "$0")/lib/compose.sh"
cd "$top"
nodes_wanted=${TUGBOAT_NODES:-2}
ready_timeout=${TUGBOAT_READY_TIMEOUT:-240}
t0=$SECONDS

need_docker
pick_compose

# --- host ports ---------------------------------------------------------------
# A port is fine if nothing listens on it, or if this project's own
# containers publish it (make up on a running cluster).
ours=$(docker ps --filter "label=com.docker.compose.project=$project" --format '{{.Ports}}' | tr ',' '\n')
check_port() { # VAR PORT WHAT
  local var=$1 port=$2 what=$3
  [[ $port =~ ^[0-9]+$ ]] || fail "$var=$port is not a port number" "set $var to a free TCP port"
  grep -q "127.0.0.1:$port->" <<<"$ours" && return 0
  if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
    local who=""
    command -v ss >/dev/null && who=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:(.*)' | head -n1)
    fail "port $port on 127.0.0.1 ($what) is taken${who:+ by $who}" \
      "stop what listens there, or pick another port: $var=<port> make up"
  fi
}
check_port TUGBOAT_API_PORT "$TUGBOAT_API_PORT" "the apiserver"
check_port TUGBOAT_KUBE_PORT "$TUGBOAT_KUBE_PORT" "the apiserver's Kubernetes API"
check_port TUGBOAT_REGISTRY_PORT "$TUGBOAT_REGISTRY_PORT" "the image registry"
check_port TUGBOAT_NODEPORT_1 "$TUGBOAT_NODEPORT_1" "nodePort 30080 of worker-1"
check_port TUGBOAT_NODEPORT_2 "$TUGBOAT_NODEPORT_2" "nodePort 30080 of worker-2"
if ((ha)); then
  check_port TUGBOAT_API_PORT_2 "$TUGBOAT_API_PORT_2" "the second apiserver"
  check_port TUGBOAT_KUBE_PORT_2 "$TUGBOAT_KUBE_PORT_2" "the second apiserver's Kubernetes API"
fi

# --- images -------------------------------------------------------------------
if [[ ${TUGBOAT_SKIP_BUILD:-} != 1 ]]; then
  say "building images (the first time takes a few minutes: containerd, runc and the registry are compiled)"
  hack/build-images.sh || fail "building the images failed (above)" "fix the error above; hack/build-images.sh runs the build alone"
fi
t_images=$((SECONDS - t0))

# --- compose up ---------------------------------------------------------------
say "starting the cluster (project $project, ${compose_file#"$top"/}, $COMPOSE_NAME)"
if ! "${COMPOSE[@]}" up -d --remove-orphans; then
  echo >&2
  for s in "${control_services[@]}" registry worker-1 worker-2; do
    id=$(container "$s")
    [[ -z $id ]] && continue
    st=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}} {{.State.ExitCode}}' "$id")
    case $st in
      running\ healthy* | running\ \ * | exited\ *\ 0) ;;
      *) show_logs "$s" ;;
    esac
  done
  fail "docker-compose up failed (the containers above are the ones not running or not healthy)" \
    "read their logs above; 'make down' then 'make up' starts from scratch"
fi
t_compose=$((SECONDS - t0))

# --- admin credentials and tugctl config --------------------------------------
api=$(container "${apiserver_services[0]}")
mkdir -p "$creds_dir"
chmod 700 "$creds_dir"
for f in ca.crt admin.crt admin.key; do
  docker cp "$api:/pki/$f" "$creds_dir/$f" || fail "copying $f out of the apiserver container failed" "check 'docker logs $api'"
done
chmod 600 "$creds_dir/admin.key"
marker="# Written by hack/up.sh (make up) for compose project $project; make down removes it."
if [[ -f $config_path ]] && ! grep -qF "# Written by hack/up.sh" "$config_path"; then
  mv "$config_path" "$config_path.bak"
  say "moved your previous $config_path to $config_path.bak"
fi
mkdir -p "$(dirname "$config_path")"
cat >"$config_path" <<CFG
$marker
server: $api_servers
caFile: $creds_dir/ca.crt
certFile: $creds_dir/admin.crt
keyFile: $creds_dir/admin.key
CFG
# shellcheck source=lib/kubeconfig.sh
. "$top/hack/lib/kubeconfig.sh"
write_kubeconfig "$kubeconfig_path" "127.0.0.1:$TUGBOAT_KUBE_PORT" "$creds_dir/ca.crt" "$creds_dir/admin.crt" "$creds_dir/admin.key" "$marker"
# ~/.kube/config is offered only for the default config (a TUGBOAT_CONFIG
# elsewhere, as the compose test sets, keeps to its own folder).
kube_hint="kubectl: export KUBECONFIG=$kubeconfig_path"
[[ $config_path == "$HOME/.tugboat/config" ]] && kube_hint=$(offer_kube_config "$kubeconfig_path")

# --- wait for Ready nodes -----------------------------------------------------
tugctl=$top/bin/tugctl
[[ -x $tugctl ]] || fail "bin/tugctl is missing" "run hack/build-images.sh (or make up without TUGBOAT_SKIP_BUILD)"
say "waiting for $nodes_wanted Ready nodes (up to ${ready_timeout}s)"
deadline=$((SECONDS + ready_timeout))
ready=0
while :; do
  out=$("$tugctl" --config "$config_path" get nodes --no-headers 2>&1) || true
  ready=$(awk '$2 ~ /^Ready/ {n++} END {print n+0}' <<<"$out")
  ((ready >= nodes_wanted)) && break
  # A node container that died will not come back by waiting.
  for s in worker-1 worker-2; do
    id=$(container "$s")
    if [[ -n $id && $(docker inspect -f '{{.State.Status}}' "$id") != running ]]; then
      show_logs "$s" 40
      fail "node container $s is not running" "read its log above; 'make down && make up' starts from scratch"
    fi
  done
  if ((SECONDS > deadline)); then
    echo "nodes:" >&2
    echo "$out" | sed 's/^/  /' >&2
    for s in worker-1 worker-2; do
      awk -v n="$s" '$1 == n && $2 ~ /^Ready/ {found=1} END {exit !found}' <<<"$out" || show_logs "$s" 40
    done
    for s in "${control_services[@]}"; do
      [[ $s == controller-manager* ]] && show_logs "$s" 15
    done
    fail "only $ready of $nodes_wanted nodes became Ready within ${ready_timeout}s" \
      "read the node logs above ('$tugctl describe node worker-1' shows its conditions); a slow machine may need TUGBOAT_READY_TIMEOUT=600"
  fi
  sleep 1
done
t_ready=$((SECONDS - t0))

ha_lines=""
if ((ha)); then
  ha_lines="  HA control plane: etcd-1..3, apiserver-1 (127.0.0.1:$TUGBOAT_API_PORT) and apiserver-2 (127.0.0.1:$TUGBOAT_API_PORT_2),
    2 schedulers, 2 controller-managers; tugctl uses both apiservers (server: $api_servers)
  $tugctl get componentstatuses   # every apiserver, etcd member and leader
  kubectl --server https://127.0.0.1:$TUGBOAT_KUBE_PORT_2 get nodes   (kubectl takes one server: apiserver-2's)
  TUGBOAT_HA=1 hack/compose.sh kill apiserver-1 etcd-2   # a fault to try; ... start apiserver-1 etcd-2 brings them back
"
fi
cat >&2 <<EOF

Tugboat is up: $ready nodes Ready in ${t_ready}s (images ${t_images}s, compose $((t_compose - t_images))s, nodes $((t_ready - t_compose))s).
  TLS and RBAC are on; you are admin through $config_path.
$ha_lines  $tugctl get nodes
  $kube_hint
  kubectl get nodes        (the Kubernetes API: https://127.0.0.1:$TUGBOAT_KUBE_PORT, $kubeconfig_path)
  $tugctl apply -f deploy/examples/web.yaml
  $tugctl console          # the live web console of both flows: http://127.0.0.1:8080/ (--open, --listen)
  curl http://127.0.0.1:$TUGBOAT_NODEPORT_1/      # nodePort 30080 on worker-1 (worker-2: $TUGBOAT_NODEPORT_2)
  registry: 127.0.0.1:$TUGBOAT_REGISTRY_PORT (from pods' nodes: registry:5000, plain HTTP)
  make down$( ((ha)) && echo " HA=1")    removes the containers, networks and volumes
EOF
