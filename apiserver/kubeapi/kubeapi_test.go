package kubeapi_test

import (
	"context"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestKubeAPI runs every test of the package against one shared cluster
// (env): starting an apiserver per test would cost the suite's budget.
// Tests that change the cluster's shape (the apiserver restart) run last.
func TestKubeAPI(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		f    func(*testing.T, *env)
	}{
		{"kubectl/apply-get", testKubectlApplyGet},
		{"kubectl/watch", testKubectlWatch},
		{"kubectl/change", testKubectlChange},
		{"kubectl/resize", testKubectlResize},
		{"kubectl/apply-server-side", testKubectlServerSideApply},
		{"kubectl/managed-fields-updates", testKubectlManagedFieldsUpdates},
		{"kubectl/edit", testKubectlEdit},
		{"kubectl/rollout", testKubectlRollout},
		{"kubectl/create-expose-run", testKubectlCreate},
		{"kubectl/diff-kustomize", testKubectlDiffKustomize},
		{"kubectl/delete-cascade", testKubectlDeleteCascade},
		{"kubectl/discovery-explain", testKubectlDiscovery},
		{"kubectl/auth", testKubectlAuth},
		{"kubectl/create-token", testKubectlCreateToken},
		{"kubectl/componentstatuses", testKubectlComponentStatuses},
		{"kubectl/debug", testKubectlDebug},
		{"http/bad-input", testBadInput},
		{"http/volume-mount-fields", testVolumeMountFields},
		{"clientgo/scale-rbac", testScaleSubresourceRBAC},
		{"clientgo/apply-status", testClientGoApplyStatus},
		{"http/watch-expired", testWatchExpired},
		{"clientgo/crud", testClientGoCRUD},
		{"clientgo/image-pull-secrets", testImagePullSecrets},
		{"clientgo/pod-level-fields", testPodLevelFields},
		{"clientgo/controller", testClientGoController},
		{"clientgo/informer-restart", testClientGoInformerRestart},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, e) })
	}
}

// deployment reads a Deployment through the gRPC door: the effect of a
// kubectl command is checked in the cluster, not in kubectl's output.
func (e *env) deployment(t *testing.T, name string) *v1.Deployment {
	t.Helper()
	d, err := client.For[*v1.Deployment](e.srv.Client).Get(context.Background(), "default", name)
	if err != nil {
		t.Fatalf("get deployment %s: %v", name, err)
	}
	return d
}
