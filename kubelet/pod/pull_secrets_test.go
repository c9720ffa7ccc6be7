package pod

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

func dockerConfigSecret(name, auths string) *v1.Secret {
	return &v1.Secret{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"}, Type: "kubernetes.io/dockerconfigjson",
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":` + auths + `}`)}}
}

// TestImagePullSecrets: the kubelet offers the matching credentials of
// the pod's pull secrets in order (a missing secret is skipped with
// Kubernetes' warning event), stops at the first that works, reports
// every failure when none does, and pulls anonymously when none match.
func TestImagePullSecrets(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("lab:s3cret"))
	good := runtime.RegistryAuth{Username: "lab", Password: "s3cret"}
	for _, tc := range []struct {
		name      string
		secrets   []*v1.Secret
		refs      []string
		image     string
		wantAuth  *runtime.RegistryAuth
		wantPulls []*runtime.RegistryAuth
		wantErr   string // substring of the waiting message; empty: running
		wantEvent string
	}{
		{name: "no secrets: anonymous", image: "reg.example:5000/lab/app:v1", wantPulls: []*runtime.RegistryAuth{nil}},
		{name: "matching secret", image: "reg.example:5000/lab/app:v1", wantAuth: &good,
			secrets: []*v1.Secret{dockerConfigSecret("regcred", `{"reg.example:5000":{"auth":"`+auth+`"}}`)}, refs: []string{"regcred"},
			wantPulls: []*runtime.RegistryAuth{&good}},
		{name: "wrong then right, in order", image: "reg.example:5000/lab/app:v1", wantAuth: &good,
			secrets: []*v1.Secret{dockerConfigSecret("old", `{"reg.example:5000":{"username":"lab","password":"old"}}`),
				dockerConfigSecret("regcred", `{"reg.example:5000":{"username":"lab","password":"s3cret"}}`)},
			refs:      []string{"old", "regcred"},
			wantPulls: []*runtime.RegistryAuth{{Username: "lab", Password: "old"}, &good}},
		{name: "all refused", image: "reg.example:5000/lab/app:v1", wantAuth: &good,
			secrets: []*v1.Secret{dockerConfigSecret("a", `{"reg.example:5000":{"username":"lab","password":"x"}}`),
				dockerConfigSecret("b", `{"reg.example:5000":{"username":"lab","password":"y"}}`)},
			refs:      []string{"a", "b"},
			wantPulls: []*runtime.RegistryAuth{{Username: "lab", Password: "x"}, {Username: "lab", Password: "y"}},
			wantErr:   "[pull reg.example:5000/lab/app:v1: image pull failed: 401 Unauthorized, pull reg.example:5000/lab/app:v1: image pull failed: 401 Unauthorized]"},
		{name: "no match: anonymous", image: "other.example/app:v1",
			secrets: []*v1.Secret{dockerConfigSecret("regcred", `{"reg.example:5000":{"auth":"`+auth+`"}}`)}, refs: []string{"regcred"},
			wantPulls: []*runtime.RegistryAuth{nil}},
		{name: "missing secret: warning, pull anyway", image: "reg.example:5000/lab/app:v1", wantAuth: &good,
			secrets: []*v1.Secret{dockerConfigSecret("regcred", `{"reg.example:5000":{"auth":"`+auth+`"}}`)}, refs: []string{"gone", "regcred", "also-gone"},
			wantPulls: []*runtime.RegistryAuth{&good},
			wantEvent: "Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (gone, also-gone); attempting to pull the image may not succeed."},
		{name: "missing secret, registry refuses", image: "reg.example:5000/lab/app:v1", wantAuth: &good, refs: []string{"gone"},
			wantPulls: []*runtime.RegistryAuth{nil}, wantErr: "401 Unauthorized",
			wantEvent: "Unable to retrieve some image pull secrets (gone)"},
		{name: "secret that does not parse", image: "reg.example:5000/lab/app:v1",
			secrets: []*v1.Secret{dockerConfigSecret("broken", `{"reg.example:5000":{"auth":"bm9jb2xvbg=="}}`)}, refs: []string{"broken"},
			wantErr: `image pull secret "broken": registry "reg.example:5000": unable to parse auth field`},
		{name: "docker hub", image: "busybox:1.36", wantAuth: &good,
			secrets: []*v1.Secret{dockerConfigSecret("hub", `{"https://index.docker.io/v1/":{"auth":"`+auth+`"}}`)}, refs: []string{"hub"},
			wantPulls: []*runtime.RegistryAuth{&good}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.rt.wantAuth = tc.wantAuth
			for _, s := range tc.secrets {
				e.src.secrets["default/"+s.Metadata.Name] = s
			}
			pod := newPod("pull", "app")
			pod.Spec.Containers[0].Image = tc.image
			for _, r := range tc.refs {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, &v1.LocalObjectReference{Name: r})
			}
			w := e.worker(pod)
			e.sync(w)
			cs := containerState(w.status, "app")
			if tc.wantErr == "" {
				if cs.GetState().GetRunning() == nil {
					t.Fatalf("not running: %v", cs)
				}
			} else if wt := cs.GetState().GetWaiting(); wt.GetReason() != ReasonErrImagePull || !strings.Contains(wt.GetMessage(), tc.wantErr) {
				t.Fatalf("waiting %v, want ErrImagePull containing %q", wt, tc.wantErr)
			}
			if len(e.rt.pullAuths) != len(tc.wantPulls) {
				t.Fatalf("pulls with %v, want %v", e.rt.pullAuths, tc.wantPulls)
			}
			for i, a := range e.rt.pullAuths {
				if w := tc.wantPulls[i]; (a == nil) != (w == nil) || a != nil && *a != *w {
					t.Errorf("pull %d with %v, want %v", i, a, w)
				}
			}
			if tc.wantEvent != "" && !strings.Contains(strings.Join(e.rec.events, "\n"), tc.wantEvent) {
				t.Errorf("events %v lack %q", e.rec.events, tc.wantEvent)
			}
		})
	}
}

// TestPullSecretFixedAfterFailure: pull secrets are read again for every
// pull attempt, as Kubernetes reads them on every pod sync: a pod whose
// secret was missing when its pull failed is pulled with the secret
// created meanwhile at the next attempt after the back-off (not before),
// and runs.
func TestPullSecretFixedAfterFailure(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("lab:s3cret"))
	good := runtime.RegistryAuth{Username: "lab", Password: "s3cret"}
	e := newTestEnv(t)
	e.rt.wantAuth = &good
	pod := newPod("pull", "app")
	pod.Spec.Containers[0].Image = "reg.example:5000/lab/app:v1"
	pod.Spec.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "regcred"}}
	w := e.worker(pod)

	e.sync(w)
	if wt := containerState(w.status, "app").GetState().GetWaiting(); wt.GetReason() != ReasonErrImagePull || !strings.Contains(wt.GetMessage(), "401 Unauthorized") {
		t.Fatalf("without the secret: %v, want ErrImagePull 401", wt)
	}
	if !strings.Contains(strings.Join(e.rec.events, "\n"), "Unable to retrieve some image pull secrets (regcred)") {
		t.Errorf("events %q lack the missing secret's warning", e.rec.events)
	}
	e.src.secrets["default/regcred"] = dockerConfigSecret("regcred", `{"reg.example:5000":{"auth":"`+auth+`"}}`)

	e.advance(5 * time.Second)
	e.sync(w)
	if wt := containerState(w.status, "app").GetState().GetWaiting(); wt.GetReason() != ReasonImagePullBackOff {
		t.Fatalf("inside the back-off: %v, want ImagePullBackOff", wt)
	}
	if len(e.rt.pullAuths) != 1 {
		t.Fatalf("pulled inside the back-off: %v", e.rt.pullAuths)
	}

	e.advance(10 * time.Second)
	e.sync(w)
	if cs := containerState(w.status, "app"); cs.GetState().GetRunning() == nil {
		t.Fatalf("after the back-off with the secret: %v, want running", cs)
	}
	if n := len(e.rt.pullAuths); n != 2 || e.rt.pullAuths[1] == nil || *e.rt.pullAuths[1] != good {
		t.Errorf("pulls with %v, want anonymous then the new secret's credentials", e.rt.pullAuths)
	}
}
