package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd"
)

// The floor: what starting a pod costs without a kubelet, done by a shell
// script in the node's network namespace with the same containerd: a
// network namespace (ip netns add), CNI ADD (the bridge plugin with
// host-local IPAM and, unless -floor-masq=false, ipMasq: the plugin's own
// per-pod masquerade rules, where the kubelet has one node rule), and
// `ctr run -d` of busybox httpd in it. The containers' cgroups go under the
// test cluster's own (/tugboat-e2e/<run>/floor, removed with the cluster),
// not containerd's default /<namespace>, which would stay behind in every
// hierarchy.

const floorNS = "floor"

const floorConf = `{
  "cniVersion": "1.0.0",
  "name": "floor",
  "type": "bridge",
  "bridge": "fl0",
  "isGateway": true,
  "ipMasq": %t,
  "hairpinMode": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.254.0.0/16"}]], "dataDir": "%s"}
}`

const floorScript = `
set -e
one() {
  ip netns add "$PREFIX$1"
  CNI_COMMAND=ADD CNI_CONTAINERID="$PREFIX$1" CNI_NETNS="/var/run/netns/$PREFIX$1" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni \
    /usr/lib/cni/bridge <"$CONF" >/dev/null
  ctr -a "$SOCK" -n "$NS" run -d --cgroup "$CGROUP/$PREFIX$1" --with-ns "network:/var/run/netns/$PREFIX$1" "$IMAGE" "$PREFIX$1" httpd -f -p 80 >/dev/null
}
for i in $(seq "$FIRST" "$LAST"); do one "$i" & done
wait
`

const floorCleanup = `
for i in $(seq "$FIRST" "$LAST"); do
  ctr -a "$SOCK" -n "$NS" task rm -f "$PREFIX$i" >/dev/null 2>&1 || true
  ctr -a "$SOCK" -n "$NS" container rm "$PREFIX$i" >/dev/null 2>&1 || true
  CNI_COMMAND=DEL CNI_CONTAINERID="$PREFIX$i" CNI_NETNS="/var/run/netns/$PREFIX$i" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni \
    /usr/lib/cni/bridge <"$CONF" >/dev/null 2>&1 || true
  ip netns del "$PREFIX$i" 2>/dev/null || true
done
`

// floorEnv prepares the floor (CNI config, image in its own containerd
// namespace) and returns a function running a script with the pod indices
// first..last, and a cleanup.
func (b *bench) floorEnv(ctx context.Context) (func(body string, first, last int) (time.Duration, error), func(), error) {
	dir, err := os.MkdirTemp("", "tugboat-floor")
	if err != nil {
		return nil, nil, err
	}
	conf := filepath.Join(dir, "floor.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(floorConf, b.floorMasq, filepath.Join(dir, "ipam"))), 0o644); err != nil {
		return nil, nil, err
	}
	if err := b.importFloorImage(ctx); err != nil {
		return nil, nil, err
	}
	env := []string{
		"CONF=" + conf, "SOCK=" + b.node.Containerd.Address, "NS=" + floorNS, "IMAGE=" + images.BusyboxRef,
		"PREFIX=" + b.c.ID + "-fl", "PATH=" + os.Getenv("PATH"),
		"CGROUP=" + filepath.Join(filepath.Dir(b.node.CgroupRoot), "floor"),
	}
	maxIndex := 0
	script := func(body string, first, last int) (time.Duration, error) {
		maxIndex = max(maxIndex, last)
		cmd := exec.Command("bash", "-c", body)
		cmd.Env = append(env, fmt.Sprintf("FIRST=%d", first), fmt.Sprintf("LAST=%d", last))
		start := time.Now()
		err := b.node.Host.Run(ctx, cmd)
		took := time.Since(start)
		if cmd.ProcessState != nil {
			// bash and everything it waited for: ip, the plugins, ctr.
			b.scriptCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		return took, err
	}
	cleanup := func() {
		_, _ = script(floorCleanup, 0, maxIndex)
		_ = b.node.Host.Run(ctx, exec.Command("ip", "link", "del", "fl0"))
		os.RemoveAll(dir)
	}
	return script, cleanup, nil
}

func (b *bench) importFloorImage(ctx context.Context) error {
	rt, err := containerd.New(containerd.Config{Address: b.node.Containerd.Address, Namespace: floorNS}, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	path, err := b.bins.Image(ctx, "busybox")
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = rt.ImportImage(ctx, f)
	return err
}
