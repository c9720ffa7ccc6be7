package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tugboat/tugboat/deploy/images"
)

// The CRI floor (with -runtime cri): what starting a pod costs through
// the node's own containerd CRI without a kubelet — `crictl run` (one
// process: RunPodSandbox, CreateContainer, StartContainer) per pod, all
// at once, against the same containerd with the same CNI config (the
// kubelet's conflist in its --cni-conf-dir; containerd runs the plugins)
// and the same pause image. Under CRI each pod is two runc containers
// (pause and busybox) in one shim, where the shell floor has one: the
// shell floor is the native backend's floor, this one is the CRI
// backend's. The sandboxes carry the label tugboat-bench=cri-floor and
// none of Tugboat's, so the kubelet leaves them alone; their cgroups go
// under the test cluster's (/tugboat-e2e/<run>/crifloor).

const criFloorLabel = "tugboat-bench"

// criFloor runs pods first..last through crictl at once and returns the
// time until the last `crictl run` returned (its container started).
func (b *bench) criFloor(ctx context.Context, dir string, first, last int) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, last-first+1)
	start := time.Now()
	for i := first; i <= last; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.criFloorOne(ctx, dir, i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		return 0, err
	}
	return took, nil
}

func (b *bench) criFloorOne(ctx context.Context, dir string, i int) error {
	name := fmt.Sprintf("%s-cf%d", b.c.ID, i)
	podDir := filepath.Join(dir, name)
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return err
	}
	pod := map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "crifloor", "uid": name, "attempt": 0},
		"hostname":      name,
		"log_directory": podDir,
		"labels":        map[string]string{criFloorLabel: "cri-floor"},
		"linux": map[string]any{
			"cgroup_parent": filepath.Join(filepath.Dir(b.node.CgroupRoot), "crifloor", name),
			// As the kubelet asks: a PID namespace per container.
			"security_context": map[string]any{"namespace_options": map[string]any{"pid": 1}},
		},
	}
	ctr := map[string]any{
		"metadata": map[string]any{"name": "web"},
		"image":    map[string]any{"image": images.BusyboxRef},
		"command":  []string{"httpd", "-f", "-p", "80"},
		"log_path": "web.log",
	}
	podPath, ctrPath := filepath.Join(podDir, "pod.json"), filepath.Join(podDir, "ctr.json")
	for path, v := range map[string]any{podPath: pod, ctrPath: ctr} {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	out, err := b.crictl(ctx, "run", "--no-pull", ctrPath, podPath)
	if err != nil {
		return fmt.Errorf("crictl run %s: %v: %s", name, err, out)
	}
	return nil
}

// criFloorCleanup stops and removes every CRI floor sandbox.
func (b *bench) criFloorCleanup(ctx context.Context) error {
	out, err := b.crictl(ctx, "pods", "-q", "--label", criFloorLabel+"=cri-floor")
	if err != nil {
		return fmt.Errorf("crictl pods: %v: %s", err, out)
	}
	ids := strings.Fields(out)
	if len(ids) == 0 {
		return nil
	}
	if out, err := b.crictl(ctx, append([]string{"rmp", "-f"}, ids...)...); err != nil {
		return fmt.Errorf("crictl rmp: %v: %s", err, out)
	}
	return nil
}

func (b *bench) crictl(ctx context.Context, args ...string) (string, error) {
	ep := b.node.CRIEndpoint()
	cmd := exec.CommandContext(ctx, "crictl", append([]string{"--runtime-endpoint", ep, "--image-endpoint", ep, "--timeout", "2m"}, args...)...)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil {
		b.crictlCPU.Add(int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()))
	}
	return string(out), err
}
