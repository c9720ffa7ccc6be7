#!/usr/bin/env bash
# generate.sh regenerates the Go code for api/v1's protobuf files. The result
# is committed, so a plain build needs neither protoc nor the plugins.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"
command -v protoc >/dev/null || { echo "protoc missing: run hack/install-deps.sh" >&2; exit 1; }
go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
protoc -I . -I /usr/include \
  --go_out=. --go_opt=paths=source_relative \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
  api/v1/*.proto
# The same files as a descriptor set with their comments (source info):
# embedded by api/v1/comments.go, read by the OpenAPI documents (kubectl
# explain) for field descriptions.
protoc -I . -I /usr/include --include_source_info -o api/v1/descriptors.binpb api/v1/*.proto
