#!/usr/bin/env bash
# compose.sh runs docker compose (v2) or docker-compose (v1) on the cluster
# `make up` started: the right project, file and settings, so that
#   hack/compose.sh ps
#   hack/compose.sh logs --tail 50 worker-1
#   hack/compose.sh exec worker-1 sh        # ctr -n tugboat c ls, nft list ruleset
# work the same with either compose. Settings: see hack/lib/compose.sh.
set -euo pipefail
source "$(dirname "$0")/lib/compose.sh"
need_docker
pick_compose
exec "${COMPOSE[@]}" "$@"
