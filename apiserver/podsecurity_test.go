package apiserver_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// warnings collects what a client was warned of.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) add(s string) { w.mu.Lock(); w.list = append(w.list, s); w.mu.Unlock() }

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// TestPodSecurityAdmission: a baseline namespace refuses hostPath,
// hostNetwork and privileged pods naming the field and the level; a
// warn-only namespace stores them with the warnings returned on both doors
// and the audit annotations logged; kube-system is exempt; the cluster
// default applies to unlabelled namespaces; bad labels are refused.
func TestPodSecurityAdmission(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.log")
	s := apiservertest.StartSecure(t, apiservertest.WithKubeAPI, func(c *apiserver.Config) {
		c.Auth.AuditLogPath = audit
		c.PodSecurity.Defaults = "enforce=baseline"
	})
	ctx := ctxT(t)
	var warned warnings
	c, err := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, "admin"), Warnings: warned.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	nss := client.For[*v1.Namespace](c)
	pods := client.For[*v1.Pod](c)
	ns := func(name string, labels map[string]string) {
		t.Helper()
		if _, err := nss.Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	ns("base", map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"})
	ns("open", map[string]string{"pod-security.kubernetes.io/enforce": "privileged",
		"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/audit": "restricted"})
	ns("plain", nil)

	hostPath := func(p *v1.Pod) {
		p.Spec.Volumes = []*v1.Volume{{Name: "root", HostPath: &v1.HostPathVolumeSource{Path: "/"}}}
		p.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "root", MountPath: "/host"}}
	}
	hostNet := func(p *v1.Pod) { p.Spec.HostNetwork = true }
	priv := func(p *v1.Pod) {
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: proto.Bool(true)}
	}
	pod := func(ns, name string, edit func(*v1.Pod)) *v1.Pod {
		p := newPod(name, nil)
		p.Metadata.Namespace = ns
		edit(p)
		return p
	}
	for _, tc := range []struct {
		name string
		edit func(*v1.Pod)
		want string
	}{
		{"hostpath", hostPath, `pods "hostpath" is forbidden: violates PodSecurity "baseline:v1.30": hostPath volumes (volume "root")`},
		{"hostnet", hostNet, `pods "hostnet" is forbidden: violates PodSecurity "baseline:v1.30": host namespaces (hostNetwork=true)`},
		{"priv", priv, `pods "priv" is forbidden: violates PodSecurity "baseline:v1.30": privileged (container "c" must not set securityContext.privileged=true)`},
	} {
		_, err := pods.Create(ctx, pod("base", tc.name, tc.edit))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s in baseline: %v\nwant %s", tc.name, err, tc.want)
		}
		if _, err := pods.Get(ctx, "base", tc.name); err == nil {
			t.Errorf("%s was stored", tc.name)
		}
	}
	if _, err := pods.Create(ctx, pod("base", "fine", func(*v1.Pod) {})); err != nil {
		t.Errorf("a baseline pod in baseline: %v", err)
	}
	// The cluster default (--pod-security enforce=baseline) for a
	// namespace without labels; kube-system exempt.
	if _, err := pods.Create(ctx, pod("plain", "hostnet", hostNet)); err == nil || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) {
		t.Errorf("unlabelled namespace, default baseline: %v", err)
	}
	if _, err := pods.Create(ctx, pod("kube-system", "proxy", func(p *v1.Pod) { hostNet(p); hostPath(p); priv(p) })); err != nil {
		t.Errorf("kube-system is exempt: %v", err)
	}
	if w := warned.take(); len(w) != 0 {
		t.Errorf("warnings without a warn level: %q", w)
	}

	// Warn-only: stored, warned, audited.
	if _, err := pods.Create(ctx, pod("open", "hostpath", hostPath)); err != nil {
		t.Fatalf("privileged enforce refused: %v", err)
	}
	wantWarn := `would violate PodSecurity "baseline:latest": hostPath volumes (volume "root")`
	if w := warned.take(); !slices.Equal(w, []string{wantWarn}) {
		t.Errorf("warnings %q, want %q", w, wantWarn)
	}
	wait.Eventually(t, 10*time.Second, "the audit annotations", func() error {
		return auditAnnotations(audit, "open", "hostpath", map[string]string{
			"pod-security.kubernetes.io/enforce-policy":   "privileged:latest",
			"pod-security.kubernetes.io/audit-violations": `would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false`,
		})
	})
	// The Kubernetes door sends them as Warning headers (kubectl prints them).
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: mustTLS(t, s, "admin")}}
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostnet"},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"busybox"}]}}`
	resp, err := hc.Post("https://"+s.KubeAddr()+"/api/v1/namespaces/open/pods", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !slices.Contains(resp.Header.Values("Warning"), `299 - "would violate PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"`) {
		t.Errorf("HTTP create: %d, Warning %q", resp.StatusCode, resp.Header.Values("Warning"))
	}
	// Workloads are warned about, never refused (their pods are).
	d := &v1.Deployment{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "base"}, Spec: &v1.DeploymentSpec{
		Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: pod("", "", hostNet).Spec}}}
	if _, err := client.For[*v1.Deployment](c).Create(ctx, d); err != nil {
		t.Errorf("a Deployment in baseline: %v", err)
	}
	// Turning the enforce level up warns about the pods that violate it.
	open, err := nss.Get(ctx, "", "open")
	if err != nil {
		t.Fatal(err)
	}
	open.Metadata.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	if _, err := nss.Update(ctx, open); err != nil {
		t.Fatal(err)
	}
	if w := warned.take(); len(w) != 3 || w[0] != `existing pods in namespace "open" violate the new PodSecurity enforce level "baseline:latest"` ||
		!slices.Contains(w, "hostpath: hostPath volumes") || !slices.Contains(w, "hostnet: host namespaces") {
		t.Errorf("namespace update warnings %q", w)
	}
	// Bad labels are refused naming the label; nothing stored.
	_, err = nss.Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "bad", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "strict"}}})
	if err == nil || !strings.Contains(err.Error(), `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`) {
		t.Errorf("bad level: %v", err)
	}
	if _, err := nss.Get(ctx, "", "bad"); err == nil {
		t.Error("namespace with a bad label stored")
	}
}

// auditAnnotations finds the audit line of the Create of ns/name and
// checks its annotations start with want's values.
func auditAnnotations(path, ns, name string, want map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Verb, Namespace, Name string
			Annotations           map[string]string
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Verb != "Create" || l.Namespace != ns || l.Name != name {
			continue
		}
		for k, v := range want {
			if !strings.HasPrefix(l.Annotations[k], v) {
				return &auditMismatch{k, l.Annotations[k], v}
			}
		}
		return nil
	}
	return os.ErrNotExist
}

type auditMismatch struct{ key, got, want string }

func (e *auditMismatch) Error() string {
	return "annotation " + e.key + " = " + e.got + ", want prefix " + e.want
}
