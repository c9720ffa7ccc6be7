package kubelet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

// TestCleanupAndContainerdDirCRI: the kubelet over CRI, on one node
// whose containerd (the harness's, as a node's system containerd) also
// runs a sandbox that is not Tugboat's (made with crictl, host network).
//
//  1. On the node's containerd, `kubelet --cleanup` with the kubelet's
//     flags removes the kubelet's sandboxes and containers (crictl shows
//     none with its node label), its pod folders and cgroups, and leaves
//     the foreign sandbox and its container running and the images there.
//  2. With --containerd-dir D (and the endpoint of D's socket, where
//     nothing answers) the kubelet runs a containerd of its own: D holds
//     its config, root and state, crictl on D's socket shows the
//     kubelet's pods, the node's containerd gets none of them. Stopped,
//     the kubelet's containerd stops with it.
//  3. `kubelet --cleanup` with those flags starts D's containerd, removes
//     the pods, stops it, removes D/state and every mount under D, keeps
//     D's image store (a containerd started again on D shows, through
//     crictl, no sandbox and no container, and the images); the node's
//     containerd and its foreign sandbox are untouched.
func TestCleanupAndContainerdDirCRI(t *testing.T) {
	t.Parallel()
	if rt := os.Getenv("TUGBOAT_E2E_RUNTIME"); rt != "" && rt != cluster.RuntimeCRI {
		t.Skip("the CRI backend's flags; this run is the native backend's (TUGBOAT_E2E_RUNTIME=" + rt + ")")
	}
	if _, err := exec.LookPath("crictl"); err != nil {
		containerdtest.SkipOrFail(t, fmt.Errorf("crictl not found (hack/install-deps.sh installs it): %w", err))
	}
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, NoScheduler: true, NoControllerManager: true, Runtime: cluster.RuntimeCRI})
	n := c.Nodes[0]
	nodeEP := n.CRIEndpoint()
	mine := "tugboat.io/node=" + n.Name
	if v, err := crictlAt(nodeEP, "version"); err == nil {
		t.Logf("the node's runtime (crictl version):\n%s", v) // make test-containerd2 runs this on 2.x
	}

	foreign := runForeignSandbox(t, nodeEP, filepath.Join(t.TempDir(), "foreign"), filepath.Join(filepath.Dir(n.CgroupRoot), "foreign"))
	t.Cleanup(func() { _, _ = crictlAt(nodeEP, "rmp", "-f", foreign) })

	// 1. The node's containerd.
	for _, name := range []string{"a", "b"} {
		createPod(t, c.Client, busyboxPod("cleanup", name, n.Name, "exec sleep 3600"))
	}
	first := map[string]string{} // container id per pod
	for _, name := range []string{"a", "b"} {
		p := waitPod(t, c.Client, "cleanup", name, 90*time.Second, "Running", running)
		first[name] = containerStatus(p, "main").GetContainerId()
	}
	if ids := crictlIDs(t, nodeEP, "pods", "-q", "--label", mine); len(ids) != 2 {
		t.Fatalf("crictl pods --label %s: %v, want the 2 pods' sandboxes", mine, ids)
	}
	n.Stop()
	runCleanup(t, n)
	if ids := crictlIDs(t, nodeEP, "pods", "-q", "--label", mine); len(ids) != 0 {
		t.Errorf("kubelet --cleanup left the kubelet's sandboxes %v", ids)
	}
	if ids := crictlIDs(t, nodeEP, "ps", "-a", "-q", "--label", mine); len(ids) != 0 {
		t.Errorf("kubelet --cleanup left the kubelet's containers %v", ids)
	}
	checkForeign(t, nodeEP, foreign)
	checkImages(t, nodeEP)
	checkNodeClean(t, n)

	// 2. A containerd of the kubelet's own in D.
	dir := filepath.Join(n.RootDir, "own-containerd")
	ownEP := "unix://" + daemon.Address(dir)
	// Its images come through the kubelet's import folder.
	if err := os.MkdirAll(n.ImportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{"pause", "busybox"} {
		copyImage(t, img, n.ImportDir)
	}
	n.ExtraArgs = []string{"--containerd-dir", dir, "--container-runtime-endpoint", ownEP}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(ctxFor(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The pods are still bound to the node: started again, in D.
	for _, name := range []string{"a", "b"} {
		waitPod(t, c.Client, "cleanup", name, 2*time.Minute, "Running in a new container on the kubelet's own containerd", func(p *v1.Pod) bool {
			id := containerStatus(p, "main").GetContainerId()
			return running(p) && id != "" && id != first[name]
		})
	}
	for _, f := range []string{"config.toml", "root", "state"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("--containerd-dir: %v", err)
		}
	}
	if pids := pgrep(t, filepath.Join(dir, "config.toml")); len(pids) != 1 {
		t.Errorf("containerd processes on %s: %v, want one", dir, pids)
	}
	own := crictlPods(t, ownEP, "--label", mine, "--state", "ready")
	if len(own) != 2 {
		t.Errorf("crictl on the kubelet's own containerd: ready sandboxes %v, want the 2 pods'", own)
	}
	for _, name := range []string{"a", "b"} {
		if !own["cleanup/"+name] {
			t.Errorf("crictl on the kubelet's own containerd: no sandbox of cleanup/%s: %v", name, own)
		}
	}
	if ids := crictlIDs(t, nodeEP, "pods", "-q", "--label", mine); len(ids) != 0 {
		t.Errorf("the node's containerd got the kubelet's sandboxes %v with --containerd-dir", ids)
	}
	n.Stop()
	wait.Eventually(t, 30*time.Second, "the kubelet's containerd stopped with it", func() error {
		if pids := pgrep(t, filepath.Join(dir, "config.toml")); len(pids) > 0 {
			return fmt.Errorf("containerd still running: %v", pids)
		}
		return nil
	})

	// 3. --cleanup with --containerd-dir.
	runCleanup(t, n)
	if _, err := os.Stat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
		t.Errorf("%s/state after --cleanup: %v, want it removed", dir, err)
	}
	if pids := pgrep(t, filepath.Join(dir, "config.toml")); len(pids) > 0 {
		t.Errorf("containerd of %s left running: %v", dir, pids)
	}
	if pids := pgrep(t, "-address "+daemon.Address(dir)); len(pids) > 0 {
		t.Errorf("shims of %s left running: %v", dir, pids)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), " "+dir+"/") {
		t.Errorf("mounts left under %s", dir)
	}
	checkNodeClean(t, n)
	checkForeign(t, nodeEP, foreign)

	// What D's containerd holds now, through crictl.
	cfg, err := os.ReadFile(filepath.Join(dir, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(ctxFor(t, time.Minute), daemon.Options{Dir: dir, Config: string(cfg), NetNS: n.Host.NetnsPath})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		d.Stop()
		if err := daemon.UnmountUnder(dir); err != nil {
			t.Error(err)
		}
	}()
	wait.Eventually(t, 30*time.Second, "the CRI of D's containerd answers", func() error {
		_, err := crictlAt(ownEP, "pods", "-q")
		return err
	})
	if ids := crictlIDs(t, ownEP, "pods", "-q"); len(ids) != 0 {
		t.Errorf("D's containerd after --cleanup: sandboxes %v, want none", ids)
	}
	if ids := crictlIDs(t, ownEP, "ps", "-a", "-q"); len(ids) != 0 {
		t.Errorf("D's containerd after --cleanup: containers %v, want none", ids)
	}
	checkImages(t, ownEP)
}

// runForeignSandbox starts, with crictl on the CRI endpoint ep, a sandbox
// Tugboat did not make (host network: no CNI) with a busybox container,
// and returns the sandbox's id.
func runForeignSandbox(t *testing.T, ep, dir, cgroupParent string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pod := fmt.Sprintf(`{"metadata": {"name": "foreign", "namespace": "other", "uid": "foreign-1"},
  "log_directory": %q, "labels": {"owner": "not-tugboat"},
  "linux": {"cgroup_parent": %q, "security_context": {"namespace_options": {"network": 2, "pid": 1}}}}`, dir, cgroupParent)
	ctr := fmt.Sprintf(`{"metadata": {"name": "sleeper"}, "image": {"image": %q}, "command": ["sleep", "3600"], "log_path": "sleeper.log"}`, images.BusyboxRef)
	podPath, ctrPath := filepath.Join(dir, "pod.json"), filepath.Join(dir, "ctr.json")
	for path, text := range map[string]string{podPath: pod, ctrPath: ctr} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := crictlAt(ep, "run", "--no-pull", ctrPath, podPath); err != nil {
		t.Fatal(err)
	}
	ids := crictlIDs(t, ep, "pods", "-q", "--label", "owner=not-tugboat")
	if len(ids) != 1 {
		t.Fatalf("crictl pods --label owner=not-tugboat: %v", ids)
	}
	return ids[0]
}

// checkForeign: the foreign sandbox is Ready and its container running.
func checkForeign(t *testing.T, ep, id string) {
	t.Helper()
	if ids := crictlIDs(t, ep, "pods", "-q", "--id", id, "--state", "ready"); len(ids) != 1 {
		t.Errorf("the sandbox Tugboat did not make (%s) is no longer ready: %v", id, ids)
	}
	if ids := crictlIDs(t, ep, "ps", "-q", "--pod", id, "--state", "running"); len(ids) != 1 {
		t.Errorf("the container Tugboat did not make (in %s) is no longer running: %v", id, ids)
	}
}

// checkImages: the images stay.
func checkImages(t *testing.T, ep string) {
	t.Helper()
	out, err := crictlAt(ep, "images")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{images.BusyboxRef, images.PauseRef} {
		repo, _, _ := strings.Cut(ref, ":")
		if !strings.Contains(out, repo) {
			t.Errorf("crictl images lacks %s after --cleanup:\n%s", ref, out)
		}
	}
}

// checkNodeClean: no pod folders and no pod cgroups of the kubelet.
func checkNodeClean(t *testing.T, n *cluster.Node) {
	t.Helper()
	if ents, _ := os.ReadDir(filepath.Join(n.RootDir, "pods")); len(ents) > 0 {
		t.Errorf("pod folders left: %d", len(ents))
	}
	if dirs := runtime.CgroupDirs(n.CgroupRoot); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
}

// runCleanup runs `kubelet --cleanup` with the node's kubelet flags in
// the node's network namespace.
func runCleanup(t *testing.T, n *cluster.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := n.Host.Output(ctx, exec.Command(bins.Kubelet, append(n.Args(), "--cleanup")...))
	if err != nil {
		t.Fatalf("kubelet --cleanup: %v\n%s", err, out)
	}
}

func crictlAt(ep string, args ...string) (string, error) {
	args = append([]string{"--runtime-endpoint", ep, "--image-endpoint", ep, "--timeout", "30s"}, args...)
	out, err := exec.Command("crictl", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("crictl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func crictlIDs(t *testing.T, ep string, args ...string) []string {
	t.Helper()
	out, err := crictlAt(ep, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)
}

// crictlPods is the set of "namespace/name" of the sandboxes crictl pods
// lists with args.
func crictlPods(t *testing.T, ep string, args ...string) map[string]bool {
	t.Helper()
	out, err := crictlAt(ep, append([]string{"pods", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var pods cluster.CrictlPods
	if err := json.Unmarshal([]byte(out), &pods); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, p := range pods.Items {
		set[p.Metadata.Namespace+"/"+p.Metadata.Name] = true
	}
	return set
}

// copyImage copies the test image's archive into dir.
func copyImage(t *testing.T, name, dir string) {
	t.Helper()
	src, err := bins.Image(ctxFor(t, 2*time.Minute), name)
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(dir, name+".tar"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// pgrep lists the pids of processes whose command line holds pattern.
func pgrep(t *testing.T, pattern string) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "--", pattern).Output()
	return strings.Fields(string(out))
}
