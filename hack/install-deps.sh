#!/usr/bin/env bash
# install-deps.sh installs the system packages Tugboat's build and tests need
# on a Debian 12 machine: etcd (tests and the external-etcd mode), containerd,
# runc and the CNI plugins (kubelet), nftables/iptables (proxy), busybox-static
# (test images), dig (DNS tests), protoc and the well-known protos (make
# generate), libseccomp-dev (static runc for the node image), chromium
# (the console's browser tests, e2e/console, drive it headless), and, built
# from the Go module proxy when missing, kubectl and crictl.
# Idempotent; run as root.
set -euo pipefail

pkgs=(
  etcd-server etcd-client
  containerd runc containernetworking-plugins
  iptables nftables iproute2 conntrack
  busybox-static bind9-dnsutils curl
  protobuf-compiler libprotobuf-dev libseccomp-dev
  make gcc git ca-certificates
  chromium
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Docker and compose for the compose cluster (make up, e2e/compose): only
# when absent, so an engine installed another way is left alone.
command -v docker >/dev/null || missing+=(docker.io)
if ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1; then
  missing+=(docker-compose)
fi

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# kubectl for the Kubernetes API tests (apiserver/kubeapi, e2e/kubectl):
# machines of this kind have /usr/bin/kubectl; where it is missing, build
# it from the Go module proxy (k8s.io/kubectl has no main package, so a
# two-line main in a scratch module calls its root command, as
# kubernetes/cmd/kubectl does).
if ! command -v kubectl >/dev/null; then
  kubectl_version=v0.37.2
  echo "install-deps: building kubectl $kubectl_version from the Go module proxy"
  tmp=$(mktemp -d)
  cat >"$tmp/main.go" <<'GO'
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() { cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()) }
GO
  (cd "$tmp" && go mod init kubectl-build >/dev/null 2>&1 &&
    go get "k8s.io/kubectl@$kubectl_version" "k8s.io/component-base@$kubectl_version" >/dev/null &&
    go mod tidy >/dev/null && CGO_ENABLED=0 go build -trimpath -o /usr/local/bin/kubectl .)
  rm -rf "$tmp"
  kubectl version --client
fi

# crictl, the CRI's own client, for the kubelet's CRI tests and on nodes
# (`crictl pods`, `crictl ps`): built from the Go module proxy, the same
# version hack/build-static.sh puts in the node image.
crictl_version=${CRICTL_VERSION:-v1.37.0}
if ! command -v crictl >/dev/null || ! crictl --version 2>/dev/null | grep -q "${crictl_version#v}"; then
  echo "install-deps: building crictl $crictl_version from the Go module proxy"
  CGO_ENABLED=0 GOBIN=/usr/local/bin go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${crictl_version}" \
    "sigs.k8s.io/cri-tools/cmd/crictl@$crictl_version"
fi
# crictl asks /etc/crictl.yaml where the runtime is; a node's containerd
# answers on its default socket. An existing file is the operator's.
if [[ ! -e /etc/crictl.yaml ]]; then
  printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\ntimeout: 10\n' >/etc/crictl.yaml
fi

# The Debian etcd-server package starts a system etcd on 2379; Tugboat's tests
# start their own on free ports and never use it, so it is left as it is.
echo "install-deps: ok ($(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'), etcd $(etcd --version 2>/dev/null | awk 'NR==1{print $3}'), crictl $(crictl --version | awk '{print $3}'))"
