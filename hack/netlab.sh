#!/usr/bin/env bash
# netlab.sh makes, by hand, the same multi-host network lab that e2e tests
# make with the Go package e2e/netlab: N "hosts" as network namespaces on a
# bridge that lives in a "switch" namespace of its own, plus one veth from
# the root namespace into the switch. Same names, same addresses:
#
#   root netns   tb-<name>-rt   <subnet>.1     (only link added to the root netns)
#   tb-<name>-sw br0 bridge with ports rt, h1..hN
#   tb-<name>-hI lo up, eth0 <subnet>.(10+I), ip_forward=1, no default route
#
# Usage (as root):
#   hack/netlab.sh up N [NAME [SUBNET]]   make a lab of N hosts (NAME default "lab",
#                                         SUBNET default: first free 10.123.X.0/24)
#   hack/netlab.sh down [NAME]            remove it: kill processes in its
#                                         namespaces, delete them and the root link;
#                                         idempotent
#   hack/netlab.sh exec NAME I CMD...     run CMD in host I's network namespace only
#                                         (nsenter --net, keeps the mount namespace,
#                                         as the Go package does)
#   hack/netlab.sh ls                     list labs
#
# Labs made here carry a marker in /run/tugboat-netlab, so the Go package's
# stale cleanup (which removes labs of dead test processes) leaves them
# alone; remove them with "down". Env: NETLAB_PREFIX (default "tb-").
set -euo pipefail

prefix=${NETLAB_PREFIX:-tb-}
state=/run/tugboat-netlab

die() { echo "netlab: $*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }

need_root() { [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, veths)"; }

check_name() {
  [[ $1 =~ ^[a-z0-9]{1,8}$ ]] || die "NAME '$1' must be 1-8 characters of [a-z0-9]"
  [[ $prefix =~ ^[a-z][a-z0-9]*-$ ]] || die "NETLAB_PREFIX '$prefix' must match [a-z][a-z0-9]*-"
  (( ${#prefix} + ${#1} + 3 <= 15 )) || die "prefix+name '$prefix$1' too long for an interface name"
}

# setup_lock serialises with other netlab.sh runs and the Go package.
setup_lock() {
  mkdir -p "$state"
  exec 9>"$state/setup.lock"
  flock 9
}

ip2int() { local IFS=.; set -- $1; echo $(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 )); }
int2ip() { echo "$(( ($1 >> 24) & 255 )).$(( ($1 >> 16) & 255 )).$(( ($1 >> 8) & 255 )).$(( $1 & 255 ))"; }

# used_prefixes prints the root netns's IPv4 route destinations (all tables,
# no default) and address prefixes, one CIDR a line.
used_prefixes() {
  ip -4 route show table all | awk '
    $1 ~ /^(local|broadcast|unicast|blackhole|unreachable|prohibit|throw|multicast|anycast|nat)$/ { print $2; next }
    { print $1 }' | grep -v '^default$' || true
  ip -4 -o addr show | awk '{ print $4 }'
}

# overlaps A/a B/b: true when the two prefixes share an address.
overlaps() {
  local a=${1%/*} al=32 b=${2%/*} bl=32
  [[ $1 == */* ]] && al=${1#*/}
  [[ $2 == */* ]] && bl=${2#*/}
  local l=$(( al < bl ? al : bl ))
  local mask=$(( l == 0 ? 0 : (0xffffffff << (32 - l)) & 0xffffffff ))
  (( ($(ip2int "$a") & mask) == ($(ip2int "$b") & mask) ))
}

subnet_free() {
  local u
  while read -r u; do
    [[ -n $u ]] || continue
    overlaps "$1" "$u" && { echo "$u"; return 1; }
  done < <(used_prefixes)
  return 0
}

pick_subnet() {
  local x
  for x in $(seq 0 255); do
    subnet_free "10.123.$x.0/24" >/dev/null && { echo "10.123.$x.0/24"; return; }
  done
  die "no free /24 in 10.123.0.0/16"
}

cmd_up() {
  local n=${1:-} name=${2:-lab} subnet=${3:-}
  [[ $n =~ ^[0-9]+$ ]] && (( n >= 1 )) || usage
  check_name "$name"
  need_root
  local id=$prefix$name sw=$prefix$name-sw
  setup_lock
  [[ -e /run/netns/$sw ]] && die "lab $id exists (hack/netlab.sh down $name)"
  ip link show "$id-rt" >/dev/null 2>&1 && die "link $id-rt exists (hack/netlab.sh down $name)"
  if [[ -z $subnet ]]; then
    subnet=$(pick_subnet)
  else
    [[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || die "SUBNET '$subnet' must be an IPv4 CIDR"
    local u
    u=$(subnet_free "$subnet") || die "SUBNET $subnet overlaps $u in the root netns"
  fi
  local bits=${subnet#*/} base
  base=$(ip2int "${subnet%/*}")
  (( (base & ((1 << (32 - bits)) - 1)) == 0 )) || die "SUBNET $subnet has host bits set"
  (( 10 + n + 2 <= (1 << (32 - bits)) )) || die "SUBNET $subnet too small for $n hosts"

  # Mark it manual first, so a concurrent stale cleanup never takes a
  # half-made lab for a dead one; undo everything if a step fails.
  echo "subnet=$subnet hosts=$n" >"$state/$id.manual"
  trap 'echo "netlab: up failed, removing $id" >&2; down_locked "$name"' ERR

  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up

  ip link add "$id-rt" type veth peer name rt netns "$sw"
  ip -n "$sw" link set rt master br0 up
  echo 1 >"/proc/sys/net/ipv6/conf/$id-rt/disable_ipv6" 2>/dev/null || true
  echo 0 >"/proc/sys/net/ipv4/conf/$id-rt/forwarding"
  ip addr add "$(int2ip $((base + 1)))/$bits" dev "$id-rt"
  ip link set "$id-rt" up

  local i h
  for i in $(seq 1 "$n"); do
    h=$id-h$i
    ip netns add "$h"
    ip -n "$sw" link add "h$i" type veth peer name eth0 netns "$h"
    ip -n "$sw" link set "h$i" master br0 up
    ip -n "$h" link set lo up
    ip -n "$h" addr add "$(int2ip $((base + 10 + i)))/$bits" dev eth0
    ip -n "$h" link set eth0 up
    nsenter --net="/run/netns/$h" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward'
  done
  trap - ERR
  echo "netlab: $id up: subnet $subnet, root $(int2ip $((base + 1))) on $id-rt"
  for i in $(seq 1 "$n"); do
    echo "  $id-h$i  $(int2ip $((base + 10 + i)))"
  done
}

# down_locked removes lab NAME; the setup lock is held.
down_locked() {
  local name=$1 id=$prefix$1 ns pids
  if [[ -d /run/netns ]]; then
    for ns in $(ls /run/netns); do
      [[ $ns =~ ^$id-(sw|h[0-9]+)$ ]] || continue
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      if [[ -n $pids ]]; then
        echo "netlab: killing processes in $ns: $(echo $pids)"
        kill -9 $pids 2>/dev/null || true
      fi
      ip netns del "$ns" 2>/dev/null || rm -f "/run/netns/$ns"
    done
  fi
  if ip link show "$id-rt" >/dev/null 2>&1; then
    ip link del "$id-rt"
  fi
  rm -f "$state/$id.manual"
}

cmd_down() {
  local name=${1:-lab}
  check_name "$name"
  need_root
  setup_lock
  down_locked "$name"
  echo "netlab: $prefix$name down"
}

cmd_exec() {
  (( $# >= 3 )) || usage
  local name=$1 i=$2; shift 2
  check_name "$name"
  [[ $i =~ ^[0-9]+$ ]] || usage
  local path=/run/netns/$prefix$name-h$i
  [[ -e $path ]] || die "no host $prefix$name-h$i"
  exec nsenter --net="$path" -- "$@"
}

cmd_ls() {
  local f id
  for f in "$state"/*.manual; do
    [[ -e $f ]] || continue
    id=$(basename "$f" .manual)
    echo "$id (manual) $(cat "$f")"
  done
  for f in "$state"/*.lock; do
    [[ -e $f && $(basename "$f") != setup.lock ]] || continue
    id=$(basename "$f" .lock)
    if flock -n "$f" true 2>/dev/null; then
      echo "$id (stale: its test process is gone)"
    else
      echo "$id (test, pid $(cat "$f" 2>/dev/null | head -1))"
    fi
  done
  ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix" | sed 's/^/  netns /' || true
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  ls) cmd_ls ;;
  -h|--help|help) usage 0 ;;
  *) usage ;;
esac
