package pod

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// configPod is a pod whose container mounts the configMap cfg at /etc/app.
func configPod(name string) *v1.Pod {
	pod := newPod(name, "app")
	pod.Spec.Volumes = []*v1.Volume{{Name: "cfg", ConfigMap: &v1.ConfigMapVolumeSource{Name: "cfg"}}}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}
	return pod
}

// TestVolumesPreparedWhileSandboxIsMade: a new pod's volumes (here a
// configMap read from the API) are prepared while the runtime makes its
// sandbox, not after it. RunPodSandbox waits for the configMap read: with
// the volumes prepared after the sandbox it sees none (it gives up after
// a while, so the test fails instead of hanging).
func TestVolumesPreparedWhileSandboxIsMade(t *testing.T) {
	e := newTestEnv(t)
	e.src.configMaps["default/cfg"] = &v1.ConfigMap{Data: map[string]string{"color": "blue"}}
	read := make(chan struct{})
	var once sync.Once
	e.src.onRead = func(_ context.Context, what string) error {
		if what == "configmap default/cfg" {
			once.Do(func() { close(read) })
		}
		return nil
	}
	overlapped := false
	e.rt.inSandbox = func() {
		select {
		case <-read:
			overlapped = true
		case <-time.After(10 * time.Second):
		}
	}
	w := e.worker(configPod("web"))
	e.sync(w)
	if !overlapped {
		t.Fatal("the configMap volume was not read while RunPodSandbox ran")
	}
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s, want Running; status %v", w.status.Phase, w.status)
	}
	run := e.rt.running()
	if len(run) != 1 {
		t.Fatalf("running %v, want app", run)
	}
	var mount *runtime.Mount
	for i, m := range e.rt.containers[run[0].ID].cfg.Mounts {
		if m.ContainerPath == "/etc/app" {
			mount = &e.rt.containers[run[0].ID].cfg.Mounts[i]
		}
	}
	if mount == nil {
		t.Fatalf("no mount at /etc/app in %v", e.rt.containers[run[0].ID].cfg.Mounts)
	}
	if b, err := os.ReadFile(filepath.Join(mount.HostPath, "color")); err != nil || string(b) != "blue" {
		t.Fatalf("color in the volume: %q, %v", b, err)
	}
}

// TestVolumeAndSandboxErrors: with the volumes prepared beside the
// sandbox, each failure is reported as when they were prepared after it:
// a volume error with a sandbox made is a FailedMount and the container's
// CreateContainerConfigError; a sandbox error (with or without a volume
// error) is FailedCreatePodSandbox alone, the container waiting in
// ContainerCreating and PodReadyToStartContainers False with the
// runtime's message.
func TestVolumeAndSandboxErrors(t *testing.T) {
	refusal := runtime.UserNamespacesUnsupported("")
	for _, c := range []struct {
		name       string
		configMap  bool
		sandboxErr error
		// wantEvents: the warnings, in order; wantWait the container's
		// waiting reason; wantCond the sandbox condition's reason ("":
		// True); wantMsg what the warnings, the condition and a config
		// error say.
		wantEvents []string
		wantWait   string
		wantCond   string
		wantMsg    string
	}{
		{name: "volume error", wantEvents: []string{"FailedMount", "Failed"}, wantWait: ReasonCreateContainerConfigError,
			wantMsg: `configmap "default/cfg" not found`},
		{name: "sandbox refused", configMap: true, sandboxErr: refusal, wantEvents: []string{"FailedCreatePodSandbox"},
			wantWait: ReasonContainerCreating, wantCond: "FailedCreatePodSandbox", wantMsg: refusal.Error()},
		{name: "sandbox refused and a volume error", sandboxErr: refusal, wantEvents: []string{"FailedCreatePodSandbox"},
			wantWait: ReasonContainerCreating, wantCond: "FailedCreatePodSandbox", wantMsg: refusal.Error()},
		{name: "sandbox failed", configMap: true, sandboxErr: errors.New("pause: exec format error"), wantEvents: []string{"FailedCreatePodSandbox"},
			wantWait: ReasonContainerCreating, wantCond: "FailedCreatePodSandbox", wantMsg: "runtime sandbox: pause: exec format error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t)
			if c.configMap {
				e.src.configMaps["default/cfg"] = &v1.ConfigMap{Data: map[string]string{"color": "blue"}}
			}
			e.rt.sandboxErr = c.sandboxErr
			w := e.worker(configPod("web"))
			e.sync(w)
			var got []string
			for _, ev := range e.rec.events {
				if typ, rest, _ := strings.Cut(ev, " "); typ == eventWarning {
					reason, msg, _ := strings.Cut(rest, ": ")
					got = append(got, reason)
					if !strings.Contains(msg, c.wantMsg) {
						t.Errorf("event %q, want the message %q", ev, c.wantMsg)
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(c.wantEvents, ",") {
				t.Errorf("warnings %v, want %v", got, c.wantEvents)
			}
			wt := containerState(w.status, "app").GetState().GetWaiting()
			if wt.GetReason() != c.wantWait {
				t.Errorf("container waiting %v, want %s", wt, c.wantWait)
			}
			if c.wantWait == ReasonCreateContainerConfigError && !strings.Contains(wt.GetMessage(), c.wantMsg) {
				t.Errorf("container waiting %v, want the message %q", wt, c.wantMsg)
			}
			cond := findCondition(w.status.GetConditions(), CondPodReadyToStartContainers)
			switch {
			case c.wantCond == "" && cond.GetStatus() != "True":
				t.Errorf("PodReadyToStartContainers %v, want True", cond)
			case c.wantCond != "" && (cond.GetStatus() != "False" || cond.GetReason() != c.wantCond || cond.GetMessage() != c.wantMsg):
				t.Errorf("PodReadyToStartContainers %v, want False %s %q", cond, c.wantCond, c.wantMsg)
			}
			if sandboxes := len(e.rt.sandboxes); (c.sandboxErr == nil) != (sandboxes == 1) {
				t.Errorf("%d sandboxes", sandboxes)
			}
		})
	}
}

// TestSandboxErrorCutsVolumesShort: a sandbox that fails while the
// volumes are still being read does not wait for them: the reads are
// cancelled and the failure reported; once the sandbox can be made, the
// volumes are prepared again and the pod runs.
func TestSandboxErrorCutsVolumesShort(t *testing.T) {
	e := newTestEnv(t)
	e.src.configMaps["default/cfg"] = &v1.ConfigMap{Data: map[string]string{"color": "blue"}}
	reading := make(chan struct{})
	var once sync.Once
	block, cancelled := true, false
	e.src.onRead = func(ctx context.Context, _ string) error {
		if !block {
			return nil
		}
		once.Do(func() { close(reading) })
		select {
		case <-ctx.Done():
			cancelled = true
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the read was not cancelled")
		}
	}
	e.rt.sandboxErr = errors.New("pause: exec format error")
	e.rt.inSandbox = func() { // fail while the read hangs
		select {
		case <-reading:
		case <-time.After(10 * time.Second): // the volumes wait for the sandbox
		}
	}
	w := e.worker(configPod("web"))
	e.sync(w)
	if c := findCondition(w.status.GetConditions(), CondPodReadyToStartContainers); c.GetReason() != "FailedCreatePodSandbox" {
		t.Fatalf("PodReadyToStartContainers %v, want FailedCreatePodSandbox", c)
	}
	if !cancelled {
		t.Error("the volumes' read was not cancelled when the sandbox failed")
	}
	if e.rec.has("FailedMount") {
		t.Errorf("a FailedMount for the cancelled read: %v", e.rec.events)
	}
	if w.volumes != nil {
		t.Errorf("volumes %v kept from a cancelled preparation", w.volumes)
	}
	block, e.rt.sandboxErr, e.rt.inSandbox = false, nil, nil
	e.advance(time.Minute) // past the sandbox back-off
	e.sync(w)
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s after the sandbox could be made; status %v", w.status.Phase, w.status)
	}
}
