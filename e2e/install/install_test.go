package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/netlab"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

// hostDirs are a host's install locations (the hosts share one file
// system): --prefix, --etc-dir, --data-dir.
func (r *run) hostDirs(h *netlab.Host) (prefix, etc, data string) {
	base := filepath.Join(r.dir, h.Name)
	return filepath.Join(base, "usr"), filepath.Join(base, "etc"), filepath.Join(base, "var")
}

// common are the install.sh options every step of the test gives: this
// host's folders, no systemd, no packages (the machine has them).
func (r *run) common(h *netlab.Host) []string {
	prefix, etc, data := r.hostDirs(h)
	return []string{"--no-systemd", "--skip-packages", "--bin-dir", built.binDir, "--images-dir", built.imagesDir,
		"--prefix", prefix, "--etc-dir", etc, "--data-dir", data, "--crictl-config", filepath.Join(etc, "crictl.yaml")}
}

// TestInstallScript installs a control plane and two workers with
// hack/install.sh into three lab hosts, starts each component as its
// systemd unit would, joins the workers with one-time tokens, and runs
// the quick-start workload.
func TestInstallScript(t *testing.T) {
	r := newRun(t, 3)
	cp, workers := r.lab.Hosts[0], r.lab.Hosts[1:]
	start := time.Now()

	r.installSh(append([]string{"control-plane", "--advertise-address", cp.IP.String()}, r.common(cp)...)...)
	cpPrefix, cpEtc, _ := r.hostDirs(cp)
	for _, c := range []string{"apiserver", "scheduler", "controller-manager"} {
		r.startEnv(cp, cpPrefix, cpEtc, c)
	}
	admin := filepath.Join(cpEtc, "admin.config")
	wait.Eventually(t, time.Minute, "the apiserver answers the admin", func() error {
		_, err := tugctl(r.ctx, admin, "get", "ns", "default")
		return err
	})

	var nodeIPs []string
	var ctds []*containerdtest.Containerd
	for i, h := range workers {
		join := joinArgs(t, r.installSh(append([]string{"join-command"}, r.common(cp)...)...))
		ctds = append(ctds, r.installWorker(h, fmt.Sprintf("worker-%d", i+1), join))
		nodeIPs = append(nodeIPs, h.IP.String())
	}
	waitReadyNodes(t, r.ctx, admin, 2, nil)
	t.Logf("control plane and two workers Ready %s after install.sh control-plane", time.Since(start).Round(100*time.Millisecond))

	// The kubelet joined with a one-time token (no node key left the control plane).
	env, err := os.ReadFile(filepath.Join(r.dir, workers[0].Name, "etc", "kubelet.env"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "--bootstrap-token") {
		t.Errorf("kubelet.env does not join with a token:\n%s", env)
	}

	quickStart(t, r.ctx, admin, nodeIPs)
	// crictl on a worker (install.sh installed it, with its config) shows
	// the kubelet's pods by their Kubernetes names.
	if pods, err := crictl(r.ctx, ctds[0].CRIEndpoint, "pods", "--namespace", "default", "--label", "app=web"); err != nil || !strings.Contains(pods, "web-") {
		t.Errorf("crictl pods on worker-1 (%v):\n%s", err, pods)
	}

	// install.sh uninstall on a worker whose components stopped (as
	// systemctl stop would; here the host loses power): nothing of the
	// node stays, the pods the quick start put there included.
	w := workers[0]
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd := exec.Command("bash", append([]string{filepath.Join(built.moduleDir, "hack", "install.sh"), "uninstall"}, r.common(w)...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := w.Run(r.ctx, cmd); err != nil {
		t.Fatalf("install.sh uninstall: %v\n%s", err, out.String())
	}
	for _, what := range [][]string{{"pods", "-q"}, {"ps", "-a", "-q"}} {
		if left, err := crictl(r.ctx, ctds[0].CRIEndpoint, what...); err != nil || strings.TrimSpace(left) != "" {
			t.Errorf("crictl %s on worker-1 after uninstall (%v):\n%s\n%s", strings.Join(what, " "), err, left, out.String())
		}
	}
	if dirs := runtime.CgroupDirs(r.cgroupRoot("worker-1")); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	_, _, data := r.hostDirs(w)
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", data, err)
	}
	links, _ := w.Output(r.ctx, exec.Command("ip", "-o", "link", "show", "type", "bridge"))
	tables, _ := w.Output(r.ctx, exec.Command("nft", "list", "tables"))
	if strings.Contains(string(links), "cni0") || strings.Contains(string(tables), "tugboat") {
		t.Errorf("left in the node's network:\n%s%s", links, tables)
	}
}

// installWorker installs a worker into host h with install.sh worker and
// the options join-command printed (join), starts its containerd, kubelet
// and proxy as their units would, and returns its containerd once the
// kubelet has its node certificate.
func (r *run) installWorker(h *netlab.Host, name string, join []string) *containerdtest.Containerd {
	t := r.t
	t.Helper()
	prefix, etc, data := r.hostDirs(h)
	args := append([]string{"worker"}, join...)
	args = append(args, r.common(h)...)
	// The worker's containerd, as on a VM: its config is the one
	// install.sh writes (CRI on), here with root, state and socket in
	// the host's folder (outside the data dir uninstall removes, as
	// /var/lib/containerd is).
	ctdDir := filepath.Join(r.dir, h.Name, "containerd")
	args = append(args, "--node-name", name, "--node-ip", h.IP.String(),
		"--containerd-config", filepath.Join(etc, "containerd", "config.toml"),
		"--containerd-root", filepath.Join(ctdDir, "root"), "--containerd-state", filepath.Join(ctdDir, "state"),
		"--containerd-socket", daemon.Address(ctdDir),
		"--cni-conf-dir", filepath.Join(data, "cni"),
		"--kubelet-arg", "--cgroup-root="+r.cgroupRoot(name),
		"--kubelet-arg", "--node-status-interval=1s")
	r.installSh(args...)
	ctd := r.startContainerd(h, ctdDir, filepath.Join(etc, "containerd", "config.toml"))
	if b, err := os.ReadFile(filepath.Join(etc, "crictl.yaml")); err != nil || !strings.Contains(string(b), "runtime-endpoint: unix://"+daemon.Address(ctdDir)) {
		t.Errorf("crictl config install.sh wrote (%v):\n%s", err, b)
	}
	// What the README says for an air-gapped lab: the example images
	// into the node's import folder.
	for _, img := range []string{"busybox.tar", "echo.tar"} {
		copyInto(t, filepath.Join(built.imagesDir, img), filepath.Join(data, "kubelet", "images"))
	}
	r.startEnv(h, prefix, etc, "kubelet")
	// systemd restarts the proxy until the kubelet has joined (its
	// certificate is the node's); here we wait for the certificate.
	cert := filepath.Join(data, "kubelet", "pki", "node.crt")
	wait.Eventually(t, time.Minute, name+" joined (node certificate written)", func() error {
		_, err := os.Stat(cert)
		return err
	})
	r.startEnv(h, prefix, etc, "proxy")
	return ctd
}

// TestInstallLocalEtcd installs a control plane on the distribution's etcd
// (install.sh --etcd local) and checks that etcd speaks only TLS with
// client certificates of its own CA: the apiserver works through it with
// its apiserver-etcd-client pair; etcdctl without a certificate, or with
// the cluster admin's, is refused.
func TestInstallLocalEtcd(t *testing.T) {
	etcdBin, etcdctl := lookPathOrSkip(t, "etcd"), lookPathOrSkip(t, "etcdctl")
	r := newRun(t, 1)
	cp := r.lab.Hosts[0]
	r.installSh(append([]string{"control-plane", "--advertise-address", cp.IP.String(), "--etcd", "local"}, r.common(cp)...)...)
	prefix, etc, _ := r.hostDirs(cp)
	pki := filepath.Join(etc, "pki")
	apiserverCert := []string{"--cert", filepath.Join(pki, "apiserver-etcd-client.crt"), "--key", filepath.Join(pki, "apiserver-etcd-client.key")}
	// etcdctlIn runs etcdctl in the host against the local etcd, giving
	// up after timeout (dialling included).
	etcdctlIn := func(timeout time.Duration, args ...string) (string, error) {
		args = append([]string{"--endpoints", "https://127.0.0.1:2379", "--cacert", filepath.Join(pki, "etcd", "ca.crt"),
			"--dial-timeout", timeout.String(), "--command-timeout", timeout.String()}, args...)
		out, err := cp.Output(r.ctx, exec.Command(etcdctl, args...))
		return string(out), err
	}
	etcdProc := r.startBin(cp, etcdBin, etc, "etcd")
	// systemd starts tugboat-apiserver after tugboat-etcd but does not
	// wait for etcd to answer: an apiserver that gets no answer from etcd
	// within 10 s exits, and Restart=always starts it again. This test
	// starts each once, so the apiserver waits for etcd to answer; else a
	// first etcd start slower than 10 s on a loaded machine left no
	// apiserver, and every later try of the admin was refused.
	wait.Eventually(t, 2*time.Minute, "etcd answers the apiserver's etcd certificate", func() error {
		if etcdProc.Exited() {
			return wait.Stop(fmt.Errorf("etcd exited; see %s", etcdProc.LogPath()))
		}
		_, err := etcdctlIn(10*time.Second, append(slices.Clone(apiserverCert), "endpoint", "health")...)
		return err
	})
	api := r.startEnv(cp, prefix, etc, "apiserver")
	admin := filepath.Join(etc, "admin.config")
	wait.Eventually(t, time.Minute, "the apiserver answers the admin", func() error {
		if api.Exited() {
			return wait.Stop(fmt.Errorf("the apiserver exited; see %s", api.LogPath()))
		}
		_, err := tugctl(r.ctx, admin, "get", "ns", "default")
		return err
	})
	// Reads must succeed on a loaded machine; refusals are expected, and
	// a refused client keeps retrying until its timeout.
	get := func(timeout time.Duration, extra ...string) (string, error) {
		return etcdctlIn(timeout, append(slices.Clone(extra), "get", "--prefix", "--keys-only", "/registry/namespaces/")...)
	}
	if out, err := get(15*time.Second, apiserverCert...); err != nil || !strings.Contains(out, "/registry/namespaces/default") {
		t.Errorf("etcdctl with the apiserver's etcd certificate: %v\n%s", err, out)
	}
	for what, extra := range map[string][]string{
		"no certificate":          nil,
		"the admin's certificate": {"--cert", filepath.Join(pki, "admin.crt"), "--key", filepath.Join(pki, "admin.key")},
	} {
		if out, err := get(3*time.Second, extra...); err == nil {
			t.Errorf("etcdctl with %s read etcd:\n%s", what, out)
		}
	}
	env, err := os.ReadFile(filepath.Join(etc, "apiserver.env"))
	if err != nil || !strings.Contains(string(env), "--etcd-servers https://127.0.0.1:2379") {
		t.Errorf("apiserver.env: %v\n%s", err, env)
	}
}

// lookPathOrSkip finds a binary of hack/install-deps.sh, or skips t
// (fails it under CI=true).
func lookPathOrSkip(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		containerdtest.SkipOrFail(t, fmt.Errorf("%s not found: hack/install-deps.sh installs it (Debian etcd-server, etcd-client)", name))
	}
	return p
}

// joinArgs finds the worker command line join-command printed and returns
// its options (after "worker").
func joinArgs(t *testing.T, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "install.sh worker "); i >= 0 {
			return strings.Fields(line[i+len("install.sh worker "):])
		}
	}
	t.Fatalf("join-command printed no worker command:\n%s", out)
	return nil
}

// copyInto copies a file into a folder (created if missing).
func copyInto(t *testing.T, src, dir string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
