package kubeapi_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// testPodLevelFields: pod-level resources, hostUsers and a container's
// restartPolicy and restartPolicyRules go in through the Kubernetes door
// (client-go, protobuf bodies) under Kubernetes' names, come back from
// it and from the gRPC door as sent (with the pod-level requests
// defaulted from the limits); a bad rule is refused with Kubernetes'
// message and nothing is stored.
func testPodLevelFields(t *testing.T, e *env) {
	ctx := context.Background()
	cs := e.clientset(t)
	never := corev1.ContainerRestartPolicyNever
	in := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "podlevel"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		HostUsers:     ptr.To(false),
		Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		Containers: []corev1.Container{{Name: "c", Image: "tugboat.local/busybox:latest", RestartPolicy: &never,
			RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, in, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods("default").Delete(context.Background(), "podlevel", metav1.DeleteOptions{})
	})
	got, err := cs.CoreV1().Pods("default").Get(ctx, "podlevel", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.HostUsers == nil || *s.HostUsers {
		t.Errorf("hostUsers %v, want false", s.HostUsers)
	}
	if s.Resources == nil || s.Resources.Limits.Cpu().String() != "200m" || s.Resources.Requests.Memory().String() != "64Mi" {
		t.Errorf("resources %+v, want limits cpu 200m and requests defaulted from the limits", s.Resources)
	}
	c := s.Containers[0]
	if c.RestartPolicy == nil || *c.RestartPolicy != never || len(c.RestartPolicyRules) != 1 ||
		c.RestartPolicyRules[0].ExitCodes.Operator != "In" || c.RestartPolicyRules[0].ExitCodes.Values[0] != 42 {
		t.Errorf("restartPolicy %v rules %+v", c.RestartPolicy, c.RestartPolicyRules)
	}
	if got.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("qosClass %s, want Guaranteed (pod-level limits equal requests)", got.Status.QOSClass)
	}
	p, err := client.For[*v1.Pod](e.srv.Client).Get(ctx, "default", "podlevel")
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.HostUsers == nil || p.Spec.GetHostUsers() || p.Spec.GetResources().GetLimits()["memory"] != "64Mi" ||
		p.Spec.Containers[0].GetRestartPolicyRules()[0].GetExitCodes().GetValues()[0] != 42 {
		t.Errorf("through the gRPC door: %v", p.Spec)
	}

	bad := in.DeepCopy()
	bad.Name = "podlevel-bad"
	bad.Spec.Containers[0].RestartPolicy = nil
	bad.Spec.Containers[0].RestartPolicyRules[0].ExitCodes.Operator = "Equals"
	_, err = cs.CoreV1().Pods("default").Create(ctx, bad, metav1.CreateOptions{})
	for _, want := range []string{
		"spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
		`spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Equals": supported values: "In", "NotIn"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad rules: %v, want %q", err, want)
		}
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "podlevel-bad", metav1.GetOptions{}); err == nil {
		t.Error("the refused pod was stored")
	}
}
