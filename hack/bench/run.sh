#!/usr/bin/env bash
# run.sh runs every benchmark driver that exists and prints its numbers.
set -euo pipefail
cd "$(dirname "$0")/../.."
make build >/dev/null
echo "== apiserver"; go run ./hack/bench/apiserver -bin bin/apiserver
for d in hack/bench/*/; do
  name=$(basename "$d")
  [[ $name == apiserver ]] && continue
  [[ -f $d/main.go ]] || continue
  echo "== $name"; go run "./$d"
done
