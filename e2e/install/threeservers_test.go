package install

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/e2e/netlab"
)

// server is one control-plane server of TestInstallThreeServers: its host
// and the processes its units run.
type server struct {
	h               *netlab.Host
	etcd, apiserver *netlab.Proc
}

// TestInstallThreeServers installs a highly available control plane with
// hack/install.sh on three lab hosts — the first server makes the CAs and
// the bundle, the other two join with it, each runs an etcd member (TLS
// for clients and peers), an apiserver, a scheduler and a
// controller-manager — and one worker given every apiserver's address;
// runs the quick-start workload; then kills the server of the etcd leader
// (its etcd member and apiserver, by PID) and shows the cluster still
// serves through the two other apiservers: a new Deployment becomes
// available, and what was written before is all there.
func TestInstallThreeServers(t *testing.T) {
	etcdBin, etcdctl := lookPathOrSkip(t, "etcd"), lookPathOrSkip(t, "etcdctl")
	r := newRun(t, 4)
	servers := make([]*server, 3)
	var ips, apis []string
	for i, h := range r.lab.Hosts[:3] {
		servers[i] = &server{h: h}
		ips = append(ips, h.IP.String())
		apis = append(apis, h.IP.String()+":6443")
	}
	worker := r.lab.Hosts[3]
	start := time.Now()

	// The first server: CAs, its certificates, the bundle, and what to do
	// on the others.
	out := r.installShIn(servers[0].h, append([]string{"control-plane", "--etcd", "cluster", "--advertise-address", ips[0],
		"--control-plane-addresses", strings.Join(ips, ",")}, r.common(servers[0].h)...)...)
	_, etc0, _ := r.hostDirs(servers[0].h)
	bundle := filepath.Join(etc0, "control-plane-join.tar.gz")
	if fi, err := os.Stat(bundle); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("the bundle %s has mode %v, want a file only root reads (0600)", bundle, fi.Mode().Perm())
	}
	for _, s := range servers[1:] {
		ip := s.h.IP.String()
		if !strings.Contains(out, "scp "+bundle+" root@"+ip+":/root/") {
			t.Errorf("install.sh control-plane printed no scp of %s to %s:\n%s", bundle, ip, out)
		}
		// As on a VM: the bundle copied to /root of the server (here the
		// host's own folder), then the printed command, run there.
		join := joinBundleArgs(t, out, ip)
		copied := filepath.Join(r.dir, s.h.Name, "root", "control-plane-join.tar.gz")
		copyFile(t, bundle, copied)
		i := slices.Index(join, "--join-bundle")
		if i < 0 || i+1 >= len(join) || join[i+1] != "/root/control-plane-join.tar.gz" {
			t.Fatalf("the join command for %s does not name the copied bundle: %v", ip, join)
		}
		join[i+1] = copied
		r.installShIn(s.h, append(append([]string{"control-plane"}, join...), r.common(s.h)...)...)
	}

	// Run again, the first server keeps its CAs (the others' certificates
	// stay valid); with another list it refuses.
	ca0, err := os.ReadFile(filepath.Join(etc0, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	first := append([]string{"control-plane", "--etcd", "cluster", "--advertise-address", ips[0]}, r.common(servers[0].h)...)
	r.installShIn(servers[0].h, append(slices.Clone(first), "--control-plane-addresses", strings.Join(ips, ","))...)
	if again, _ := os.ReadFile(filepath.Join(etc0, "pki", "ca.crt")); string(again) != string(ca0) {
		t.Errorf("install.sh control-plane run again on %s replaced the cluster CA", servers[0].h.Name)
	}
	reordered := []string{ips[0], ips[2], ips[1]}
	cmd := exec.Command("bash", append([]string{filepath.Join(built.moduleDir, "hack", "install.sh")},
		append(slices.Clone(first), "--control-plane-addresses", strings.Join(reordered, ","))...)...)
	if out, err := servers[0].h.Output(r.ctx, cmd); err == nil || !strings.Contains(err.Error(), "holds a control plane of "+strings.Join(ips, ",")) {
		t.Errorf("install.sh control-plane with another address list on an installed server: %v\n%s", err, out)
	}

	// Each server's certificates are its own, under the same CAs.
	etcdEnvs := map[string]string{}
	for _, s := range servers {
		_, etc, _ := r.hostDirs(s.h)
		for _, f := range []string{"ca.crt", "etcd/ca.crt", "sa.pub"} {
			if !sameFile(t, filepath.Join(etc0, "pki", f), filepath.Join(etc, "pki", f)) {
				t.Errorf("%s of %s differs from the first server's", f, s.h.Name)
			}
		}
		if s != servers[0] && sameFile(t, filepath.Join(etc0, "pki", "apiserver.key"), filepath.Join(etc, "pki", "apiserver.key")) {
			t.Errorf("%s has the first server's apiserver key; want a key of its own", s.h.Name)
		}
		b, err := os.ReadFile(filepath.Join(etc, "etcd.env"))
		if err != nil {
			t.Fatal(err)
		}
		etcdEnvs[s.h.Name] = string(b)
	}
	wantCluster := fmt.Sprintf("--initial-cluster etcd-1=https://%s:2380,etcd-2=https://%s:2380,etcd-3=https://%s:2380", ips[0], ips[1], ips[2])
	for i, s := range servers {
		env := etcdEnvs[s.h.Name]
		if !strings.Contains(env, wantCluster) || !strings.Contains(env, fmt.Sprintf("--name etcd-%d ", i+1)) ||
			!strings.Contains(env, "--peer-client-cert-auth") || !strings.Contains(env, "--client-cert-auth") {
			t.Errorf("etcd.env of %s, want member etcd-%d, %s and client and peer certificate auth:\n%s", s.h.Name, i+1, wantCluster, env)
		}
	}

	// Start each server as systemd would: etcd first; the apiservers once
	// a majority of members answers (each exits when etcd does not answer
	// within 10 s, and systemd would start it again; here each starts
	// once).
	for _, s := range servers {
		_, etc, _ := r.hostDirs(s.h)
		s.etcd = r.startBin(s.h, etcdBin, etc, "etcd")
	}
	_, etc1, _ := r.hostDirs(servers[1].h)
	pki1 := filepath.Join(etc1, "pki")
	etcdctlIn := func(h *netlab.Host, endpoints []string, args ...string) (string, error) {
		args = append([]string{"--endpoints", strings.Join(endpoints, ","), "--cacert", filepath.Join(pki1, "etcd", "ca.crt"),
			"--cert", filepath.Join(pki1, "apiserver-etcd-client.crt"), "--key", filepath.Join(pki1, "apiserver-etcd-client.key"),
			"--dial-timeout", "10s", "--command-timeout", "10s"}, args...)
		out, err := h.Output(r.ctx, exec.Command(etcdctl, args...))
		return string(out), err
	}
	var endpoints []string
	for _, ip := range ips {
		endpoints = append(endpoints, "https://"+ip+":2379")
	}
	wait.Eventually(t, 2*time.Minute, "the three etcd members healthy", func() error {
		for _, s := range servers {
			if s.etcd.Exited() {
				return wait.Stop(fmt.Errorf("etcd of %s exited; see %s", s.h.Name, s.etcd.LogPath()))
			}
		}
		_, err := etcdctlIn(servers[1].h, endpoints, "endpoint", "health")
		return err
	})
	for _, s := range servers {
		prefix, etc, _ := r.hostDirs(s.h)
		s.apiserver = r.startEnv(s.h, prefix, etc, "apiserver")
		r.startEnv(s.h, prefix, etc, "scheduler")
		r.startEnv(s.h, prefix, etc, "controller-manager")
	}
	// The admin's config on a joined server names every apiserver.
	admin := filepath.Join(etc1, "admin.config")
	if b, err := os.ReadFile(admin); err != nil || !strings.Contains(string(b), "server: "+strings.Join(apis, ",")+"\n") {
		t.Errorf("admin.config of %s, want every apiserver (%v):\n%s", servers[1].h.Name, err, b)
	}
	for _, s := range servers {
		wait.Eventually(t, time.Minute, "the apiserver of "+s.h.Name+" answers", func() error {
			if s.apiserver.Exited() {
				return wait.Stop(fmt.Errorf("the apiserver of %s exited; see %s", s.h.Name, s.apiserver.LogPath()))
			}
			_, err := tugctl(r.ctx, admin, "--server", s.h.IP.String()+":6443", "get", "ns", "default")
			return err
		})
	}

	// A worker, joined with the command join-command prints on a joined
	// server: it names every apiserver.
	join := joinArgs(t, r.installShIn(servers[2].h, append([]string{"join-command"}, r.common(servers[2].h)...)...))
	if i := slices.Index(join, "--server"); i < 0 || i+1 >= len(join) || join[i+1] != strings.Join(apis, ",") {
		t.Errorf("join-command's worker command %v, want --server %s", join, strings.Join(apis, ","))
	}
	r.installWorker(worker, "worker-1", join)
	waitReadyNodes(t, r.ctx, admin, 1, nil)
	t.Logf("three servers and a worker Ready %s after install.sh control-plane", time.Since(start).Round(100*time.Millisecond))
	quickStart(t, r.ctx, admin, []string{worker.IP.String()})
	if _, err := tugctl(r.ctx, admin, "create", "configmap", "before", "--from-literal", "written=before-the-fault"); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, obj := range []string{"deployment/web", "service/web", "configmap/before", "namespace/default"} {
		uid, err := tugctl(r.ctx, admin, "get", obj, "-o", "jsonpath={.metadata.uid}")
		if err != nil || uid == "" {
			t.Fatalf("uid of %s: %q %v", obj, uid, err)
		}
		before[obj] = uid
	}

	// The fault: the server of the etcd leader loses its etcd member and
	// its apiserver (SIGKILL, by PID).
	status, err := etcdctlIn(servers[1].h, endpoints, "endpoint", "status", "-w", "json")
	if err != nil {
		t.Fatal(err)
	}
	lead := leaderEndpoint(t, status)
	var dead *server
	for _, s := range servers {
		if lead == "https://"+s.h.IP.String()+":2379" {
			dead = s
		}
	}
	if dead == nil {
		t.Fatalf("the etcd leader %s is none of the servers:\n%s", lead, status)
	}
	t.Logf("killing etcd (pid %d) and the apiserver (pid %d) of %s, the etcd leader's server", dead.etcd.PID(), dead.apiserver.PID(), dead.h.Name)
	for _, p := range []*netlab.Proc{dead.etcd, dead.apiserver} {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	var rest []string
	for _, s := range servers {
		if s != dead {
			rest = append(rest, s.h.IP.String()+":6443")
		}
	}
	alive := strings.Join(rest, ",")
	ctl := func(args ...string) (string, error) {
		return tugctl(r.ctx, admin, append([]string{"--server", alive}, args...)...)
	}
	manifest := filepath.Join(r.dir, "after.yaml")
	web, err := os.ReadFile(filepath.Join(built.moduleDir, "deploy", "examples", "web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deployment, _, _ := strings.Cut(string(web), "\n---")
	deployment = strings.ReplaceAll(strings.ReplaceAll(deployment, "web", "after"), "replicas: 4", "replicas: 2")
	if err := os.WriteFile(manifest, []byte(deployment), 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, time.Minute, "a new Deployment accepted by the remaining apiservers "+alive, func() error {
		_, err := ctl("apply", "-f", manifest)
		return err
	})
	wait.Eventually(t, 3*time.Minute, "Deployment after available with "+dead.h.Name+" down", func() error {
		out, err := ctl("get", "deploy", "after", "--no-headers")
		if err != nil {
			return err
		}
		if f := strings.Fields(out); len(f) < 4 || f[3] != "2" {
			pods, _ := ctl("get", "pods", "-o", "wide")
			return fmt.Errorf("deployment: %s\npods:\n%s", strings.TrimSpace(out), pods)
		}
		return nil
	})
	for obj, uid := range before {
		if got, err := ctl("get", obj, "-o", "jsonpath={.metadata.uid}"); err != nil || got != uid {
			t.Errorf("%s after the fault: uid %q (%v), want %q", obj, got, err, uid)
		}
	}
	if v, err := ctl("get", "configmap", "before", "-o", "jsonpath={.data.written}"); err != nil || v != "before-the-fault" {
		t.Errorf("configmap before after the fault: data.written = %q (%v)", v, err)
	}
	if out, err := ctl("get", "deploy", "web", "--no-headers"); err != nil || len(strings.Fields(out)) < 4 || strings.Fields(out)[3] != "4" {
		t.Errorf("deployment web after the fault, want 4 available: %q %v", out, err)
	}
	// tugctl get cs, through a remaining apiserver, names every member,
	// and the killed one as unhealthy.
	if cs, err := ctl("get", "cs"); err != nil || !strings.Contains(cs, "etcd-2 ") || !strings.Contains(cs, "Unhealthy") {
		t.Errorf("tugctl get cs with %s down, want three etcd members, one unhealthy (%v):\n%s", dead.h.Name, err, cs)
	}
	// The two remaining members still form the cluster, with a leader.
	var restEndpoints []string
	for _, ep := range endpoints {
		if ep != lead {
			restEndpoints = append(restEndpoints, ep)
		}
	}
	other := servers[1]
	if other == dead {
		other = servers[2]
	}
	if status, err := etcdctlIn(other.h, restEndpoints, "endpoint", "status", "-w", "json"); err != nil {
		t.Errorf("etcd status of the remaining members: %v", err)
	} else if l := leaderEndpoint(t, status); l == "" {
		t.Errorf("no leader among the remaining members:\n%s", status)
	}
	t.Logf("the cluster served with %s down; whole test %s", dead.h.Name, time.Since(start).Round(100*time.Millisecond))
}

// leaderEndpoint is the endpoint of `etcdctl endpoint status -w json`
// whose member leads, or "" if none of them does.
func leaderEndpoint(t *testing.T, status string) string {
	t.Helper()
	var eps []struct {
		Endpoint string
		Status   struct {
			Header struct {
				MemberID uint64 `json:"member_id"`
			} `json:"header"`
			Leader uint64 `json:"leader"`
		}
	}
	if err := json.Unmarshal([]byte(status), &eps); err != nil {
		t.Fatalf("etcdctl endpoint status: %v\n%s", err, status)
	}
	for _, ep := range eps {
		if ep.Status.Leader != 0 && ep.Status.Leader == ep.Status.Header.MemberID {
			return ep.Endpoint
		}
	}
	return ""
}

// joinBundleArgs finds the join command install.sh control-plane printed
// for the server at ip and returns its options (after "control-plane").
func joinBundleArgs(t *testing.T, out, ip string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "install.sh control-plane --join-bundle ")
		if ok && strings.HasSuffix(line, "--advertise-address "+ip) {
			return strings.Fields("--join-bundle " + rest)
		}
	}
	t.Fatalf("install.sh control-plane printed no join command for %s:\n%s", ip, out)
	return nil
}

// installShIn runs hack/install.sh in host h (its addresses are the
// host's own, as on a VM) and returns its output.
func (r *run) installShIn(h *netlab.Host, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(built.moduleDir, "hack", "install.sh")}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := h.Run(r.ctx, cmd); err != nil {
		r.t.Fatalf("install.sh %s on %s: %v\n%s", strings.Join(args, " "), h.Name, err, out.String())
	}
	return out.String()
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}

// TestInstallFlags: install.sh refuses bad options of the control plane
// with an error that names the option, before installing anything.
func TestInstallFlags(t *testing.T) {
	netlab.RequireRoot(t)
	dir := t.TempDir()
	notBundle := filepath.Join(dir, "not-a-bundle.tar.gz")
	if err := os.WriteFile(notBundle, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	mod, err := cluster.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(mod, "hack", "install.sh")
	common := []string{"--no-systemd", "--skip-packages", "--prefix", filepath.Join(dir, "usr"), "--etc-dir", filepath.Join(dir, "etc"),
		"--data-dir", filepath.Join(dir, "var"), "--bin-dir", filepath.Join(dir, "no-bin")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1"}, "--control-plane-addresses: required with --etcd cluster"},
		{[]string{"control-plane", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1,192.0.2.2,192.0.2.3"}, "--control-plane-addresses is for --etcd cluster"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1,192.0.2.2"}, "2 server(s); etcd needs an odd number, 3 or more"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1"}, "1 server(s); etcd needs an odd number"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1:6443,192.0.2.2,192.0.2.3"}, "192.0.2.1:6443 is not an IP address (addresses only, without a port"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1,192.0.2.300,192.0.2.3"}, "192.0.2.300 is not an IP address"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1,192.0.2.1,192.0.2.3"}, "192.0.2.1 is given twice"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1,,192.0.2.3"}, "an empty entry"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.9", "--control-plane-addresses", "192.0.2.1,192.0.2.2,192.0.2.3"}, "--advertise-address 192.0.2.9 is not in --control-plane-addresses"},
		{[]string{"control-plane", "--etcd", "cluster", "--advertise-address", "192.0.2.1", "--control-plane-addresses", "192.0.2.1,192.0.2.2,192.0.2.3"}, "--advertise-address 192.0.2.1 is not an address of this server"},
		{[]string{"control-plane", "--advertise-address", "192.0.2.1", "--etcd", "raft"}, "--etcd raft: want embedded"},
		{[]string{"control-plane", "--advertise-address", "192.0.2.1", "--join-bundle", notBundle, "--etcd", "cluster"}, "--etcd: with --join-bundle it comes from the bundle"},
		{[]string{"control-plane", "--advertise-address", "192.0.2.1", "--join-bundle", notBundle, "--service-cidr", "10.0.0.0/16"}, "--service-cidr: with --join-bundle it comes from the bundle"},
		{[]string{"control-plane", "--advertise-address", "192.0.2.1", "--join-bundle", filepath.Join(dir, "missing.tar.gz")}, "missing.tar.gz: no such file"},
		{[]string{"control-plane", "--join-bundle", notBundle, "--advertise-address", "192.0.2.1"}, "not a bundle of 'install.sh control-plane --etcd cluster'"},
		{[]string{"worker", "--join-bundle", notBundle}, "--join-bundle is an option of 'install.sh control-plane', not of worker"},
		{[]string{"control-plane", "--advertise-address"}, "--advertise-address needs a value"},
	} {
		args := append(slices.Clone(tc.args[:1]), common...)
		args = append(args, tc.args[1:]...)
		out, err := exec.Command("bash", append([]string{script}, args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "install: ERROR: ") || !strings.Contains(string(out), tc.want) {
			t.Errorf("install.sh %s: %v\n%s\nwant an error with %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "usr")); err == nil {
			t.Errorf("install.sh %s installed something before refusing", strings.Join(tc.args, " "))
		}
	}
}
