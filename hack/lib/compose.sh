# compose.sh: what hack/up.sh and hack/down.sh share — settings, the compose
# command (v2 `docker compose` or v1 `docker-compose`), preflight checks
# that say what is wrong and how to fix it. Source it; it sets:
#   top project compose_file config_path creds_dir COMPOSE (array)
#   ha control_services apiserver_services api_servers
# Settings (environment):
#   TUGBOAT_HA         1: the highly available control plane,
#                      deploy/docker/docker-compose.ha.yaml (make up HA=1)
#   TUGBOAT_PROJECT    compose project name (default tugboat)
#   TUGBOAT_COMPOSE    compose command, e.g. "docker-compose" (default: v2 if
#                      present, else v1)
#   TUGBOAT_CONFIG     tugctl config written by up (default ~/.tugboat/config);
#                      the kubeconfig goes beside it (kubeconfig)
#   TUGBOAT_TAG, TUGBOAT_API_PORT, TUGBOAT_KUBE_PORT, TUGBOAT_REGISTRY_PORT,
#   TUGBOAT_NODEPORT_1, TUGBOAT_NODEPORT_2   see docker-compose.yaml
#   TUGBOAT_API_PORT_2, TUGBOAT_KUBE_PORT_2  the second apiserver's (HA=1)

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# TUGBOAT_* settings from the root's .env (as compose reads it), unless the
# environment sets them: the scripts and compose must agree on the ports.
if [[ -f $top/.env ]]; then
  while IFS='=' read -r k v; do
    if [[ $k =~ ^TUGBOAT_[A-Z0-9_]+$ && -z ${!k:-} ]]; then export "$k=$v"; fi
  done <"$top/.env"
fi
project=${TUGBOAT_PROJECT:-tugboat}
ha=0
[[ ${TUGBOAT_HA:-} == 1 ]] && ha=1
compose_file=$top/docker-compose.yaml
# The control plane's services (in start order) and the apiservers among
# them.
control_services=(pki etcd apiserver scheduler controller-manager)
apiserver_services=(apiserver)
if ((ha)); then
  compose_file=$top/deploy/docker/docker-compose.ha.yaml
  control_services=(pki etcd-1 etcd-2 etcd-3 apiserver-1 apiserver-2 scheduler-1 scheduler-2 controller-manager-1 controller-manager-2)
  apiserver_services=(apiserver-1 apiserver-2)
fi
config_path=${TUGBOAT_CONFIG:-$HOME/.tugboat/config}
creds_dir=$(dirname "$config_path")/compose-$project
kubeconfig_path=$(dirname "$config_path")/kubeconfig
export TUGBOAT_TAG=${TUGBOAT_TAG:-dev}
export TUGBOAT_API_PORT=${TUGBOAT_API_PORT:-6443}
export TUGBOAT_KUBE_PORT=${TUGBOAT_KUBE_PORT:-6444}
export TUGBOAT_REGISTRY_PORT=${TUGBOAT_REGISTRY_PORT:-5000}
export TUGBOAT_NODEPORT_1=${TUGBOAT_NODEPORT_1:-30080}
export TUGBOAT_NODEPORT_2=${TUGBOAT_NODEPORT_2:-30081}
export TUGBOAT_API_PORT_2=${TUGBOAT_API_PORT_2:-6445}
export TUGBOAT_KUBE_PORT_2=${TUGBOAT_KUBE_PORT_2:-6446}
# api_servers: the host addresses of the apiservers' gRPC API, as tugctl's
# server setting (comma-separated: tugctl spreads over them).
api_servers=127.0.0.1:$TUGBOAT_API_PORT
((ha)) && api_servers+=,127.0.0.1:$TUGBOAT_API_PORT_2

say() { echo "$(basename "$0" .sh): $*" >&2; }
fail() { # fail MESSAGE [FIX]: print what is wrong and how to fix it, exit 1
  echo >&2
  echo "ERROR: $1" >&2
  [[ -n ${2:-} ]] && echo "  fix: $2" >&2
  exit 1
}

# need_docker: docker installed and the daemon answers.
need_docker() {
  command -v docker >/dev/null ||
    fail "docker is not installed" "install Docker (Debian: apt-get install docker.io; elsewhere https://docs.docker.com/engine/install/) and start it"
  local out
  if ! out=$(docker info --format '{{.ServerVersion}}' 2>&1); then
    fail "the docker daemon does not answer: ${out##*$'\n'}" \
      "start it (systemctl start docker), or if it runs, add yourself to the docker group (usermod -aG docker \$USER, then log in again) or use sudo"
  fi
}

# pick_compose: sets COMPOSE to the compose command with project and file,
# COMPOSE_NAME to its name and version.
pick_compose() {
  local cmd
  if [[ -n ${TUGBOAT_COMPOSE:-} ]]; then
    read -r -a cmd <<<"$TUGBOAT_COMPOSE"
    "${cmd[@]}" version >/dev/null 2>&1 || fail "TUGBOAT_COMPOSE=$TUGBOAT_COMPOSE does not run" "unset it, or name a working compose command"
  elif docker compose version >/dev/null 2>&1; then
    cmd=(docker compose)
  elif command -v docker-compose >/dev/null && docker-compose version >/dev/null 2>&1; then
    cmd=(docker-compose)
  else
    fail "neither 'docker compose' (v2) nor 'docker-compose' (v1) is installed" \
      "install one: Debian: apt-get install docker-compose; or the compose v2 plugin (https://docs.docker.com/compose/install/)"
  fi
  COMPOSE=("${cmd[@]}" -p "$project" -f "$compose_file" --project-directory "$top")
  COMPOSE_NAME="${cmd[*]} $("${cmd[@]}" version --short 2>/dev/null || true)"
}

# container SERVICE: the id of the service's container (running or not).
container() {
  docker ps -aq --filter "label=com.docker.compose.project=$project" \
    --filter "label=com.docker.compose.service=$1" | head -n1
}

# show_logs SERVICE [LINES]: the last lines of a service's container log.
show_logs() {
  local id
  id=$(container "$1")
  [[ -z $id ]] && { echo "  ($1: no container)" >&2; return 0; }
  echo "--- last ${2:-25} log lines of $1 ($(docker inspect -f '{{.State.Status}}{{if .State.Health}}, {{.State.Health.Status}}{{end}}, exit code {{.State.ExitCode}}' "$id")):" >&2
  docker logs --tail "${2:-25}" "$id" 2>&1 | sed 's/^/  /' >&2
}
