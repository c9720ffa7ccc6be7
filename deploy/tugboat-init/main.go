// Command tugboat-init is the entrypoint of Tugboat's docker-compose
// images. They are built FROM scratch with static binaries and have no
// shell, so the little a container must do before (or around) its real
// program is done here, in Go:
//
//	tugboat-init node [flags]      prepare a node container (read-write /sys
//	                               and cgroups, shared mounts, sysctls,
//	                               containerd config, image import folder),
//	                               then run containerd, the
//	                               kubelet and the proxy, restarting any that
//	                               exits, until SIGTERM
//	tugboat-init containerd-config [flags]
//	                               write a node's containerd config (CRI on,
//	                               Tugboat's sandbox image and CNI folders):
//	                               hack/install.sh's for a worker
//	tugboat-init registry [flags]  run the distribution registry and push the
//	                               image archives bundled in the image into it
//	tugboat-init pki [flags]       make the cluster CA and certificates once
//	                               (nothing when the CA already exists)
//	tugboat-init probe URL         healthcheck: exit 0 iff URL answers 2xx
//
// It is meant to run under a real PID 1 that reaps orphans (compose's
// `init: true`, docker's bundled tini): containerd's shims re-parent there.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tugboat/tugboat/api/component"
)

const usage = `usage: tugboat-init node|containerd-config|registry|pki|probe [flags]
  node       prepare a node container and supervise containerd, kubelet, proxy
  containerd-config  write a node's containerd config (CRI, sandbox image, CNI folders)
  registry   run the registry and push the bundled image archives into it
  pki        make the cluster certificates unless the CA exists
  probe URL  exit 0 iff URL answers 2xx (container healthchecks)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var run func(ctx context.Context, args []string) error
	switch cmd {
	case "node":
		run = runNode
	case "containerd-config":
		run = runContainerdConfig
	case "registry":
		run = runRegistry
	case "pki":
		run = runPKI
	case "probe":
		run = runProbe
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "tugboat-init: unknown command %q\n%s", cmd, usage)
		os.Exit(2)
	}
	component.Main("tugboat-init "+cmd, func(ctx context.Context) error { return run(ctx, args) })
}
