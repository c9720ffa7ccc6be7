#!/usr/bin/env bash
# build-static.sh builds the third-party binaries the compose images need,
# statically, from the Go module proxy — no registry, no base image:
#
#   containerd, containerd-shim-runc-v2, ctr   CGO_ENABLED=0
#   CNI plugins bridge, host-local, portmap, loopback   CGO_ENABLED=0
#   runc   cgo + Debian's libseccomp-dev, linked -static
#   registry (distribution v3)   CGO_ENABLED=0
#   crictl (sigs.k8s.io/cri-tools)   CGO_ENABLED=0, the CRI's own client for
#                                    the node image (crictl pods, ps, logs)
#
# Each one lands in its own versioned folder of the cache
# ($TUGBOAT_CACHE_DIR, default ~/.cache/tugboat) and is built once: a warm
# run only checks the folders. The folder is filled atomically (built in a
# temporary folder, then renamed), so an interrupted build leaves nothing
# half-made. Prints the cache folder on stdout; progress goes to stderr.
#
#   hack/build-static.sh            build what is missing
#   hack/build-static.sh --check    exit 1 if something is missing
set -euo pipefail

CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
RUNC_VERSION=${RUNC_VERSION:-v1.5.3}
CNI_PLUGINS_VERSION=${CNI_PLUGINS_VERSION:-v1.10.0}
REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
CRICTL_VERSION=${CRICTL_VERSION:-v1.37.0}

cache=${TUGBOAT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tugboat}/static
GO=${GO:-go}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false -trimpath"
mode=${1:-build}

log() { echo "build-static: $*" >&2; }
die() { echo "build-static: $*" >&2; exit 1; }

# is_static FILE: no ELF interpreter means no dynamic loader is needed.
is_static() {
  if command -v readelf >/dev/null; then
    ! readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'
  else
    ! grep -q 'ld-linux' "$1"
  fi
}

# build NAME VERSION CGO INSTALL-ARGS...: go install into $cache/NAME-VERSION.
build() {
  local name=$1 version=$2 cgo=$3; shift 3
  local dir=$cache/$name-$version
  if [[ -d $dir ]]; then return 0; fi
  [[ $mode == --check ]] && { log "missing $dir"; missing=1; return 0; }
  mkdir -p "$cache"
  local tmp
  tmp=$(mktemp -d "$cache/.$name-XXXXXX")
  chmod 755 "$tmp"
  log "building $name $version (cgo=$cgo) ..."
  local start=$SECONDS
  if ! CGO_ENABLED=$cgo GOBIN=$tmp "$GO" install "$@" >&2; then
    rm -rf "$tmp"
    die "building $name $version failed (is the Go module proxy reachable? GOPROXY=$($GO env GOPROXY))"
  fi
  for f in "$tmp"/*; do
    is_static "$f" || { rm -rf "$tmp"; die "$f is dynamically linked; expected a static binary"; }
  done
  mv -T "$tmp" "$dir"
  log "built $name $version in $((SECONDS - start))s: $(cd "$dir" && echo *)"
}

command -v "$GO" >/dev/null || die "go not found: install Go ≥ 1.26.8 (https://go.dev/dl) and put it on PATH"
missing=0

build containerd "$CONTAINERD_VERSION" 0 -ldflags '-s -w' \
  "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION"

build cni-plugins "$CNI_PLUGINS_VERSION" 0 -ldflags '-s -w' \
  "github.com/containernetworking/plugins/plugins/main/bridge@$CNI_PLUGINS_VERSION" \
  "github.com/containernetworking/plugins/plugins/ipam/host-local@$CNI_PLUGINS_VERSION" \
  "github.com/containernetworking/plugins/plugins/meta/portmap@$CNI_PLUGINS_VERSION" \
  "github.com/containernetworking/plugins/plugins/main/loopback@$CNI_PLUGINS_VERSION"

if [[ ! -d $cache/runc-$RUNC_VERSION && $mode != --check ]]; then
  command -v gcc >/dev/null || die "runc needs cgo: apt-get install gcc libseccomp-dev (or run hack/install-deps.sh)"
  [[ -f /usr/include/seccomp.h ]] || die "runc needs libseccomp's headers and static library: apt-get install libseccomp-dev (or run hack/install-deps.sh)"
fi
build runc "$RUNC_VERSION" 1 -tags 'seccomp netgo osusergo urfave_cli_no_docs' \
  -ldflags '-s -w -extldflags "-static"' \
  "github.com/opencontainers/runc@$RUNC_VERSION"

build registry "$REGISTRY_VERSION" 0 -ldflags '-s -w' \
  "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"

build crictl "$CRICTL_VERSION" 0 \
  -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" \
  "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"

if [[ $mode == --check ]]; then
  exit "$missing"
fi
echo "$cache"
