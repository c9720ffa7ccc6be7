package kubeapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// testImagePullSecrets: imagePullSecrets round-trip both doors — a pod and
// a service account written by client-go (protobuf bodies) are read by the
// gRPC client, the account's secrets are copied into a pod that names
// none, kubectl's docker-registry secret is stored as the kubelet reads
// it, kubectl describe serviceaccount lists them, and a bad
// dockerconfigjson secret is refused naming the key.
func testImagePullSecrets(t *testing.T, e *env) {
	ctx := context.Background()
	cs := e.clientset(t)
	e.kubectl(t, "create", "secret", "docker-registry", "ips-regcred", "--docker-server=reg.example:5000", "--docker-username=lab", "--docker-password=s3cret")
	sec, err := client.For[*v1.Secret](e.srv.Client).Get(ctx, "default", "ips-regcred")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	if err := json.Unmarshal(sec.Data[".dockerconfigjson"], &cfg); err != nil || sec.Type != "kubernetes.io/dockerconfigjson" ||
		cfg.Auths["reg.example:5000"].Auth != "bGFiOnMzY3JldA==" || cfg.Auths["reg.example:5000"].Username != "lab" {
		t.Errorf("kubectl's docker-registry secret: %s %s %v", sec.Type, sec.Data[".dockerconfigjson"], err)
	}

	spec := podSpec.DeepCopy()
	spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "ips-regcred"}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: om("ips-own"), Spec: *spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: om("ips-builder"),
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "ips-regcred"}, {Name: "ips-missing"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec = podSpec.DeepCopy()
	spec.ServiceAccountName = "ips-builder"
	got, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: om("ips-copied"), Spec: *spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Spec.ImagePullSecrets); n != 2 || got.Spec.ImagePullSecrets[0].Name != "ips-regcred" || got.Spec.ImagePullSecrets[1].Name != "ips-missing" {
		t.Errorf("client-go's pod of ips-builder: %v", got.Spec.ImagePullSecrets)
	}
	pods := client.For[*v1.Pod](e.srv.Client)
	for name, want := range map[string]string{"ips-own": "ips-regcred", "ips-copied": "ips-regcred,ips-missing"} {
		p, err := pods.Get(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range p.Spec.ImagePullSecrets {
			names = append(names, r.Name)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("gRPC door: pod %s has pull secrets %v, want %s", name, names, want)
		}
	}
	if out := e.kubectl(t, "get", "pod", "ips-copied", "-o", "jsonpath={.spec.imagePullSecrets[*].name}"); out != "ips-regcred ips-missing" {
		t.Errorf("kubectl jsonpath: %q", out)
	}
	out := e.kubectl(t, "describe", "serviceaccount", "ips-builder")
	if !strings.Contains(out, "Image pull secrets:  ips-regcred\n") || !strings.Contains(out, "ips-missing (not found)") {
		t.Errorf("kubectl describe serviceaccount:\n%s", out)
	}

	_, err = cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: om("ips-bad"), Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte("not json")}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "data[.dockerconfigjson]") {
		t.Errorf("bad dockerconfigjson: %v", err)
	}
	spec = podSpec.DeepCopy()
	spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "Bad_Name"}}
	_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: om("ips-bad"), Spec: *spec}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.imagePullSecrets[0].name") {
		t.Errorf("bad pull secret name: %v", err)
	}
}
