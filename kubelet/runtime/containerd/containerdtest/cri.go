package containerdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/internal/containerdconfig"
	"github.com/tugboat/tugboat/kubelet/network"
)

// criConfig is the config of a private containerd with the CRI plugin on:
// the node's config (containerdconfig) with the root, state, socket and
// CNI folders under dir.
func (c *Containerd) criConfig(dir, address string, o CRIOptions) (string, error) {
	if o.CNIBinDir == "" {
		o.CNIBinDir = cniBinDir()
	}
	if o.CNIConfDir == "" {
		o.CNIConfDir = filepath.Join(dir, "net.d")
	}
	if err := os.MkdirAll(o.CNIConfDir, 0o755); err != nil {
		return "", err
	}
	c.CRIEndpoint, c.CNIConfDir = "unix://"+address, o.CNIConfDir
	return containerdconfig.Render(containerdconfig.Options{
		Root:              filepath.Join(dir, "root"),
		State:             filepath.Join(dir, "state"),
		Address:           address,
		SandboxImage:      o.SandboxImage,
		CNIBinDir:         o.CNIBinDir,
		CNIConfDir:        o.CNIConfDir,
		RegistryConfigDir: o.RegistryConfigDir,
		NetNSUnderState:   true,
		OptDir:            filepath.Join(dir, "opt"),
	})
}

// cniBinDir is the first plugin folder that has the bridge plugin.
func cniBinDir() string {
	for _, d := range network.DefaultBinDirs {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			return d
		}
	}
	return network.DefaultBinDirs[0]
}

// purgeCRI stops and removes every pod sandbox through the CRI, so the
// runtime runs CNI DEL for each (veths, IPAM reservations and portmap rules
// go) before its containers are purged. Nothing to do without CRI.
func (c *Containerd) purgeCRI(ctx context.Context) error {
	if c.CRIEndpoint == "" {
		return nil
	}
	conn, err := grpc.NewClient(c.CRIEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rs := cri.NewRuntimeServiceClient(conn)
	resp, err := rs.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range resp.Items {
		if _, err := rs.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop pod sandbox %s: %w", sb.Id, err))
			continue
		}
		if _, err := rs.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove pod sandbox %s: %w", sb.Id, err))
		}
	}
	return errors.Join(errs...)
}
