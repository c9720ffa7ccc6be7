package containerd

import (
	"fmt"
	"os"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// cfsPeriod is the CFS period cpu limits are expressed over (100ms), as in
// Kubernetes.
const cfsPeriod = 100000

// specOpts builds the OCI spec of a container in sandbox sb: the image's
// config, then the pod's netns and hostname, the /etc files and mounts, the
// command, env and cgroup limits from cfg.
func specOpts(img client.Image, sb runtime.SandboxConfig, cfg runtime.ContainerConfig, cgroupsPath string) []oci.SpecOpts {
	opts := []oci.SpecOpts{}
	// Kubernetes' command rules: command replaces entrypoint and cmd, args
	// alone replace cmd.
	if len(cfg.Command) > 0 {
		opts = append(opts, oci.WithImageConfig(img), oci.WithProcessArgs(append(append([]string{}, cfg.Command...), cfg.Args...)...))
	} else {
		opts = append(opts, oci.WithImageConfigArgs(img, cfg.Args))
	}
	opts = append(opts,
		oci.WithHostname(sb.Hostname),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netnsPath(sb)}),
		oci.WithMounts(mounts(sb.EtcFiles, cfg.Mounts)),
		withRootfsPropagation(cfg.Mounts),
		oci.WithCgroup(cgroupsPath),
	)
	if len(cfg.Env) > 0 {
		env := make([]string, len(cfg.Env))
		for i, e := range cfg.Env {
			env[i] = e.Name + "=" + e.Value
		}
		opts = append(opts, oci.WithEnv(env))
	}
	opts = append(opts, securityOpts(cfg.Security, sb.Sysctls)...)
	if cfg.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(cfg.WorkingDir))
	}
	if cfg.TTY {
		opts = append(opts, oci.WithTTY)
	}
	res := cfg.Resources
	if res.MemoryLimitBytes > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(res.MemoryLimitBytes)))
		if swapAccounted() {
			opts = append(opts, oci.WithMemorySwap(res.MemoryLimitBytes))
		}
	}
	if res.CPULimitMilli > 0 {
		quota := res.CPULimitMilli * cfsPeriod / 1000
		if quota < 1000 { // the kernel's minimum quota is 1ms
			quota = 1000
		}
		opts = append(opts, oci.WithCPUCFS(quota, cfsPeriod))
	}
	if res.CPURequestMilli > 0 {
		shares := uint64(res.CPURequestMilli * 1024 / 1000)
		if shares < 2 {
			shares = 2
		}
		opts = append(opts, oci.WithCPUShares(shares))
	}
	return opts
}

// swapAccounted reports whether the kernel accounts memory+swap in cgroup
// v1 (memory.memsw.*), so that the swap limit can be set equal to the
// memory limit. On cgroup v2 swap is left to the node's configuration
// (Kubernetes nodes run without swap).
func swapAccounted() bool {
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return err == nil
}

// netnsPath is the network namespace a sandbox's containers join: the
// node's, which is this process's, for a host-network sandbox (the shims
// may run in another namespace, as in the test cluster).
func netnsPath(sb runtime.SandboxConfig) string {
	if sb.HostNetwork {
		return fmt.Sprintf("/proc/%d/ns/net", os.Getpid())
	}
	return sb.NetNSPath
}
