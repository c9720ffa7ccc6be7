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
	wait.Eventually(t, 30*time.Second, "the audit annotations", func() error {
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

// TestPodSecurityDefaultBaseline: with no --pod-security given, a user
// with `edit` in an unlabelled namespace cannot make a pod that mounts the
// node's root (hostPath /), nor one on the host network, with Kubernetes'
// message; a Deployment whose template would be refused is stored with
// the warning; an admin opens a namespace with the enforce label, and
// kube-system stays exempt.
func TestPodSecurityDefaultBaseline(t *testing.T) {
	s := apiservertest.StartSecure(t, withTokens(t, "eve"))
	ctx := ctxT(t)
	if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.RoleBinding](s.Client).Create(ctx, roleBinding("team", "eve-edit", "eve", "ClusterRole", "edit")); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, s, "eve", "create", "pods", "team", "")
	var warned warnings
	eve, err := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, ""), Token: "eve-token", Warnings: warned.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eve.Close() })
	pods := client.For[*v1.Pod](eve)
	rootPod := func(ns, name string) *v1.Pod {
		p := newPod(name, nil)
		p.Metadata.Namespace = ns
		p.Spec.Volumes = []*v1.Volume{{Name: "root", HostPath: &v1.HostPathVolumeSource{Path: "/"}}}
		p.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "root", MountPath: "/host"}}
		return p
	}
	_, err = pods.Create(ctx, rootPod("team", "rooted"))
	want := `pods "rooted" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes (volume "root")`
	if !isForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("edit user's hostPath:/ pod: %v\nwant Forbidden %s", err, want)
	}
	if _, err := client.For[*v1.Pod](s.Client).Get(ctx, "team", "rooted"); err == nil {
		t.Error("the refused pod was stored")
	}
	hostNet := newPod("hostnet", nil)
	hostNet.Metadata.Namespace = "team"
	hostNet.Spec.HostNetwork = true
	hostNet.Spec.NodeName = "node1"
	if _, err := pods.Create(ctx, hostNet); !isForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`) {
		t.Errorf("edit user's hostNetwork pod: %v", err)
	}
	// An ordinary pod is fine and not warned about (warn is baseline too).
	if _, err := pods.Create(ctx, &v1.Pod{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "team"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36"}}}}); err != nil {
		t.Errorf("a baseline pod: %v", err)
	}
	if w := warned.take(); len(w) != 0 {
		t.Errorf("warnings for a baseline pod: %q", w)
	}
	// The workload is stored, warned about; its pods would be refused.
	tmpl := rootPod("", "")
	d := &v1.Deployment{Metadata: &v1.ObjectMeta{Name: "rooted", Namespace: "team"}, Spec: &v1.DeploymentSpec{
		Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "rooted"}},
		Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "rooted"}}, Spec: tmpl.Spec}}}
	if _, err := client.For[*v1.Deployment](eve).Create(ctx, d); err != nil {
		t.Errorf("Deployment: %v", err)
	}
	wantWarn := `would violate PodSecurity "baseline:latest": hostPath volumes (volume "root")`
	if w := warned.take(); !slices.Equal(w, []string{wantWarn}) {
		t.Errorf("Deployment warnings %q, want %q", w, wantWarn)
	}
	// kube-system is exempt; an admin opens a namespace by its label.
	if _, err := client.For[*v1.Pod](s.Client).Create(ctx, rootPod("kube-system", "helper")); err != nil {
		t.Errorf("kube-system: %v", err)
	}
	if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "infra",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.Pod](s.Client).Create(ctx, rootPod("infra", "agent")); err != nil {
		t.Errorf("a namespace labelled privileged: %v", err)
	}
	// The flag's opt-out: Kubernetes' own default.
	open := apiservertest.Start(t, func(c *apiserver.Config) { c.PodSecurity.Defaults = "enforce=privileged" })
	if _, err := client.For[*v1.Pod](open.Client).Create(ctx, rootPod("default", "rooted")); err != nil {
		t.Errorf("--pod-security enforce=privileged: %v", err)
	}
}
