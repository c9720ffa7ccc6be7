#!/usr/bin/env bash
# record.sh records kubectl's own output for pod.yaml as golden files, with
# kubectl run offline (label --local with a label pod.yaml already has
# changes nothing, and prints the object with -o): jsonpath-NAME.out for
# each template of templates.txt, go-template.out. Re-run it with a newer
# kubectl to re-record: bash record.sh
set -euo pipefail
cd "$(dirname "$0")"
k() { kubectl label --local -f pod.yaml tier=front --overwrite "$@"; }
while IFS=$'\t' read -r name tpl; do
  k -o "jsonpath=$tpl" > "jsonpath-$name.out"
done < templates.txt
k -o 'go-template={{.metadata.name}}{{range .spec.containers}} {{.name}}={{.image}}{{end}}{{"\n"}}{{index .metadata.labels "app"}}{{"\n"}}' > go-template.out
k -o 'jsonpath-file=templates-file.txt' > jsonpath-file.out
kubectl version --client | head -1 > kubectl-version.txt
