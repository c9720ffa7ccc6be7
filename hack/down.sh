#!/usr/bin/env bash
# down.sh removes the docker-compose cluster (`make down`): its containers,
# networks and volumes (all cluster state: etcd, certificates, images
# pulled by the nodes), and the tugctl config and credentials hack/up.sh
# wrote. The images stay for a fast next `make up`;
# `hack/down.sh --images` (make down IMAGES=1) removes them too.
# Settings: see hack/lib/compose.sh.
set -euo pipefail
source "$(dirname "$0")/lib/compose.sh"
cd "$top"
images=0
[[ ${1:-} == --images || ${IMAGES:-} == 1 ]] && images=1

need_docker
pick_compose
"${COMPOSE[@]}" down --volumes --remove-orphans --timeout 10 ||
  fail "docker-compose down failed (above)" "retry; 'docker ps -a --filter label=com.docker.compose.project=$project' lists what is left"

# What a failed up may leave that compose does not know about.
left=$(docker ps -aq --filter "label=com.docker.compose.project=$project")
[[ -n $left ]] && docker rm -f $left >/dev/null
left=$(docker volume ls -q --filter "label=com.docker.compose.project=$project")
[[ -n $left ]] && docker volume rm $left >/dev/null
left=$(docker network ls -q --filter "label=com.docker.compose.project=$project")
[[ -n $left ]] && docker network rm $left >/dev/null

if ((images)); then
  for i in control-plane node registry; do
    docker rmi "tugboat/$i:$TUGBOAT_TAG" >/dev/null 2>&1 || true
  done
  say "removed the tugboat/*:$TUGBOAT_TAG images"
fi

if [[ -f $config_path ]] && grep -qF "for compose project $project;" "$config_path"; then
  rm -f "$config_path"
  if [[ -f $config_path.bak ]]; then
    mv "$config_path.bak" "$config_path"
    say "restored your previous $config_path"
  fi
fi
for k in "$kubeconfig_path" "$HOME/.kube/config"; do
  if [[ -f $k ]] && grep -qF "for compose project $project;" "$k"; then rm -f "$k"; fi
done
rm -rf "$creds_dir"
say "cluster $project removed (containers, networks, volumes, tugctl config)"
