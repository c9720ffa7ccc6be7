package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/tugboat/tugboat/internal/containerdconfig"
)

// runContainerdConfig writes the containerd config of a Tugboat node
// (package containerdconfig) for a host's own containerd: what
// hack/install.sh gives a worker's containerd, the same text the compose
// node image and the test cluster run, so the three cannot drift. With
// --registry-insecure it writes a hosts.toml per registry into
// --registry-config-dir too. -o - prints the config.
func runContainerdConfig(_ context.Context, args []string) error {
	var o containerdconfig.Options
	var out, registries string
	fl := flag.NewFlagSet("tugboat-init containerd-config", flag.ContinueOnError)
	fl.StringVar(&out, "o", "/etc/containerd/config.toml", "where to write the config (- for stdout)")
	fl.StringVar(&o.Root, "root", "/var/lib/containerd", "containerd's root")
	fl.StringVar(&o.State, "state", "/run/containerd", "containerd's state folder (its socket is containerd.sock in it)")
	fl.StringVar(&o.Address, "address", "", "containerd's socket (default <state>/containerd.sock)")
	fl.StringVar(&o.SandboxImage, "sandbox-image", containerdconfig.DefaultSandboxImage, "the CRI plugin's sandbox (pause) image")
	fl.StringVar(&o.CNIBinDir, "cni-bin-dir", "/usr/lib/cni", "the CNI plugins' folder (the kubelet's --cni-bin-dir)")
	fl.StringVar(&o.CNIConfDir, "cni-conf-dir", "/etc/cni/net.d", "the folder the kubelet writes its conflist into (its --cni-conf-dir)")
	fl.BoolVar(&o.SystemdCgroup, "systemd-cgroup", false, "runc's systemd cgroup driver (default cgroupfs, as the kubelet)")
	fl.StringVar(&o.RuncBinary, "runc", "", "the runc binary (default runc on containerd's PATH)")
	fl.StringVar(&registries, "registry-insecure", "", "registries (host:port, comma-separated) pulled from over plain HTTP")
	fl.StringVar(&o.RegistryConfigDir, "registry-config-dir", "/etc/containerd/certs.d", "containerd's registry hosts folder")
	fl.StringVar(&o.LogLevel, "log-level", "info", "containerd's log level")
	if err := fl.Parse(args); err != nil {
		return err
	}
	hosts := splitList(registries)
	if len(hosts) > 0 {
		if err := containerdconfig.WritePlainHTTPHosts(o.RegistryConfigDir, hosts); err != nil {
			return err
		}
	} else {
		o.RegistryConfigDir = ""
	}
	text, err := containerdconfig.Render(o)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = fmt.Print(text)
		return err
	}
	return writeFileAtomic(out, []byte(text), 0o644)
}
