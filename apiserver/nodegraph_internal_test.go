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
