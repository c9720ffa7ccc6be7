#!/usr/bin/env bash
# install.sh installs Tugboat on Debian/Ubuntu VMs, from the distribution's
# packages and the binaries built by `make build` (bin/), with systemd.
#
#   install.sh control-plane [--advertise-address IP] [--etcd embedded|local]
#       apiserver (TLS + RBAC), scheduler, controller-manager; makes the
#       cluster CA and certificates in /etc/tugboat/pki, an admin tugctl
#       config /etc/tugboat/admin.config and an admin kubeconfig for kubectl
#       /etc/tugboat/admin.kubeconfig (the Kubernetes API on --kube-port,
#       default 6444); prints the command that joins a worker. etcd:
#       embedded in the apiserver (a unix socket only root opens), or
#       local: Debian's etcd binary as tugboat-etcd on 127.0.0.1:2379, TLS
#       with client certificates of its own CA for clients and peers (the
#       distribution's plaintext etcd.service is stopped and disabled).
#   install.sh control-plane --etcd cluster --advertise-address IP1
#         --control-plane-addresses IP1,IP2,IP3
#       the first server of a highly available control plane (an odd
#       number of servers, 3 or more): etcd (Debian's etcd-server as
#       tugboat-etcd, member etcd-N for the Nth address, client-certificate
#       TLS for clients, peer TLS between members, --initial-cluster naming
#       every member), an apiserver (on all the members), a scheduler and
#       a controller-manager (both elect a leader, and reach every
#       apiserver) on each server. Makes the CAs and this server's
#       certificates (the apiserver's valid for every server's address,
#       etcd's for this member's), and
#       <etc-dir>/control-plane-join.tar.gz: the CAs, the service-account
#       key, the Secrets encryption key and the cluster's settings, to copy
#       to the other servers (it holds the CA keys: root only, delete it
#       once they have joined). The control plane answers once a majority
#       of the members run (2 of 3).
#   install.sh control-plane --join-bundle FILE --advertise-address IP2
#       another server of that control plane: the same CAs and keys from
#       the bundle, certificates of its own, its etcd member and the same
#       three components.
#   install.sh join-command
#       (on the control plane) a fresh one-time join token and the exact
#       worker command line that uses it (with every apiserver's address).
#   install.sh worker --server IP:6443[,IP2:6443,...] --token TOKEN (--ca-data B64 | --ca-file F)
#       containerd, runc, the CNI plugins (Debian packages), the kubelet
#       (joins with the token; its key never leaves the node) and the proxy.
#       Give it the control plane's --cluster-cidr if that is not the
#       default 10.244.0.0/16 (pod-to-pod traffic keeps its source address
#       within it). The kubelet drives containerd over CRI: install.sh
#       writes containerd's config (bin/tugboat-init containerd-config: CRI
#       on, Tugboat's pause image as the sandbox image, the CNI folders the
#       kubelet writes its conflist into; an existing config not written by
#       Tugboat is kept as config.toml.orig) and restarts it, puts the pause
#       image (bin/images/pause.tar, `make images`) into the kubelet's
#       import folder, and installs crictl with /etc/crictl.yaml (`crictl
#       pods` shows the node's pods). --runtime containerd keeps the native
#       backend (containerd's own API; containerd's config untouched).
#   install.sh all-in-one
#       bin/tugboat as one service: a single-node cluster.
#   install.sh uninstall
#       stop and remove the units, binaries, configuration and state.
#
# control-plane only: --port PORT (the apiserver's gRPC API, 6443),
#   --kube-port PORT (its Kubernetes API, 6444), --cluster-cidr CIDR
#   (10.244.0.0/16), --service-cidr CIDR (10.96.0.0/16); with
#   --join-bundle these come from the bundle.
#
# Common options:
#   --bin-dir DIR       built binaries (default: bin/ next to this script's repo)
#   --images-dir DIR    image archives of `make images` (default: <bin-dir>/images)
#   --prefix DIR        install binaries into DIR/bin (default /usr/local)
#   --etc-dir DIR       configuration (default /etc/tugboat)
#   --data-dir DIR      state (default /var/lib/tugboat)
#   --no-systemd        install files only; print the command lines instead
#                       of writing units and starting them (the e2e test runs
#                       the same files without systemd)
#   --skip-packages     do not apt-get install anything
#   worker only: --runtime cri|containerd, --containerd-socket PATH,
#   --containerd-config FILE (/etc/containerd/config.toml),
#   --containerd-root DIR, --containerd-state DIR (containerd's; default
#   /var/lib/containerd, /run/containerd), --cni-conf-dir DIR
#   (/etc/cni/net.d), --crictl-config FILE (/etc/crictl.yaml)
#
# Each component's command line lives in <etc-dir>/<component>.env as
# ARGS="..."; its unit runs `<prefix>/bin/<component> $ARGS`. Edit the file
# and `systemctl restart tugboat-<component>` to change a flag.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin_dir=$repo/bin
images_dir=""
prefix=/usr/local
etc_dir=/etc/tugboat
data_dir=/var/lib/tugboat
systemd_dir=/etc/systemd/system
units_src=$repo/deploy/systemd
use_systemd=1
packages=1
advertise=""
api_port=6443
kube_port=6444
etcd=embedded
cluster_cidr=10.244.0.0/16
service_cidr=10.96.0.0/16
server=""
token=""
ca_data=""
ca_file=""
node_name=$(hostname | tr '[:upper:]_' '[:lower:]-')
node_ip=""
containerd_socket=/run/containerd/containerd.sock
runtime=cri
containerd_config=/etc/containerd/config.toml
containerd_root=/var/lib/containerd
containerd_state=/run/containerd
cni_conf_dir=/etc/cni/net.d
cni_bin_dir=/usr/lib/cni
crictl_config=/etc/crictl.yaml
registry_insecure=""
token_ttl=24h
cp_addresses=""
join_bundle=""
given="" # the options given, " --option " each
kubelet_extra=()
proxy_extra=()

say() { echo "install: $*" >&2; }
die() { echo "install: ERROR: $*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

cmd=${1:-}
[[ -z $cmd || $cmd == -h || $cmd == --help ]] && usage
shift
while (($#)); do
  given+=" $1 "
  case $1 in
    --no-systemd | --skip-packages | -h | --help) ;;
    -*) (($# >= 2)) || die "$1 needs a value (install.sh --help)" ;;
  esac
  case $1 in
    --bin-dir) bin_dir=$2; shift ;;
    --images-dir) images_dir=$2; shift ;;
    --prefix) prefix=$2; shift ;;
    --etc-dir) etc_dir=$2; shift ;;
    --data-dir) data_dir=$2; shift ;;
    --systemd-dir) systemd_dir=$2; shift ;;
    --no-systemd) use_systemd=0 ;;
    --skip-packages) packages=0 ;;
    --advertise-address) advertise=$2; shift ;;
    --port) api_port=$2; shift ;;
    --kube-port) kube_port=$2; shift ;;
    --etcd) etcd=$2; shift ;;
    --cluster-cidr) cluster_cidr=$2; shift ;;
    --service-cidr) service_cidr=$2; shift ;;
    --server) server=$2; shift ;;
    --token) token=$2; shift ;;
    --token-ttl) token_ttl=$2; shift ;;
    --ca-data) ca_data=$2; shift ;;
    --ca-file) ca_file=$2; shift ;;
    --node-name) node_name=$2; shift ;;
    --node-ip) node_ip=$2; shift ;;
    --containerd-socket) containerd_socket=$2; shift ;;
    --runtime) runtime=$2; shift ;;
    --containerd-config) containerd_config=$2; shift ;;
    --containerd-root) containerd_root=$2; shift ;;
    --containerd-state) containerd_state=$2; shift ;;
    --cni-conf-dir) cni_conf_dir=$2; shift ;;
    --cni-bin-dir) cni_bin_dir=$2; shift ;;
    --crictl-config) crictl_config=$2; shift ;;
    --registry-insecure) registry_insecure=$2; shift ;;
    --control-plane-addresses) cp_addresses=$2; shift ;;
    --join-bundle) join_bundle=$2; shift ;;
    --kubelet-arg) kubelet_extra+=("$2"); shift ;;
    --proxy-arg) proxy_extra+=("$2"); shift ;;
    -h | --help) usage ;;
    *) die "unknown option $1 (install.sh --help)" ;;
  esac
  shift
done
bin=$prefix/bin
pki=$etc_dir/pki
[[ -n $images_dir ]] || images_dir=$bin_dir/images

# --- steps -------------------------------------------------------------------

need_root() {
  [[ $(id -u) == 0 ]] || die "run as root (sudo $0 $cmd ...)"
}

# install_packages PKG...: from the distribution, only what is missing.
install_packages() {
  ((packages)) || { say "skipping packages (--skip-packages): $*"; return 0; }
  command -v apt-get >/dev/null || die "no apt-get: install $* with your distribution's tools, then rerun with --skip-packages"
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  say "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# install_binaries NAME...: copy built binaries into $bin.
install_binaries() {
  local b
  mkdir -p "$bin"
  for b in "$@"; do
    [[ -x $bin_dir/$b ]] || die "$bin_dir/$b not found: build with 'make build' (or pass --bin-dir)"
    install -m 0755 "$bin_dir/$b" "$bin/$b.new"
    mv -f "$bin/$b.new" "$bin/$b"
  done
  say "installed ${*} into $bin"
}

# write_env COMPONENT ARGS...: the component's command line.
write_env() {
  local c=$1 unit=tugboat-$1
  shift
  [[ $c == tugboat ]] && unit=tugboat
  mkdir -p "$etc_dir"
  {
    echo "# Written by hack/install.sh. The command line of $c: edit, then"
    echo "# systemctl restart $unit"
    echo "ARGS=\"$*\""
  } >"$etc_dir/$c.env"
}

# install_units UNIT...: units from deploy/systemd, with this install's paths.
install_units() {
  ((use_systemd)) || return 0
  command -v systemctl >/dev/null || die "no systemctl: rerun with --no-systemd and start the components yourself"
  local u
  for u in "$@"; do
    sed -e "s|/usr/local/bin/|$bin/|g" -e "s|/etc/tugboat/|$etc_dir/|g" -e "s|/var/lib/tugboat/|$data_dir/|g" \
      "$units_src/$u" >"$systemd_dir/$u"
  done
  systemctl daemon-reload
}

start_units() {
  local u
  if ((use_systemd)); then
    systemctl enable --now "$@" >/dev/null
    for u in "$@"; do
      [[ $u == *.path ]] || systemctl restart "$u"
    done
    say "started $*"
  else
    say "--no-systemd: start these (each with its env file's ARGS):"
    for u in "$@"; do
      u=${u%.service}
      u=${u#tugboat-}
      local exe=$bin/$u
      [[ $u == etcd ]] && exe=/usr/bin/etcd
      if [[ -f $etc_dir/$u.env ]]; then
        echo "  $exe \$ARGS   # ARGS from $etc_dir/$u.env" >&2
      fi
    done
  fi
}

default_ip() {
  ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i+1); exit}}'
}

# wait_apiserver: until the admin can read the default namespace.
wait_apiserver() {
  local i
  for i in $(seq 1 120); do
    "$bin/tugctl" --config "$etc_dir/admin.config" get ns default >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "the apiserver does not answer at $(grep '^server:' "$etc_dir/admin.config"); see: journalctl -u tugboat-apiserver"
}

# join_command: a fresh join token and the worker's command line.
join_command() {
  [[ -f $etc_dir/admin.config ]] || die "$etc_dir/admin.config not found: run this on the control plane after 'install.sh control-plane'"
  local t srv
  t=$("$bin/tugctl" --config "$etc_dir/admin.config" token create --ttl "$token_ttl" --description "install.sh join-command") ||
    die "tugctl token create failed (is the apiserver up? journalctl -u tugboat-apiserver)"
  srv=$(awk '$1 == "server:" {print $2}' "$etc_dir/admin.config")
  # The cluster CIDR the controller-manager splits, if not the default.
  local cc extra=""
  cc=$(sed -n 's/.*--cluster-cidr \([^ "]*\).*/\1/p' "$etc_dir/controller-manager.env" 2>/dev/null | head -n1)
  [[ -n $cc && $cc != 10.244.0.0/16 ]] && extra=" --cluster-cidr $cc"
  echo "sudo hack/install.sh worker --server $srv --token $t --ca-data $(base64 -w0 "$pki/ca.crt")$extra"
}

# --- the highly available control plane (--etcd cluster, --join-bundle) ----

# What the first server writes for the others (in <etc-dir>) and the
# settings every server of the control plane shares (KEY=VALUE lines).
bundle_name=control-plane-join.tar.gz
cluster_conf=control-plane.conf

# is_ip ADDR: an IPv4 or IPv6 address (no port, no brackets).
is_ip() {
  local a=$1 o
  if [[ $a =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]]; then
    for o in "${BASH_REMATCH[@]:1}"; do ((10#$o <= 255)) || return 1; done
    return 0
  fi
  [[ $a == *:*:* && $a =~ ^[0-9a-fA-F:]+$ ]]
}

# hostport HOST PORT: HOST:PORT, [HOST]:PORT for IPv6.
hostport() {
  if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi
}

join_by() {
  local IFS=$1
  shift
  echo "$*"
}

# conf_get KEY FILE: the value of KEY=VALUE in FILE (read, never sourced).
conf_get() {
  awk -v k="$1" 'index($0, k "=") == 1 {print substr($0, length(k) + 2); exit}' "$2"
}

# cluster_members checks --control-plane-addresses and --advertise-address
# against it, and sets cp_ips (the servers in their order) and member
# (this server's etcd member: etcd-N for the Nth address).
cluster_members() {
  local a i seen=" "
  IFS=, read -r -a cp_ips <<<"$cp_addresses"
  ((${#cp_ips[@]})) || die "--control-plane-addresses: required with --etcd cluster: every control-plane server's address, comma-separated, this server's (--advertise-address) included, e.g. 10.0.0.11,10.0.0.12,10.0.0.13"
  for a in "${cp_ips[@]}"; do
    [[ -n $a ]] || die "--control-plane-addresses $cp_addresses: an empty entry"
    is_ip "$a" || die "--control-plane-addresses: $a is not an IP address (addresses only, without a port: the apiserver listens on --port, etcd on 2379 and 2380)"
    [[ $seen != *" $a "* ]] || die "--control-plane-addresses: $a is given twice"
    seen+="$a "
  done
  local n=${#cp_ips[@]}
  ((n >= 3 && n % 2 == 1)) || die "--control-plane-addresses: $n server(s); etcd needs an odd number, 3 or more, to keep a majority when one is lost (for one server: --etcd local)"
  member=""
  for i in "${!cp_ips[@]}"; do
    [[ ${cp_ips[$i]} == "$advertise" ]] && member=etcd-$((i + 1))
  done
  [[ -n $member ]] || die "--advertise-address $advertise is not in --control-plane-addresses $cp_addresses: this server must be one of them"
  # The address must be this server's own: etcd listens on it, and a
  # second server given the first one's address would claim its member.
  if command -v ip >/dev/null && ! ip -o addr show | awk '{split($4, a, "/"); print a[1]}' | grep -qxF "$advertise"; then
    die "--advertise-address $advertise is not an address of this server (ip addr): give this server's own, as listed in --control-plane-addresses"
  fi
}

# make_bundle writes <etc-dir>/control-plane-join.tar.gz (root only): the
# CAs with their keys, the service-account pair, the encryption key for
# Secrets and the shared settings, what every server must have alike.
make_bundle() {
  local b=$etc_dir/$bundle_name
  (umask 077 && tar -czf "$b.new" -C "$etc_dir" "$cluster_conf" pki/ca.crt pki/ca.key pki/etcd/ca.crt pki/etcd/ca.key \
    "pki/$sa_key" "pki/$sa_pub" pki/encryption.key) || die "writing $b failed (above)"
  mv -f "$b.new" "$b"
}
sa_key=sa.key
sa_pub=sa.pub

# first_server: the CAs, this server's certificates, the keys and settings
# of a new highly available control plane, and the bundle.
first_server() {
  local conf=$etc_dir/$cluster_conf
  if [[ -f $conf ]]; then
    [[ $(conf_get addresses "$conf") == "$cp_addresses" ]] ||
      die "$etc_dir holds a control plane of $(conf_get addresses "$conf"), not $cp_addresses: 'install.sh uninstall' first to make another"
    say "keeping the certificates and settings of this control plane ($conf)"
  elif [[ -f $pki/ca.crt ]]; then
    die "$pki already holds a cluster CA of a control plane installed without --etcd cluster; 'install.sh uninstall' first (a running single server is not turned into a cluster)"
  else
    "$bin/apiserver" pki init --dir "$pki" --server-ips "$cp_addresses" --server-names "$(hostname)" --etcd-ips "$advertise" >/dev/null
    (umask 077 && echo "key1:$(head -c 32 /dev/urandom | base64 -w0)" >"$pki/encryption.key")
    {
      echo "# Written by hack/install.sh control-plane --etcd cluster: what every server of this control plane shares."
      echo "addresses=$cp_addresses"
      echo "port=$api_port"
      echo "kube_port=$kube_port"
      echo "cluster_cidr=$cluster_cidr"
      echo "service_cidr=$service_cidr"
      echo "etcd_token=tugboat-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    } >"$conf"
    say "made the cluster CA, the etcd CA and this server's certificates in $pki"
  fi
  make_bundle
}

# read_bundle checks --join-bundle and the flags given with it, unpacks it
# into bundle_tmp (removed on exit) and takes the control plane's settings
# from it.
read_bundle() {
  local g
  for g in --control-plane-addresses --etcd --port --kube-port --cluster-cidr --service-cidr; do
    [[ $given != *" $g "* ]] || die "$g: with --join-bundle it comes from the bundle (the first server's settings); leave it out"
  done
  [[ -f $join_bundle ]] || die "--join-bundle $join_bundle: no such file (copy $bundle_name from the first server's $etc_dir: scp)"
  bundle_tmp=$(mktemp -d)
  trap 'rm -rf "$bundle_tmp"' EXIT
  if ! tar -xzf "$join_bundle" -C "$bundle_tmp" 2>/dev/null || [[ ! -f $bundle_tmp/$cluster_conf || ! -f $bundle_tmp/pki/ca.key || ! -f $bundle_tmp/pki/etcd/ca.key ]]; then
    die "--join-bundle $join_bundle: not a bundle of 'install.sh control-plane --etcd cluster' ($bundle_name with $cluster_conf and the CA keys)"
  fi
  local c=$bundle_tmp/$cluster_conf
  cp_addresses=$(conf_get addresses "$c") api_port=$(conf_get port "$c") kube_port=$(conf_get kube_port "$c")
  cluster_cidr=$(conf_get cluster_cidr "$c") service_cidr=$(conf_get service_cidr "$c")
  cluster_members
  if [[ -f $pki/ca.crt ]] && ! cmp -s "$pki/ca.crt" "$bundle_tmp/pki/ca.crt"; then
    die "$pki already holds another cluster's CA: 'install.sh uninstall' first"
  fi
}

# join_server: another server of the control plane the bundle describes:
# its CAs and keys, its settings, and certificates of its own.
join_server() {
  mkdir -p "$pki/etcd"
  local f
  for f in ca.crt ca.key etcd/ca.crt etcd/ca.key "$sa_key" "$sa_pub" encryption.key; do
    install -m 0600 "$bundle_tmp/pki/$f" "$pki/$f"
  done
  chmod 0644 "$pki/ca.crt" "$pki/etcd/ca.crt" "$pki/$sa_pub"
  install -m 0644 "$bundle_tmp/$cluster_conf" "$etc_dir/$cluster_conf"
  "$bin/apiserver" pki init --existing-ca --dir "$pki" --server-ips "$cp_addresses" --server-names "$(hostname)" \
    --etcd-ips "$advertise" >/dev/null || die "making this server's certificates from the bundle's CAs failed (above)"
  say "this server's certificates in $pki, signed by the bundle's CAs"
}

# --- commands ----------------------------------------------------------------

# write_components LISTEN SERVERS ETCD_FLAGS...: the apiserver (listening
# on LISTEN, on the etcd of ETCD_FLAGS), the scheduler and the
# controller-manager (reaching SERVERS), the admin's tugctl config (every
# address in SERVERS) and kubeconfig (this server's).
write_components() {
  local listen=$1 servers=$2
  shift 2
  write_env apiserver --listen "$listen" --kube-listen "0.0.0.0:$kube_port" --metrics-listen 127.0.0.1:9443 --pki-dir "$pki" \
    --encryption-key-file "$pki/encryption.key" --service-cidr "$service_cidr" "$@"
  write_env scheduler --server "$servers" --ca-file "$pki/ca.crt" --cert-file "$pki/scheduler.crt" \
    --key-file "$pki/scheduler.key" --metrics-listen 127.0.0.1:10259
  write_env controller-manager --server "$servers" --ca-file "$pki/ca.crt" --cert-file "$pki/controller-manager.crt" \
    --key-file "$pki/controller-manager.key" --metrics-listen 127.0.0.1:10257 --cluster-cidr "$cluster_cidr"
  local admin_server=$servers
  [[ $admin_server == 127.0.0.1:* ]] && admin_server=$(hostport "$advertise" "$api_port")
  (umask 077 && cat >"$etc_dir/admin.config" <<CFG
# Written by hack/install.sh: admin (system:masters). Use it with
#   tugctl --config $etc_dir/admin.config ...   or   export TUGBOAT_CONFIG=$etc_dir/admin.config
server: $admin_server
caFile: $pki/ca.crt
certFile: $pki/admin.crt
keyFile: $pki/admin.key
CFG
  )
  # shellcheck source=lib/kubeconfig.sh
  . "$repo/hack/lib/kubeconfig.sh"
  write_kubeconfig "$etc_dir/admin.kubeconfig" "$(hostport "$advertise" "$kube_port")" "$pki/ca.crt" "$pki/admin.crt" "$pki/admin.key" \
    "# Written by hack/install.sh: admin (system:masters), for kubectl: export KUBECONFIG=$etc_dir/admin.kubeconfig"
}

# stop_distribution_etcd: the package's own etcd serves plaintext on the
# same ports to every local user.
stop_distribution_etcd() {
  if ((use_systemd)) && systemctl list-unit-files etcd.service >/dev/null 2>&1; then
    systemctl disable --now etcd.service >/dev/null 2>&1 || true
    say "stopped and disabled the distribution's etcd.service (plaintext); Tugboat's etcd is tugboat-etcd"
  fi
}

control_plane() {
  need_root
  [[ -n $advertise ]] || advertise=$(default_ip)
  [[ -n $advertise ]] || die "no default route to guess the address workers reach the apiserver at: pass --advertise-address IP"
  if [[ -n $join_bundle ]]; then
    read_bundle
    etcd=cluster
  elif [[ $etcd == cluster ]]; then
    cluster_members
  elif [[ -n $cp_addresses ]]; then
    die "--control-plane-addresses is for --etcd cluster (a control plane of several servers)"
  fi
  case $etcd in
    embedded) install_packages ca-certificates ;;
    local | cluster) install_packages ca-certificates etcd-server ;;
    *) die "--etcd $etcd: want embedded (inside the apiserver), local (Debian's etcd-server on 127.0.0.1:2379, TLS) or cluster (one etcd member per server of --control-plane-addresses, TLS)" ;;
  esac
  install_binaries apiserver scheduler controller-manager tugctl
  mkdir -p "$etc_dir" "$data_dir"
  chmod 700 "$data_dir"
  if [[ $etcd == cluster ]]; then
    cluster_control_plane
    return
  fi
  if [[ ! -f $pki/ca.crt ]]; then
    "$bin/apiserver" pki init --dir "$pki" --server-ips "$advertise" --server-names "$(hostname)" >/dev/null
    say "made the cluster CA and certificates in $pki"
  elif [[ ! -f $pki/etcd/ca.crt ]]; then
    "$bin/apiserver" pki init --dir "$pki" --etcd-only >/dev/null
    say "made the etcd CA and certificates in $pki/etcd"
  fi
  if [[ ! -f $pki/encryption.key ]]; then
    (umask 077 && echo "key1:$(head -c 32 /dev/urandom | base64 -w0)" >"$pki/encryption.key")
  fi
  local etcd_flags=(--data-dir "$data_dir/etcd") units=()
  if [[ $etcd == local ]]; then
    etcd_flags=(--etcd-servers https://127.0.0.1:2379)
    local e=$pki/etcd peer=https://127.0.0.1:2380
    write_env etcd --name tugboat --data-dir "$data_dir/etcd-local" \
      --listen-client-urls https://127.0.0.1:2379 --advertise-client-urls https://127.0.0.1:2379 \
      --cert-file "$e/server.crt" --key-file "$e/server.key" --trusted-ca-file "$e/ca.crt" --client-cert-auth \
      --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "tugboat=$peer" \
      --peer-cert-file "$e/peer.crt" --peer-key-file "$e/peer.key" --peer-trusted-ca-file "$e/ca.crt" --peer-client-cert-auth
    units+=(tugboat-etcd.service)
    stop_distribution_etcd
  fi
  write_components "0.0.0.0:$api_port" "127.0.0.1:$api_port" "${etcd_flags[@]}"
  units+=(tugboat-apiserver.service tugboat-scheduler.service tugboat-controller-manager.service)
  install_units "${units[@]}"
  start_units "${units[@]}"
  if ((use_systemd)); then
    wait_apiserver
    say "control plane up at $advertise:$api_port (TLS, RBAC). Admin: export TUGBOAT_CONFIG=$etc_dir/admin.config"
    say "kubectl: export KUBECONFIG=$etc_dir/admin.kubeconfig (the Kubernetes API at https://$advertise:$kube_port)"
    say "join a worker (one token per worker; 'install.sh join-command' makes another):"
    join_command
  fi
}

# cluster_control_plane: one server of a highly available control plane,
# the first (--control-plane-addresses) or another (--join-bundle).
cluster_control_plane() {
  if [[ -n $join_bundle ]]; then
    join_server
  else
    first_server
  fi
  local conf=$etc_dir/$cluster_conf e=$pki/etcd i initial=() endpoints=() servers=()
  for i in "${!cp_ips[@]}"; do
    initial+=("etcd-$((i + 1))=https://$(hostport "${cp_ips[$i]}" 2380)")
    endpoints+=("https://$(hostport "${cp_ips[$i]}" 2379)")
    servers+=("$(hostport "${cp_ips[$i]}" "$api_port")")
  done
  local me_client me_peer
  me_client=https://$(hostport "$advertise" 2379) me_peer=https://$(hostport "$advertise" 2380)
  # Every member is started with the whole membership (etcd's static
  # bootstrap): it waits for a majority of them, then they elect a leader.
  write_env etcd --name "$member" --data-dir "$data_dir/etcd-member" \
    --listen-client-urls "$me_client,https://127.0.0.1:2379" --advertise-client-urls "$me_client" \
    --cert-file "$e/server.crt" --key-file "$e/server.key" --trusted-ca-file "$e/ca.crt" --client-cert-auth \
    --listen-peer-urls "$me_peer" --initial-advertise-peer-urls "$me_peer" \
    --initial-cluster "$(join_by , "${initial[@]}")" --initial-cluster-state new \
    --initial-cluster-token "$(conf_get etcd_token "$conf")" \
    --peer-cert-file "$e/peer.crt" --peer-key-file "$e/peer.key" --peer-trusted-ca-file "$e/ca.crt" --peer-client-cert-auth
  stop_distribution_etcd
  # The apiserver listens on this server's address, which its identity
  # Lease then names for the other apiservers and `tugctl get cs`; it uses
  # every member, and every client is given every apiserver.
  write_components "$(hostport "$advertise" "$api_port")" "$(join_by , "${servers[@]}")" --etcd-servers "$(join_by , "${endpoints[@]}")"
  local units=(tugboat-etcd.service tugboat-apiserver.service tugboat-scheduler.service tugboat-controller-manager.service)
  install_units "${units[@]}"
  start_units "${units[@]}"
  if [[ -z $join_bundle ]]; then
    local b=$etc_dir/$bundle_name ip
    say "first server ($member) of $cp_addresses. etcd, and so the API, answer once a majority of the servers run."
    say "copy $b (the CA keys: root only) to every other server and join it there, one after the other or at once:"
    for ip in "${cp_ips[@]}"; do
      [[ $ip == "$advertise" ]] && continue
      local h=$ip
      [[ $ip == *:* ]] && h="[$ip]"
      echo "  scp $b root@$h:/root/"
      echo "  (on $ip) sudo hack/install.sh control-plane --join-bundle /root/$bundle_name --advertise-address $ip"
    done
    say "then delete it everywhere (rm $b /root/$bundle_name); on any server, 'install.sh join-command' prints a worker's command"
    return 0
  fi
  if ((use_systemd)); then
    wait_apiserver
    say "server $member up: the control plane at $(join_by , "${servers[@]}") (TLS, RBAC). Admin: export TUGBOAT_CONFIG=$etc_dir/admin.config"
    say "once every server has joined, delete the bundle ($join_bundle here, and the first server's copy). Join a worker:"
    join_command
  fi
}

# containerd_cri IMPORT_DIR: a worker's containerd set up for the kubelet's
# CRI backend — its config (tugboat-init containerd-config, the renderer
# the compose nodes and the test cluster use), the sandbox (pause) image
# in the kubelet's import folder (never pulled), crictl and its config.
containerd_cri() {
  local import_dir=$1 mark="# containerd for a Tugboat kubelet (CRI)"
  [[ -x $bin_dir/tugboat-init ]] || die "$bin_dir/tugboat-init not found: build with 'make build' (or pass --bin-dir)"
  [[ -f $images_dir/pause.tar ]] || die "$images_dir/pause.tar not found: the runtime's sandbox image; make it with 'make images' (or pass --images-dir)"
  if [[ -f $containerd_config ]] && ! head -n1 "$containerd_config" | grep -qF "$mark"; then
    cp -p "$containerd_config" "$containerd_config.orig"
    say "kept the existing $containerd_config as $containerd_config.orig"
  fi
  local reg=()
  [[ -n $registry_insecure ]] && reg=(--registry-insecure "$registry_insecure" --registry-config-dir "$(dirname "$containerd_config")/certs.d")
  mkdir -p "$cni_conf_dir"
  "$bin_dir/tugboat-init" containerd-config -o "$containerd_config" --root "$containerd_root" --state "$containerd_state" \
    --address "$containerd_socket" --cni-bin-dir "$cni_bin_dir" --cni-conf-dir "$cni_conf_dir" "${reg[@]}" ||
    die "writing containerd's config failed (above)"
  say "wrote $containerd_config (CRI on, sandbox image tugboat.local/pause:1.0, CNI $cni_bin_dir + $cni_conf_dir)"
  mkdir -p "$import_dir"
  install -m 0644 "$images_dir/pause.tar" "$import_dir/.pause.tar.new"
  mv -f "$import_dir/.pause.tar.new" "$import_dir/pause.tar"
  # crictl, the runtime layer's own tool: bin/'s, the static build's
  # (hack/build-static.sh), or this host's.
  local c
  for c in "$bin_dir/crictl" "${TUGBOAT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tugboat}"/static/crictl-*/crictl "$(command -v crictl || true)"; do
    [[ -n $c && -x $c ]] || continue
    [[ $(readlink -f "$c") == $(readlink -f "$bin/crictl" 2>/dev/null) ]] || install -m 0755 "$c" "$bin/crictl"
    break
  done
  if [[ -x $bin/crictl ]]; then
    if [[ ! -f $crictl_config ]] || head -n1 "$crictl_config" | grep -qF "# Written by hack/install.sh"; then
      mkdir -p "$(dirname "$crictl_config")"
      printf '# Written by hack/install.sh: crictl talks to the kubelet'"'"'s runtime.\nruntime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 10\n' \
        "$containerd_socket" "$containerd_socket" >"$crictl_config"
    else
      say "left $crictl_config alone (not written by install.sh); it should name unix://$containerd_socket"
    fi
  else
    say "no crictl to install (hack/build-static.sh builds one into ~/.cache/tugboat/static; copy it into $bin_dir)"
  fi
}

worker() {
  need_root
  [[ -n $server ]] || die "--server HOST:PORT required (the control plane's apiserver)"
  [[ -n $token ]] || die "--token required: on the control plane run 'install.sh join-command' (or tugctl token create)"
  install_packages ca-certificates containerd runc containernetworking-plugins iptables nftables conntrack
  install_binaries kubelet proxy
  mkdir -p "$pki" "$data_dir"
  chmod 700 "$data_dir"
  if [[ -n $ca_data ]]; then
    base64 -d <<<"$ca_data" >"$pki/ca.crt.new" || die "--ca-data is not base64"
    mv -f "$pki/ca.crt.new" "$pki/ca.crt"
  elif [[ -n $ca_file ]]; then
    cp "$ca_file" "$pki/ca.crt"
  elif [[ ! -f $pki/ca.crt ]]; then
    die "the cluster CA is needed to trust the apiserver: --ca-data (printed by join-command) or --ca-file"
  fi
  grep -q "BEGIN CERTIFICATE" "$pki/ca.crt" || die "$pki/ca.crt is not a PEM certificate"
  local root=$data_dir/kubelet certs=$data_dir/kubelet/pki
  local ip_flag=() reg_flag=() rt_flags=()
  [[ -n $node_ip ]] && ip_flag=(--node-ip "$node_ip")
  [[ -n $registry_insecure ]] && reg_flag=(--registry-insecure "$registry_insecure")
  case $runtime in
    cri)
      containerd_cri "$root/images"
      rt_flags=(--runtime cri --container-runtime-endpoint "unix://$containerd_socket" --cni-conf-dir "$cni_conf_dir")
      reg_flag=() # containerd's hosts.toml does it
      ;;
    containerd) rt_flags=(--runtime containerd --containerd-socket "$containerd_socket") ;;
    *) die "--runtime $runtime: want cri (over CRI, the default) or containerd (containerd's own API)" ;;
  esac
  if ((use_systemd)); then
    systemctl enable containerd >/dev/null 2>&1 || true
    systemctl restart containerd || die "containerd does not start with $containerd_config: journalctl -u containerd"
  fi
  # The token is spent once on the node's certificate (kept in $certs,
  # renewed by the kubelet); it stays in the env file only until then.
  write_env kubelet --server "$server" --ca-file "$pki/ca.crt" --bootstrap-token "$token" --cert-dir "$certs" \
    --node-name "$node_name" "${ip_flag[@]}" --root-dir "$root" "${rt_flags[@]}" \
    "${reg_flag[@]}" --cluster-cidr "$cluster_cidr" --metrics-listen 127.0.0.1:10248 "${kubelet_extra[@]}"
  chmod 600 "$etc_dir/kubelet.env"
  # The proxy uses the node's own certificate (nodes may read services,
  # endpoints and nodes); tugboat-proxy-cert.path restarts it when the
  # kubelet renews the certificate.
  write_env proxy --server "$server" --ca-file "$pki/ca.crt" --cert-file "$certs/node.crt" --key-file "$certs/node.key" \
    --node-name "$node_name" "${ip_flag[@]}" --cluster-cidr "$cluster_cidr" --metrics-listen 127.0.0.1:10249 "${proxy_extra[@]}"
  install_units tugboat-kubelet.service tugboat-proxy.service tugboat-proxy-cert.path tugboat-proxy-restart.service
  start_units tugboat-kubelet.service tugboat-proxy.service tugboat-proxy-cert.path
  say "worker $node_name: the kubelet joins $server with the token; watch it with: tugctl get nodes"
}

all_in_one() {
  need_root
  install_packages ca-certificates containerd runc containernetworking-plugins iptables nftables conntrack
  install_binaries tugboat tugctl
  mkdir -p "$data_dir"
  # The kubelet drives a containerd of its own over CRI (in
  # $data_dir/containerd); its sandbox (pause) image and the example
  # images come from bin/images (make images).
  local img_flag=()
  if compgen -G "$images_dir/*.tar" >/dev/null; then
    mkdir -p "$data_dir/images"
    cp -f "$images_dir"/*.tar "$data_dir/images/"
    img_flag=(--import-images "$data_dir/images")
  fi
  [[ -f $data_dir/images/pause.tar || $runtime != cri ]] || say "no $images_dir/pause.tar (make images): pods wait for the sandbox image until it is imported"
  write_env tugboat up --data-dir "$data_dir" --admin-config "$etc_dir/admin.config" --runtime "$runtime" \
    --containerd-socket "$containerd_socket" "${img_flag[@]}" "${kubelet_extra[@]}"
  install_units tugboat.service
  start_units tugboat.service
  ((use_systemd)) && say "single-node cluster starting (journalctl -u tugboat); admin: export TUGBOAT_CONFIG=$etc_dir/admin.config"
  return 0
}

uninstall() {
  need_root
  local u
  if ((use_systemd)) && command -v systemctl >/dev/null; then
    for u in tugboat.service tugboat-kubelet.service tugboat-proxy.service tugboat-proxy-cert.path \
      tugboat-proxy-restart.service tugboat-scheduler.service tugboat-controller-manager.service tugboat-apiserver.service \
      tugboat-etcd.service; do
      systemctl disable --now "$u" >/dev/null 2>&1 || true
      rm -f "$systemd_dir/$u"
    done
    systemctl daemon-reload
  fi
  # What the node put on the host, with the flags it ran with: its pods
  # (containers, CNI DEL, network namespaces, mounts, cgroups), the CNI
  # config, the bridge and the tables (kubelet --cleanup, tugboat down),
  # then the proxy's table, routes and DNS address.
  if [[ -f $etc_dir/kubelet.env && -x $bin/kubelet ]]; then
    # shellcheck disable=SC1091,SC2086
    (. "$etc_dir/kubelet.env" && "$bin/kubelet" --cleanup $ARGS) || say "kubelet --cleanup failed (above); removing the rest"
  fi
  if [[ -f $etc_dir/tugboat.env && -x $bin/tugboat ]]; then
    # shellcheck disable=SC1091,SC2086
    (. "$etc_dir/tugboat.env" && set -- $ARGS && shift && "$bin/tugboat" down "$@") || say "tugboat down failed (above); removing the rest"
  fi
  [[ -x $bin/proxy ]] && "$bin/proxy" --cleanup >/dev/null 2>&1 || true
  for u in apiserver scheduler controller-manager kubelet proxy tugctl tugboat crictl; do rm -f "$bin/$u"; done
  if [[ -f $crictl_config ]] && head -n1 "$crictl_config" | grep -qF "# Written by hack/install.sh"; then
    rm -f "$crictl_config"
  fi
  # Pod network namespaces are bind mounts under the data dir.
  awk -v d="$data_dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount -l
  rm -rf "$etc_dir" "$data_dir"
  say "removed Tugboat (units, binaries, $etc_dir, $data_dir); containerd (with the config install.sh wrote: $containerd_config) and the packages stay"
}

if [[ $cmd != control-plane ]]; then
  for g in --control-plane-addresses --join-bundle; do
    [[ $given != *" $g "* ]] || die "$g is an option of 'install.sh control-plane', not of $cmd"
  done
fi
case $cmd in
  control-plane) control_plane ;;
  worker) worker ;;
  join-command) join_command ;;
  all-in-one) all_in_one ;;
  uninstall) uninstall ;;
  *) die "unknown command $cmd (install.sh --help)" ;;
esac
