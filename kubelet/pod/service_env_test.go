package pod

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func svc(ns, name, ip string, ports ...*v1.ServicePort) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: ns, Name: name}, Spec: &v1.ServiceSpec{ClusterIp: ip, Ports: ports}}
}

// TestServiceEnv: the Service variables a container gets, in Kubernetes'
// names, which Services count, and that the container's own env wins and
// may refer to them.
func TestServiceEnv(t *testing.T) {
	services := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", &v1.ServicePort{Name: "https", Protocol: "TCP", Port: 443}),
		svc("default", "redis-primary", "10.96.0.11", &v1.ServicePort{Port: 6379}, &v1.ServicePort{Name: "metrics", Protocol: "UDP", Port: 9121}),
		svc("shop", "web", "10.96.0.20", &v1.ServicePort{Name: "http", Port: 80}),
		svc("shop", "headless", "None", &v1.ServicePort{Port: 80}),
		svc("shop", "no-ip", "", &v1.ServicePort{Port: 80}),
		svc("shop", "kubernetes", "10.96.0.99", &v1.ServicePort{Port: 8443}),
	}
	tests := []struct {
		name     string
		ns       string
		links    *bool
		want     map[string]string
		wantNone []string
	}{
		{"default namespace", "default", nil, map[string]string{
			"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
			"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
			"REDIS_PRIMARY_SERVICE_HOST": "10.96.0.11", "REDIS_PRIMARY_SERVICE_PORT": "6379",
			"REDIS_PRIMARY_SERVICE_PORT_METRICS": "9121", "REDIS_PRIMARY_PORT": "tcp://10.96.0.11:6379",
			"REDIS_PRIMARY_PORT_6379_TCP": "tcp://10.96.0.11:6379", "REDIS_PRIMARY_PORT_6379_TCP_PROTO": "tcp",
			"REDIS_PRIMARY_PORT_6379_TCP_PORT": "6379", "REDIS_PRIMARY_PORT_9121_UDP": "udp://10.96.0.11:9121",
		}, []string{"WEB_SERVICE_HOST"}},
		{"other namespace: its own Services, and its own kubernetes wins", "shop", nil, map[string]string{
			"WEB_SERVICE_HOST": "10.96.0.20", "WEB_SERVICE_PORT_HTTP": "80", "WEB_PORT_80_TCP_ADDR": "10.96.0.20",
			"KUBERNETES_SERVICE_HOST": "10.96.0.99", "KUBERNETES_SERVICE_PORT": "8443",
		}, []string{"HEADLESS_SERVICE_HOST", "NO_IP_SERVICE_HOST", "REDIS_PRIMARY_SERVICE_HOST"}},
		{"enableServiceLinks false: only the master", "shop", proto.Bool(false), map[string]string{
			"KUBERNETES_SERVICE_HOST": "10.96.0.1",
		}, []string{"WEB_SERVICE_HOST"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "app")
			pod.Metadata.Namespace = tc.ns
			pod.Spec.EnableServiceLinks = tc.links
			got := serviceEnv(pod, services)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tc.wantNone {
				if _, ok := got[k]; ok {
					t.Errorf("%s set", k)
				}
			}
		})
	}

	// Through a worker: the container's own env wins and may use them;
	// until the Services are read the container waits.
	e := newTestEnv(t)
	e.src.services = services
	e.src.servicesErr = errors.New("services have not yet been read at least once, cannot construct envvars")
	pod := newPod("envs", "app")
	pod.Spec.Containers[0].Env = []*v1.EnvVar{
		{Name: "KUBERNETES_SERVICE_PORT", Value: "mine"},
		{Name: "REDIS", Value: "redis://$(REDIS_PRIMARY_SERVICE_HOST):$(REDIS_PRIMARY_SERVICE_PORT)"},
	}
	w := e.worker(pod)
	e.sync(w)
	wt := containerState(w.status, "app").GetState().GetWaiting()
	if wt.GetReason() != ReasonCreateContainerConfigError || !strings.Contains(wt.GetMessage(), "services have not yet been read") {
		t.Fatalf("waiting %v, want CreateContainerConfigError until the Services are read", wt)
	}
	e.src.servicesErr = nil
	e.advance(configRetry)
	e.sync(w)
	run := e.rt.running()
	if len(run) != 1 {
		t.Fatalf("not running: %v", containerState(w.status, "app"))
	}
	env := map[string]string{}
	for _, ev := range e.rt.containers[run[0].ID].cfg.Env {
		env[ev.Name] = ev.Value
	}
	if env["KUBERNETES_SERVICE_PORT"] != "mine" || env["REDIS"] != "redis://10.96.0.11:6379" || env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("env %v", env)
	}
}
