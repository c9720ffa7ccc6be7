package apiserver

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/watchcache"
)

func graphPod(name, node, configMap string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.PodSpec{NodeName: node, ServiceAccountName: "default", Volumes: []*v1.Volume{{
			Name: "kube-api-access", Projected: &v1.ProjectedVolumeSource{Sources: []*v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{Name: configMap}},
			}},
		}}},
	}
}

// TestPodGraph: the graph knows a pod's references on its node from the
// bind on, not before, not on another node, not in another namespace, and
// not after the pod is deleted; a re-list replaces it.
func TestPodGraph(t *testing.T) {
	g := newPodGraph()
	g.reset([]v1.Object{graphPod("a", "n1", "kube-root-ca.crt"), graphPod("u", "", "unbound")})
	type ask struct {
		node, kind, ns, name string
		want                 bool
	}
	check := func(step string, asks ...ask) {
		t.Helper()
		for _, a := range asks {
			if got := g.referenced(a.node, a.kind, a.ns, a.name); got != a.want {
				t.Errorf("%s: referenced(%s, %s, %s/%s) = %v, want %v", step, a.node, a.kind, a.ns, a.name, got, a.want)
			}
		}
	}
	check("listed",
		ask{"n1", "configmaps", "default", "kube-root-ca.crt", true},
		ask{"n1", "serviceaccounts", "default", "default", true},
		ask{"n1", "secrets", "default", "kube-root-ca.crt", false},
		ask{"n1", "configmaps", "other", "kube-root-ca.crt", false},
		ask{"n2", "configmaps", "default", "kube-root-ca.crt", false},
		ask{"", "configmaps", "default", "unbound", false})

	g.apply(&watchcache.Event{Type: watchcache.Modified, Obj: graphPod("u", "n2", "unbound"), Prev: graphPod("u", "", "unbound")})
	check("bound", ask{"n2", "configmaps", "default", "unbound", true})

	g.apply(&watchcache.Event{Type: watchcache.Deleted, Obj: graphPod("a", "n1", "kube-root-ca.crt"), Prev: graphPod("a", "n1", "kube-root-ca.crt")})
	check("deleted", ask{"n1", "configmaps", "default", "kube-root-ca.crt", false}, ask{"n2", "configmaps", "default", "unbound", true})
	if _, ok := g.byNode["n1"]; ok {
		t.Error("a node without pods is still in the graph")
	}

	g.reset(nil)
	check("re-listed empty", ask{"n2", "configmaps", "default", "unbound", false})
}

// TestPodReferencesImagePullSecrets: a pod's image pull secrets are Secrets
// it uses (the kubelet reads them to pull), never ConfigMaps.
func TestPodReferencesImagePullSecrets(t *testing.T) {
	p := graphPod("a", "n1", "kube-root-ca.crt")
	p.Spec.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}
	for _, c := range []struct {
		kind, name string
		want       bool
	}{
		{"secrets", "regcred", true},
		{"secrets", "mirror", true},
		{"secrets", "other", false},
		{"configmaps", "regcred", false},
	} {
		if got := podReferences(p, c.kind, c.name); got != c.want {
			t.Errorf("podReferences(%s %s) = %v, want %v", c.kind, c.name, got, c.want)
		}
	}
}

// TestPodReferencesContainers: env valueFrom and envFrom of every kind of
// container, ephemeral ones included (added by kubectl debug), name the
// ConfigMaps and Secrets the node may read, each only as its own kind.
func TestPodReferencesContainers(t *testing.T) {
	envFrom := func(cm, sec string) ([]*v1.EnvVar, []*v1.EnvFromSource) {
		return []*v1.EnvVar{
				{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.KeySelector{Name: cm + "-key", Key: "a"}}},
				{Name: "B", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.KeySelector{Name: sec + "-key", Key: "b"}}},
			}, []*v1.EnvFromSource{
				{ConfigMapRef: &v1.LocalObjectReference{Name: cm + "-all"}},
				{SecretRef: &v1.LocalObjectReference{Name: sec + "-all"}},
			}
	}
	p := graphPod("a", "n1", "kube-root-ca.crt")
	env, from := envFrom("init-cm", "init-sec")
	p.Spec.InitContainers = []*v1.Container{{Name: "init", Env: env, EnvFrom: from}}
	env, from = envFrom("app-cm", "app-sec")
	p.Spec.Containers = []*v1.Container{{Name: "app", Env: env, EnvFrom: from}}
	env, from = envFrom("debug-cm", "debug-sec")
	p.Spec.EphemeralContainers = []*v1.EphemeralContainer{{Name: "debugger", Env: env, EnvFrom: from}}
	for _, who := range []string{"init", "app", "debug"} {
		for _, how := range []string{"key", "all"} {
			cm, sec := who+"-cm-"+how, who+"-sec-"+how
			for _, c := range []struct {
				kind, name string
				want       bool
			}{
				{"configmaps", cm, true}, {"secrets", sec, true},
				{"secrets", cm, false}, {"configmaps", sec, false},
			} {
				if got := podReferences(p, c.kind, c.name); got != c.want {
					t.Errorf("podReferences(%s %s) = %v, want %v", c.kind, c.name, got, c.want)
				}
			}
		}
	}
	if podReferences(p, "secrets", "debug-sec") || podReferences(p, "configmaps", "other") {
		t.Error("a name no container uses is referenced")
	}
}
