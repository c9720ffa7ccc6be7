package kubelet_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// TestPodServesFromItsIP: a busybox httpd pod on each node reaches Running
// with an IP from its node's pod CIDR, and the test process fetches its
// page (a configMap volume) at that IP. The pod also gets a secret as env,
// the cluster DNS in resolv.conf and its step timeline in conditions.
func TestPodServesFromItsIP(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	api := c.Client
	ns := "serve"
	ensureNamespace(t, api, ns)
	ctx := context.Background()
	if _, err := client.For[*v1.ConfigMap](api).Create(ctx, &v1.ConfigMap{
		Metadata: &v1.ObjectMeta{Name: "site", Namespace: ns},
		Data:     map[string]string{"index.html": "hello from a configmap\n"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.Secret](api).Create(ctx, &v1.Secret{
		Metadata: &v1.ObjectMeta{Name: "creds", Namespace: ns},
		Data:     map[string][]byte{"password": []byte("s3cret")},
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		p := busyboxPod(ns, "web-"+n.Name, n.Name, "exec httpd -f -p 80 -h /www")
		ctr := p.Spec.Containers[0]
		ctr.VolumeMounts = []*v1.VolumeMount{{Name: "site", MountPath: "/www", ReadOnly: true}}
		ctr.Env = []*v1.EnvVar{
			{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.KeySelector{Name: "creds", Key: "password"}}},
			{Name: "MY_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		}
		ctr.Ports = []*v1.ContainerPort{{ContainerPort: 80}}
		p.Spec.Volumes = []*v1.Volume{{Name: "site", ConfigMap: &v1.ConfigMapVolumeSource{Name: "site"}}}
		createPod(t, api, p)
	}
	for _, n := range c.Nodes {
		name := "web-" + n.Name
		p := waitPod(t, api, ns, name, 60*time.Second, "Running", running)
		ip, err := netip.ParseAddr(p.Status.PodIp)
		if err != nil || !n.PodCIDR.Contains(ip) {
			t.Fatalf("%s: pod IP %q not in the node's pod CIDR %s", name, p.Status.PodIp, n.PodCIDR)
		}
		if p.Status.HostIp != n.IP.String() {
			t.Errorf("%s: hostIP %s, want %s", name, p.Status.HostIp, n.IP)
		}
		for _, typ := range []string{"tugboat.io/Accepted", "tugboat.io/ImagesReady", "PodReadyToStartContainers", "Initialized", "tugboat.io/ContainersStarted", "ContainersReady", "Ready"} {
			if cond := condition(p, typ); cond.GetStatus() != "True" || cond.GetLastTransitionTime() == nil {
				t.Errorf("%s: condition %s = %v", name, typ, cond)
			}
		}
		if err := n.RouteFromRoot(); err != nil {
			t.Fatal(err)
		}
		body := fetch(t, "http://"+ip.String()+"/index.html")
		if body != "hello from a configmap\n" {
			t.Errorf("%s: GET = %q", name, body)
		}
		out, code := execIn(t, api, ns, name, "sh", "-c", `echo "$PASSWORD $MY_IP"; cat /etc/resolv.conf; hostname`)
		for _, want := range []string{"s3cret " + ip.String(), "nameserver 10.96.0.10", "search serve.svc.cluster.local svc.cluster.local cluster.local", "options ndots:5", name} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%s: exec output lacks %q (exit %d):\n%s", name, want, code, out)
			}
		}
		evs := strings.Join(podEvents(t, api, ns, name), "\n")
		for _, want := range []string{"Pulled: ", "Created: Created container main", "Started: Started container main"} {
			if !strings.Contains(evs, want) {
				t.Errorf("%s: no %q event in:\n%s", name, want, evs)
			}
		}
	}
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	var body string
	wait.Eventually(t, 20*time.Second, "GET "+url, func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %q", resp.Status, b)
		}
		body = string(b)
		return nil
	})
	return body
}

// TestServiceEnvVars: a pod gets the variables of the Services in its
// namespace, created before it, as in Kubernetes.
func TestServiceEnvVars(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns := "svcenv"
	ensureNamespace(t, c.Client, ns)
	s, err := client.For[*v1.Service](c.Client).Create(context.Background(), &v1.Service{
		Metadata: &v1.ObjectMeta{Name: "redis-primary", Namespace: ns},
		Spec:     &v1.ServiceSpec{Selector: map[string]string{"app": "redis"}, Ports: []*v1.ServicePort{{Name: "redis", Port: 6379}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ip := s.GetSpec().GetClusterIp()
	if ip == "" {
		t.Fatal("the Service got no cluster IP")
	}
	createPod(t, c.Client, busyboxPod(ns, "client", c.Nodes[0].Name, "exec sleep 3600"))
	waitPod(t, c.Client, ns, "client", 60*time.Second, "Running", running)
	out, code := execIn(t, c.Client, ns, "client", "env")
	for _, want := range []string{
		"REDIS_PRIMARY_SERVICE_HOST=" + ip, "REDIS_PRIMARY_SERVICE_PORT=6379", "REDIS_PRIMARY_SERVICE_PORT_REDIS=6379",
		"REDIS_PRIMARY_PORT=tcp://" + ip + ":6379", "REDIS_PRIMARY_PORT_6379_TCP_ADDR=" + ip,
	} {
		if code != 0 || !strings.Contains(out, want+"\n") {
			t.Errorf("env lacks %s (exit %d):\n%s", want, code, out)
		}
	}
}

// TestHostNetworkPod: a hostNetwork pod serves on its node's address, with
// the node's IP as its pod IP and no netns or CNI of its own.
func TestHostNetworkPod(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	n := c.Nodes[1]
	ns := "hostnet"
	openNamespace(t, c.Client, ns)
	p := busyboxPod(ns, "web", n.Name, "mkdir -p /www && echo host > /www/index.html && exec httpd -f -p 18089 -h /www")
	p.Spec.HostNetwork = true
	createPod(t, c.Client, p)
	got := waitPod(t, c.Client, ns, "web", 60*time.Second, "Running", running)
	if got.Status.PodIp != n.IP.String() || got.Status.HostIp != n.IP.String() {
		t.Errorf("podIP %s hostIP %s, want the node's %s", got.Status.PodIp, got.Status.HostIp, n.IP)
	}
	if body := fetch(t, "http://"+net.JoinHostPort(n.IP.String(), "18089")+"/"); body != "host\n" {
		t.Errorf("GET from the node's address = %q", body)
	}
	// Under CRI the pod has the node's UTS namespace too, as in
	// Kubernetes: the host's name (the lab's nodes share the machine's);
	// the native backend gives it the node's name.
	want := n.Name
	if c.Runtime == cluster.RuntimeCRI {
		want, _ = os.Hostname()
	}
	out, code := execIn(t, c.Client, ns, "web", "hostname")
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("hostname %q (exit %d), want %s", out, code, want)
	}
}
