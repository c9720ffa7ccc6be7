package apiserver_test

import (
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// Every namespace has a "default" ServiceAccount (made with it, made again
// if deleted); pods get it when they name none, and a pod naming a missing
// account is refused.
func TestServiceAccountAdmission(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	sas := client.For[*v1.ServiceAccount](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "sa-team"}}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"default", "kube-system", "sa-team"} {
		if _, err := sas.Get(ctx, ns, "default"); err != nil {
			t.Errorf("%s has no default service account: %v", ns, err)
		}
	}
	p := newPod("web", nil)
	p.Metadata.Namespace = "sa-team"
	got, err := pods.Create(ctx, p)
	if err != nil || got.Spec.GetServiceAccountName() != "default" {
		t.Fatalf("pod without an account: %v, %v", got.GetSpec().GetServiceAccountName(), err)
	}
	p = newPod("robot", nil)
	p.Metadata.Namespace = "sa-team"
	p.Spec.ServiceAccountName = "robot"
	if _, err := pods.Create(ctx, p); err == nil || !strings.Contains(err.Error(), `pods "robot" is forbidden: error looking up service account sa-team/robot: serviceaccount "robot" not found`) {
		t.Errorf("missing account: %v", err)
	}
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "robot", Namespace: "sa-team"}, AutomountServiceAccountToken: proto.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, p); err != nil {
		t.Errorf("pod of an existing account: %v", err)
	}
	old, _ := sas.Get(ctx, "sa-team", "default")
	if _, err := sas.Delete(ctx, "sa-team", "default", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if again, err := sas.Get(ctx, "sa-team", "default"); err != nil || again.Metadata.Uid == old.GetMetadata().GetUid() {
		t.Errorf("default account not made again after a delete: %v %v", again, err)
	}
	// Bad input names the field; nothing stored.
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "Bad_Name", Namespace: "sa-team"}}); err == nil || !strings.Contains(err.Error(), "metadata.name") {
		t.Errorf("bad name: %v", err)
	}
}

// The token volume admission adds on create: Kubernetes' projected
// kube-api-access-xxxxx volume and a read-only mount of it in every
// container and init container, unless the pod or else its account says
// automountServiceAccountToken: false or the container already mounts
// something there; a missing account is refused with Kubernetes' text;
// mirror pods get nothing; updates (and pods stored without the volume)
// are left as they are.
func TestServiceAccountTokenVolume(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	sas := client.For[*v1.ServiceAccount](s.Client)
	for _, sa := range []*v1.ServiceAccount{
		{Metadata: &v1.ObjectMeta{Name: "no-token", Namespace: "default"}, AutomountServiceAccountToken: proto.Bool(false)},
		{Metadata: &v1.ObjectMeta{Name: "token", Namespace: "default"}, AutomountServiceAccountToken: proto.Bool(true)},
	} {
		if _, err := sas.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
	}
	wantSource := &v1.ProjectedVolumeSource{DefaultMode: proto.Int32(420), Sources: []*v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: proto.Int64(3607)}},
		{ConfigMap: &v1.ConfigMapProjection{Name: "kube-root-ca.crt", Items: []*v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardApi: &v1.DownwardAPIProjection{Items: []*v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}
	const saPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	volName := regexp.MustCompile(`^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	own := &v1.VolumeMount{Name: "mine", MountPath: saPath}
	withInit := func(p *v1.Pod) { p.Spec.InitContainers = []*v1.Container{{Name: "init", Image: "busybox:1.36"}} }
	for _, tc := range []struct {
		name   string
		change func(*v1.Pod)
		// mounted: the containers (init first) that must get the mount;
		// volume: whether the pod must get the volume.
		mounted []bool
		volume  bool
		err     string
	}{
		{name: "plain", change: withInit, mounted: []bool{true, true}, volume: true},
		{name: "two-containers", change: func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, &v1.Container{Name: "d", Image: "busybox:1.36"})
		}, mounted: []bool{true, true}, volume: true},
		{name: "pod-opts-out", change: func(p *v1.Pod) { withInit(p); p.Spec.AutomountServiceAccountToken = proto.Bool(false) }, mounted: []bool{false, false}},
		{name: "sa-opts-out", change: func(p *v1.Pod) { p.Spec.ServiceAccountName = "no-token" }, mounted: []bool{false}},
		{name: "pod-overrides-sa", change: func(p *v1.Pod) {
			p.Spec.ServiceAccountName = "no-token"
			p.Spec.AutomountServiceAccountToken = proto.Bool(true)
		}, mounted: []bool{true}, volume: true},
		{name: "sa-opts-in", change: func(p *v1.Pod) { p.Spec.ServiceAccountName = "token" }, mounted: []bool{true}, volume: true},
		{name: "own-mount", change: func(p *v1.Pod) {
			p.Spec.Volumes = []*v1.Volume{{Name: "mine", EmptyDir: &v1.EmptyDirVolumeSource{}}}
			p.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{own}
		}, mounted: []bool{false}},
		{name: "own-mount-in-one", change: func(p *v1.Pod) {
			withInit(p)
			p.Spec.Volumes = []*v1.Volume{{Name: "mine", EmptyDir: &v1.EmptyDirVolumeSource{}}}
			p.Spec.InitContainers[0].VolumeMounts = []*v1.VolumeMount{own}
		}, mounted: []bool{false, true}, volume: true},
		{name: "missing-account", change: func(p *v1.Pod) { p.Spec.ServiceAccountName = "ghost" },
			err: `pods "missing-account" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found`},
		{name: "mirror", change: func(p *v1.Pod) {
			p.Metadata.Annotations = map[string]string{"kubernetes.io/config.mirror": "abc"}
		}, mounted: []bool{false}},
		{name: "mirror-with-account", change: func(p *v1.Pod) {
			p.Metadata.Annotations = map[string]string{"kubernetes.io/config.mirror": "abc"}
			p.Spec.ServiceAccountName = "default"
		}, err: `pods "mirror-with-account" is forbidden: a mirror pod may not reference service accounts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod(tc.name, nil)
			tc.change(p)
			got, err := pods.Create(ctx, p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if _, err := pods.Get(ctx, "default", tc.name); err == nil {
					t.Error("refused pod was stored")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var added *v1.Volume
			for _, v := range got.Spec.Volumes {
				if strings.HasPrefix(v.Name, "kube-api-access-") {
					if added != nil {
						t.Errorf("two token volumes: %v", got.Spec.Volumes)
					}
					added = v
				}
			}
			switch {
			case tc.volume && added == nil:
				t.Fatalf("no token volume: %v", got.Spec.Volumes)
			case !tc.volume && added != nil:
				t.Fatalf("token volume added: %v", added)
			case added != nil:
				if !volName.MatchString(added.Name) {
					t.Errorf("volume name %q", added.Name)
				}
				if !proto.Equal(added, &v1.Volume{Name: added.Name, Projected: wantSource}) {
					t.Errorf("volume %v\nwant source %v", added, wantSource)
				}
			}
			cs := append(append([]*v1.Container(nil), got.Spec.InitContainers...), got.Spec.Containers...)
			if len(cs) != len(tc.mounted) {
				t.Fatalf("%d containers, want %d", len(cs), len(tc.mounted))
			}
			for i, c := range cs {
				var at []*v1.VolumeMount
				for _, m := range c.VolumeMounts {
					if m.MountPath == saPath {
						at = append(at, m)
					}
				}
				switch {
				case tc.mounted[i]:
					if len(at) != 1 || !proto.Equal(at[0], &v1.VolumeMount{Name: added.GetName(), MountPath: saPath, ReadOnly: true}) {
						t.Errorf("container %s: mounts %v, want one read-only mount of %s", c.Name, c.VolumeMounts, added.GetName())
					}
				case len(at) > 1 || (len(at) == 1 && !proto.Equal(at[0], own)):
					t.Errorf("container %s: mounts %v, want its own or none", c.Name, c.VolumeMounts)
				}
			}
			if _, mirror := got.Metadata.Annotations["kubernetes.io/config.mirror"]; mirror && got.Spec.ServiceAccountName != "" {
				t.Errorf("mirror pod got account %q", got.Spec.ServiceAccountName)
			}
		})
	}

	// Pod Security restricted (judging the pod after this admission, as in
	// Kubernetes) accepts the volume.
	if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "strict",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		t.Fatal(err)
	}
	strict := newPod("strict", nil)
	strict.Metadata.Namespace = "strict"
	strict.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true), SeccompProfile: &v1.SeccompProfile{Type: "RuntimeDefault"}}
	strict.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: proto.Bool(false), Capabilities: &v1.Capabilities{Drop: []string{"ALL"}}}
	if got, err := pods.Create(ctx, strict); err != nil || len(got.Spec.Volumes) != 1 || !volName.MatchString(got.Spec.Volumes[0].Name) {
		t.Errorf("restricted pod: %v, %v", got.GetSpec().GetVolumes(), err)
	}

	// An update leaves the volume as it was.
	got, err := pods.Mutate(ctx, "default", "plain", false, func(p *v1.Pod) error {
		p.Metadata.Labels = map[string]string{"rev": "2"}
		return nil
	})
	if err != nil || len(got.Spec.Volumes) != 1 || len(got.Spec.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("update: %v, %v", got.GetSpec(), err)
	}
	// A pod stored before the volume was added (no field, no volume) is
	// updated, not refused, and gets no volume.
	// (made here by creating it opted out, then clearing the field in etcd.)
	p := newPod("stored", nil)
	p.Spec.AutomountServiceAccountToken = proto.Bool(false)
	if _, err := pods.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Etcd().Get(ctx, "/registry/pods/default/stored")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw: %v", err)
	}
	stored := &v1.Pod{}
	if err := proto.Unmarshal(raw.Kvs[0].Value, stored); err != nil {
		t.Fatal(err)
	}
	stored.Spec.AutomountServiceAccountToken = nil
	b, _ := proto.Marshal(stored)
	if _, err := s.Etcd().Put(ctx, "/registry/pods/default/stored", string(b)); err != nil {
		t.Fatal(err)
	}
	got, err = pods.Mutate(ctx, "default", "stored", false, func(p *v1.Pod) error {
		p.Metadata.Labels = map[string]string{"rev": "2"}
		return nil
	})
	if err != nil || len(got.Spec.Volumes) != 0 || got.Spec.AutomountServiceAccountToken != nil || got.Metadata.Labels["rev"] != "2" {
		t.Fatalf("update of a pod stored without the volume: %v, %v", got.GetSpec(), err)
	}
}

// A pod that names no pull secrets gets its account's, in order, as
// Kubernetes' ServiceAccount admission copies them (also when the account
// mounts no token); a pod that names some keeps its own; updates copy
// nothing; an account's invalid reference is refused naming the field.
func TestServiceAccountImagePullSecrets(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	sas := client.For[*v1.ServiceAccount](s.Client)
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "builder", Namespace: "default"},
		AutomountServiceAccountToken: proto.Bool(false),
		ImagePullSecrets:             []*v1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror-creds"}}}); err != nil {
		t.Fatal(err)
	}
	names := func(p *v1.Pod) string {
		var out []string
		for _, r := range p.GetSpec().GetImagePullSecrets() {
			out = append(out, r.GetName())
		}
		return strings.Join(out, ",")
	}
	p := newPod("copied", nil)
	p.Spec.ServiceAccountName = "builder"
	got, err := pods.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); n != "regcred,mirror-creds" {
		t.Errorf("pod of builder got pull secrets %q, want regcred,mirror-creds", n)
	}
	if stored, err := pods.Get(ctx, "default", "copied"); err != nil || names(stored) != "regcred,mirror-creds" {
		t.Errorf("stored pod: %q %v", names(stored), err)
	}
	p = newPod("own", nil)
	p.Spec.ServiceAccountName = "builder"
	p.Spec.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "mine"}}
	if got, err := pods.Create(ctx, p); err != nil || names(got) != "mine" {
		t.Errorf("pod with its own pull secrets: %q %v, want mine", names(got), err)
	}
	if got, err := pods.Create(ctx, newPod("plain", nil)); err != nil || names(got) != "" {
		t.Errorf("pod of the default account: %q %v, want none", names(got), err)
	}
	// An update of the account changes no stored pod; the pull secrets
	// of a pod are fixed as Kubernetes fixes its spec.
	sa, _ := sas.Get(ctx, "default", "builder")
	sa.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "other"}}
	if _, err := sas.Update(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if stored, _ := pods.Get(ctx, "default", "copied"); names(stored) != "regcred,mirror-creds" {
		t.Errorf("after the account's update the pod has %q", names(stored))
	}
	stored, _ := pods.Get(ctx, "default", "plain")
	stored.Spec.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "late"}}
	if _, err := pods.Update(ctx, stored); err == nil {
		t.Error("changing a pod's imagePullSecrets was accepted")
	}
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "bad", Namespace: "default"},
		ImagePullSecrets: []*v1.LocalObjectReference{{Name: "Not_A_Name"}}}); err == nil || !strings.Contains(err.Error(), "imagePullSecrets[0].name") {
		t.Errorf("account with an invalid pull secret name: %v", err)
	}
	if _, err := sas.Get(ctx, "default", "bad"); err == nil {
		t.Error("the invalid account was stored")
	}
}
