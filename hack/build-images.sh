#!/usr/bin/env bash
# build-images.sh builds the docker-compose cluster's images on this host,
# with no registry and no base image: every image is FROM scratch.
#
#   tugboat/control-plane   etcd, apiserver, scheduler, controller-manager,
#                           tugctl, tugboat-init (static Go)
#   tugboat/node            containerd, shim, ctr, runc, CNI plugins,
#                           crictl (hack/build-static.sh) with
#                           /etc/crictl.yaml, iptables + nft with
#                           their libraries and busybox copied from this
#                           host, kubelet, proxy, tugboat-init, and the
#                           example image archives and the CRI
#                           sandbox (pause) image
#   tugboat/registry        distribution registry, tugboat-init, the
#                           example image archives
#
# Steps: static third-party binaries (cached, see build-static.sh), the
# project's binaries into bin/, the example images into bin/images/, a
# build context per image under bin/compose/, then `docker build` with the
# legacy builder (BuildKit needs buildx, which many hosts lack). Unchanged
# inputs hit docker's layer cache, so a warm run takes seconds.
#
# Environment: TUGBOAT_TAG (image tag, default dev), GO, DOCKER.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
tag=${TUGBOAT_TAG:-dev}
GO=${GO:-go}
DOCKER=${DOCKER:-docker}
bin=$top/bin
ctx=$bin/compose

log() { echo "build-images: $*" >&2; }
die() { echo "build-images: $*" >&2; exit 1; }
t0=$SECONDS
step() { log "$1 ($((SECONDS - t0))s)"; }

# --- static third-party binaries -------------------------------------------
static=$(hack/build-static.sh)
step "static binaries ready in $static"

# --- the project's binaries --------------------------------------------------
# Every cmd/ that has Go files today (components land one by one), plus the
# compose images' own etcd and tugboat-init.
pkgs=()
for d in cmd/*/; do
  [[ $d == cmd/tugboat/ ]] && continue # the all-in-one: not in the images
  compgen -G "$d*.go" >/dev/null && pkgs+=("./${d%/}")
done
pkgs+=(./deploy/tugboat-init ./deploy/etcd)
mkdir -p "$bin"
CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -ldflags '-s -w' -o "$bin/" "${pkgs[@]}" ||
  die "go build failed (see above): fix the build, or build what works with 'go build ./cmd/...'"
step "built ${pkgs[*]##*/}"

# --- example images (reproducible OCI archives) -------------------------------
mkdir -p "$bin/images"
"$GO" build -trimpath -buildvcs=false -o "$bin/mkimage" ./hack/mkimage
for img in busybox echo pause; do
  "$bin/mkimage" -o "$bin/images/$img.tar" "$img" >/dev/null ||
    die "making the $img image failed (busybox needs Debian's busybox-static: hack/install-deps.sh)"
done
step "example images in bin/images"

# --- build contexts ----------------------------------------------------------
# put SRC DST: hard link (fast, no copy) or copy; DST's folder is created.
put() {
  mkdir -p "$(dirname "$2")"
  ln -f "$1" "$2" 2>/dev/null || cp -f "$1" "$2"
}

# canon PATH: PATH with its folder resolved (Debian's /lib, /bin and /sbin
# are symlinks into /usr; the rootfs gets the same links).
canon() { echo "$(readlink -f "${1%/*}")/${1##*/}"; }

# put_elf ROOT FILE...: copy dynamically linked host programs and every
# library they load into ROOT, under their canonical paths.
put_elf() {
  local root=$1 f lib
  shift
  for f in "$@"; do put "$(readlink -f "$f")" "$root$(canon "$f")"; done
  for lib in $(ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*[^:]$/ {print $1}' | sort -u); do
    [[ -e $root$(canon "$lib") ]] || put "$(readlink -f "$lib")" "$root$(canon "$lib")"
  done
}

# base_rootfs ROOT: what every image has besides its programs.
base_rootfs() {
  local root=$1
  mkdir -p "$root"/{etc,tmp,run,var/tmp,usr/bin,usr/sbin,usr/lib,usr/lib64}
  chmod 1777 "$root/tmp" "$root/var/tmp"
  ln -sfn usr/bin "$root/bin"
  ln -sfn usr/sbin "$root/sbin"
  ln -sfn usr/lib "$root/lib"
  ln -sfn usr/lib64 "$root/lib64"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  local f
  for f in /etc/ssl/certs/ca-certificates.crt /etc/protocols /etc/services /etc/ethertypes; do
    [[ -f $f ]] && put "$f" "$root$f"
  done
  return 0
}

fresh() { # fresh NAME: an empty context from deploy/docker/NAME
  rm -rf "$ctx/$1"
  mkdir -p "$ctx/$1/bin" "$ctx/$1/rootfs" "$ctx/$1/images"
  cp -r "deploy/docker/$1/." "$ctx/$1/"
  base_rootfs "$ctx/$1/rootfs"
}

# control plane
fresh control-plane
for b in etcd apiserver scheduler controller-manager tugctl tugboat-init; do
  [[ -x $bin/$b ]] && put "$bin/$b" "$ctx/control-plane/bin/$b"
done

# registry
fresh registry
put "$static/registry-${REGISTRY_VERSION:-v3.1.2}/registry" "$ctx/registry/bin/registry"
put "$bin/tugboat-init" "$ctx/registry/bin/tugboat-init"
put "$bin/images/busybox.tar" "$ctx/registry/images/busybox.tar"
put "$bin/images/echo.tar" "$ctx/registry/images/echo.tar"

# node
fresh node
root=$ctx/node/rootfs
for f in "$static"/containerd-"${CONTAINERD_VERSION:-v2.4.2}"/* "$static"/runc-"${RUNC_VERSION:-v1.5.3}"/* \
  "$static"/crictl-"${CRICTL_VERSION:-v1.37.0}"/*; do
  put "$f" "$root/usr/local/bin/$(basename "$f")"
done
# crictl on the node talks to its containerd's CRI (the kubelet's
# --container-runtime-endpoint): `docker exec worker-1 crictl pods`.
printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\ntimeout: 10\n' >"$root/etc/crictl.yaml"
for f in "$static"/cni-plugins-*/*; do
  put "$f" "$root/opt/cni/bin/$(basename "$f")"
done
command -v xtables-nft-multi >/dev/null || [[ -x /usr/sbin/xtables-nft-multi ]] ||
  die "the node image copies this host's iptables-nft: apt-get install iptables nftables (hack/install-deps.sh)"
put_elf "$root" /usr/sbin/xtables-nft-multi
for n in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore \
  iptables-nft iptables-nft-save iptables-nft-restore; do
  ln -sfn xtables-nft-multi "$root/usr/sbin/$n"
done
xt=$(dirname "$(readlink -f /usr/lib/x86_64-linux-gnu/xtables/libxt_MASQUERADE.so 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/xtables/x)")
if [[ -d $xt ]]; then
  put_elf "$root" "$xt"/*.so
fi
[[ -x /usr/sbin/nft ]] && put_elf "$root" /usr/sbin/nft
if [[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1; then
  put /bin/busybox "$root/usr/bin/busybox"
  for a in $(/bin/busybox --list-full); do
    a=${a#/}
    case $a in bin/* | sbin/*) a=usr/$a ;; esac
    [[ -e $root/$a || -L $root/$a ]] || { mkdir -p "$root/${a%/*}"; ln -s /usr/bin/busybox "$root/$a"; }
  done
else
  log "no static /bin/busybox (Debian's busybox-static): the node image gets no shell"
fi
for b in kubelet proxy tugboat-init; do
  [[ -x $bin/$b ]] && put "$bin/$b" "$ctx/node/bin/$b"
done
put "$bin/images/busybox.tar" "$ctx/node/images/busybox.tar"
put "$bin/images/echo.tar" "$ctx/node/images/echo.tar"
# The sandbox image the node's containerd config names (never pulled):
# imported from the kubelet's import folder like the others; pods wait
# for it (FailedCreatePodSandBox saying so) and start once it is in.
put "$bin/images/pause.tar" "$ctx/node/images/pause.tar"
step "staged build contexts in bin/compose"

# --- docker build -------------------------------------------------------------
command -v "$DOCKER" >/dev/null || die "docker not found: install Docker (Debian: apt-get install docker.io) and start it"
"$DOCKER" info >/dev/null 2>&1 || die "cannot talk to the docker daemon ($("$DOCKER" info 2>&1 | grep -m1 -i error || true)): start it (systemctl start docker) or check your permissions (docker group)"
for img in control-plane registry node; do
  DOCKER_BUILDKIT=0 "$DOCKER" build -q -t "tugboat/$img:$tag" "$ctx/$img" >/dev/null 2>"$ctx/$img.build.log" || {
    cat "$ctx/$img.build.log" >&2
    die "docker build of tugboat/$img:$tag failed (above)"
  }
done
# Replaced images (a previous build's, now untagged) go, unless a container
# still uses them.
"$DOCKER" image prune -f --filter label=io.tugboat.image >/dev/null 2>&1 || true
step "images built: $("$DOCKER" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep "^tugboat/.*:$tag " | tr '\n' ' ')"
