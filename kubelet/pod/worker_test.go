package pod

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

const testImage = "tugboat.local/busybox:1"

// testEnv is a Manager on fakes, with a clock the test moves.
type testEnv struct {
	t      *testing.T
	mu     sync.Mutex
	clock  time.Time
	rt     *fakeRuntime
	net    *fakeNetwork
	prober *fakeProber
	rec    *fakeRecorder
	api    *fakeAPI
	src    *fakeSources
	m      *Manager
}

func newTestEnv(t *testing.T) *testEnv {
	e := &testEnv{t: t, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e.rt = newFakeRuntime(e.now)
	e.rt.images[testImage] = true
	e.net = newFakeNetwork()
	e.prober = newFakeProber()
	e.rec = &fakeRecorder{}
	e.api = &fakeAPI{pods: map[string]*v1.Pod{}}
	e.src = &fakeSources{configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	m, err := NewManager(Config{
		NodeName:   "node1",
		NodeIP:     netip.MustParseAddr("192.0.2.10"),
		RootDir:    t.TempDir(),
		ClusterDNS: []netip.Addr{netip.MustParseAddr("10.96.0.10")},
	}, Deps{Runtime: e.rt, Network: e.net, Prober: e.prober, Recorder: e.rec, API: e.api, Sources: e.src, Now: e.now})
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return e
}

func (e *testEnv) now() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.clock }

func (e *testEnv) advance(d time.Duration) { e.mu.Lock(); e.clock = e.clock.Add(d); e.mu.Unlock() }

// newPod makes a pod of busybox containers named by names.
func newPod(name string, names ...string) *v1.Pod {
	p := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Uid: "uid-" + name, ResourceVersion: 1},
		Spec:     &v1.PodSpec{RestartPolicy: "Always", NodeName: "node1", TerminationGracePeriodSeconds: proto.Int64(30)},
		Status:   &v1.PodStatus{Phase: PhasePending},
	}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, &v1.Container{Name: n, Image: testImage, ImagePullPolicy: "IfNotPresent"})
	}
	return p
}

// worker registers pod with the fake API and returns a worker for it
// (driven by the test calling sync, not by its goroutine).
func (e *testEnv) worker(pod *v1.Pod) *worker {
	e.api.mu.Lock()
	e.api.pods[pod.Metadata.Namespace+"/"+pod.Metadata.Name] = proto.Clone(pod).(*v1.Pod)
	e.api.mu.Unlock()
	w := newWorker(e.m, pod)
	e.m.mu.Lock()
	e.m.workers[w.uid] = w
	e.m.mu.Unlock()
	return w
}

func (e *testEnv) sync(w *worker) syncResult {
	e.t.Helper()
	return w.sync(context.Background())
}

func containerState(s *v1.PodStatus, name string) *v1.ContainerStatus {
	for _, cs := range s.GetContainerStatuses() {
		if cs.Name == name {
			return cs
		}
	}
	return nil
}

func condition(s *v1.PodStatus, typ string) string {
	if c := findCondition(s.GetConditions(), typ); c != nil {
		return c.Status
	}
	return ""
}

func TestStartsPodAndReportsRunning(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", "httpd", "sidecar")
	pod.Spec.Containers[0].Ports = []*v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: "TCP"}}
	w := e.worker(pod)
	e.sync(w)

	s := w.status
	if s.Phase != PhaseRunning {
		t.Fatalf("phase %s, want Running; status %v", s.Phase, s)
	}
	if s.PodIp != "10.244.1.2" || s.HostIp != "192.0.2.10" {
		t.Errorf("podIP %q hostIP %q", s.PodIp, s.HostIp)
	}
	for _, name := range []string{"httpd", "sidecar"} {
		cs := containerState(s, name)
		if cs.GetState().GetRunning() == nil || !cs.Ready || !cs.Started || !strings.HasPrefix(cs.ContainerId, "containerd://") {
			t.Errorf("container %s status %v", name, cs)
		}
	}
	for _, c := range []string{CondAccepted, CondImagesReady, CondPodReadyToStartContainers, CondInitialized, CondContainersStarted, CondContainersReady, CondReady} {
		if condition(s, c) != "True" {
			t.Errorf("condition %s = %q, want True", c, condition(s, c))
		}
	}
	for _, ev := range []string{"Pulled", "Created", "Started"} {
		if !e.rec.has(ev) {
			t.Errorf("no %s event in %v", ev, e.rec.events)
		}
	}
	// Containers were created in spec order, after the sandbox.
	want := []string{"RunPodSandbox web", "CreateContainer httpd/0", "StartContainer httpd/0", "CreateContainer sidecar/0", "StartContainer sidecar/0"}
	if got := strings.Join(e.rt.calls, ","); got != strings.Join(want, ",") {
		t.Errorf("calls %v, want %v", e.rt.calls, want)
	}
	// The sandbox's /etc files point at the cluster DNS.
	sbs, _ := e.rt.ListPodSandbox(context.Background(), runtime.SandboxFilter{})
	if len(sbs) != 1 || sbs[0].Config.Labels[LabelNode] != "node1" {
		t.Fatalf("sandboxes %+v", sbs)
	}
	// A second sync changes nothing.
	calls := len(e.rt.calls)
	e.sync(w)
	if len(e.rt.calls) != calls {
		t.Errorf("idle sync made calls %v", e.rt.calls[calls:])
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	e := newTestEnv(t)
	e.rt.onStart = func(runtime.ContainerConfig) (bool, int, string) { return true, 1, "" }
	w := e.worker(newPod("crash", "app"))

	e.sync(w) // attempt 0 starts and exits
	e.sync(w) // first restart is immediate: attempt 1
	cs := containerState(w.status, "app")
	if cs.RestartCount != 1 {
		t.Fatalf("restartCount %d after the first restart, want 1: %v", cs.RestartCount, cs)
	}
	res := e.sync(w) // attempt 1 exited: back-off 10s
	cs = containerState(w.status, "app")
	if cs.GetState().GetWaiting().GetReason() != ReasonCrashLoopBackOff {
		t.Fatalf("state %v, want waiting CrashLoopBackOff", cs.GetState())
	}
	if !strings.Contains(cs.GetState().GetWaiting().GetMessage(), "back-off 10s") {
		t.Errorf("message %q", cs.GetState().GetWaiting().GetMessage())
	}
	if lt := cs.GetLastState().GetTerminated(); lt.GetExitCode() != 1 || lt.GetReason() != runtime.ReasonError {
		t.Errorf("lastState %v, want exit 1 Error", cs.GetLastState())
	}
	if res.after > 10*time.Second || res.after <= 0 {
		t.Errorf("next sync in %s, want within the 10s back-off", res.after)
	}
	if !e.rec.has("BackOff") {
		t.Error("no BackOff event")
	}
	if w.status.Phase != PhaseRunning {
		t.Errorf("phase %s, want Running (restarting)", w.status.Phase)
	}

	e.advance(10 * time.Second)
	e.sync(w) // back-off over: attempt 2
	e.sync(w) // exited again: now 20s
	cs = containerState(w.status, "app")
	if cs.RestartCount != 2 || !strings.Contains(cs.GetState().GetWaiting().GetMessage(), "back-off 20s") {
		t.Fatalf("after the second back-off: %v", cs)
	}
	e.advance(19 * time.Second)
	e.sync(w)
	if containerState(w.status, "app").RestartCount != 2 {
		t.Fatal("restarted before the 20s back-off ended")
	}
	// Only the newest two attempts are kept.
	e.advance(time.Second)
	e.sync(w)
	e.sync(w)
	if n := len(e.rt.containers); n != 2 {
		t.Errorf("%d containers kept, want 2 (current and previous)", n)
	}
}

func TestRestartPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy    string
		exit      int
		restarted bool
		phase     string
	}{
		{"Always", 0, true, PhaseRunning},
		{"Always", 1, true, PhaseRunning},
		{"OnFailure", 0, false, PhaseSucceeded},
		{"OnFailure", 2, true, PhaseRunning},
		{"Never", 0, false, PhaseSucceeded},
		{"Never", 3, false, PhaseFailed},
	} {
		t.Run(tc.policy+"/"+string(rune('0'+tc.exit)), func(t *testing.T) {
			e := newTestEnv(t)
			pod := newPod("p", "c")
			pod.Spec.RestartPolicy = tc.policy
			w := e.worker(pod)
			e.sync(w)
			e.rt.exit("c", tc.exit, "")
			e.sync(w)
			cs := containerState(w.status, "c")
			if restarted := cs.RestartCount == 1; restarted != tc.restarted {
				t.Errorf("restarted %v, want %v (%v)", restarted, tc.restarted, cs)
			}
			if w.status.Phase != tc.phase {
				t.Errorf("phase %s, want %s", w.status.Phase, tc.phase)
			}
			if IsTerminal(tc.phase) {
				// A finished pod gives its network back and stays finished.
				if len(e.net.up) != 0 || len(e.net.netns) != 0 {
					t.Errorf("network not released: up %v netns %v", e.net.up, e.net.netns)
				}
				if condition(w.status, CondReady) != "False" {
					t.Error("a finished pod is Ready")
				}
				e.sync(w)
				if len(e.rt.running()) != 0 || w.status.Phase != tc.phase {
					t.Error("a finished pod was restarted")
				}
			}
		})
	}
}

func TestImageNeverPullThenImport(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("img", "app")
	pod.Spec.Containers[0].Image = "tugboat.local/missing:v1"
	pod.Spec.Containers[0].ImagePullPolicy = "Never"
	w := e.worker(pod)
	e.sync(w)
	cs := containerState(w.status, "app")
	wt := cs.GetState().GetWaiting()
	if wt.GetReason() != ReasonErrImageNeverPull {
		t.Fatalf("waiting %v, want ErrImageNeverPull", wt)
	}
	for _, want := range []string{"tugboat.local/missing:v1 is not present on node node1", "tugctl image import FILE.tar --node node1", "/images/"} {
		if !strings.Contains(wt.GetMessage(), want) {
			t.Errorf("message %q lacks %q", wt.GetMessage(), want)
		}
	}
	if c := findCondition(w.status.Conditions, CondImagesReady); c.GetStatus() != "False" || c.GetReason() != ReasonErrImageNeverPull {
		t.Errorf("ImagesReady condition %v", c)
	}
	if w.status.Phase != PhasePending {
		t.Errorf("phase %s", w.status.Phase)
	}
	// Importing the image lets the same pod start.
	e.rt.images["tugboat.local/missing:v1"] = true
	e.sync(w)
	if cs := containerState(w.status, "app"); cs.GetState().GetRunning() == nil || cs.RestartCount != 0 {
		t.Fatalf("after import: %v", cs)
	}
	if condition(w.status, CondImagesReady) != "True" {
		t.Error("ImagesReady not True after import")
	}
}

func TestImagePullBackOff(t *testing.T) {
	e := newTestEnv(t)
	e.rt.pullErr = errors.New("dial tcp: lookup registry.example: no such host")
	pod := newPod("pull", "app")
	pod.Spec.Containers[0].Image = "registry.example/app:v2"
	w := e.worker(pod)
	e.sync(w)
	wt := containerState(w.status, "app").GetState().GetWaiting()
	if wt.GetReason() != ReasonErrImagePull || !strings.Contains(wt.GetMessage(), "no such host") || !strings.Contains(wt.GetMessage(), "tugctl image import") {
		t.Fatalf("first attempt: %v", wt)
	}
	e.advance(time.Second)
	e.sync(w)
	wt = containerState(w.status, "app").GetState().GetWaiting()
	if wt.GetReason() != ReasonImagePullBackOff || !strings.Contains(wt.GetMessage(), "tugctl image import") {
		t.Fatalf("within the back-off: %v", wt)
	}
	if e.rt.pulls != 1 {
		t.Errorf("%d pulls during the back-off, want 1", e.rt.pulls)
	}
	e.advance(10 * time.Second)
	e.sync(w)
	if e.rt.pulls != 2 {
		t.Errorf("%d pulls after the back-off, want 2", e.rt.pulls)
	}
	// The registry recovers.
	e.rt.pullErr = nil
	e.advance(21 * time.Second)
	e.sync(w)
	if containerState(w.status, "app").GetState().GetRunning() == nil {
		t.Fatalf("not running after a good pull: %v", containerState(w.status, "app"))
	}
}

func TestPullAlwaysFallsBackToTheNodesImage(t *testing.T) {
	e := newTestEnv(t)
	e.rt.pullErr = errors.New("no such host")
	e.rt.images["tugboat.local/echo:latest"] = true
	pod := newPod("always", "a", "b")
	for _, c := range pod.Spec.Containers {
		c.Image, c.ImagePullPolicy = "tugboat.local/echo:latest", "Always"
	}
	w := e.worker(pod)
	e.sync(w)
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s: %v", w.status.Phase, w.status.ContainerStatuses)
	}
	if e.rt.pulls != 1 {
		t.Errorf("%d pulls: the failed registry should not be asked again at once", e.rt.pulls)
	}
}

func TestLivenessFailureRestarts(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("live", "app")
	pod.Spec.TerminationGracePeriodSeconds = proto.Int64(7)
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{HttpGet: &v1.HTTPGetAction{Port: "80"}}
	w := e.worker(pod)
	e.sync(w)
	first := e.rt.running()[0]
	e.prober.set("app", prober.Liveness, prober.Result{State: prober.Failure, ContainerID: first.ID, Message: "HTTP probe failed with statuscode: 500"})
	e.sync(w)
	if len(e.rt.stops) != 1 || e.rt.stops[0].grace != 7*time.Second {
		t.Fatalf("stops %v, want one with the pod's 7s grace", e.rt.stops)
	}
	if !e.rec.has("Killing") {
		t.Errorf("no Killing event: %v", e.rec.events)
	}
	cs := containerState(w.status, "app")
	if cs.RestartCount != 1 || cs.GetState().GetRunning() == nil || cs.GetLastState().GetTerminated().GetExitCode() != 137 {
		t.Fatalf("after the liveness kill: %v", cs)
	}
}

func TestReadinessFlipsReady(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("ready", "app")
	pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{TcpSocket: &v1.TCPSocketAction{Port: "80"}}
	w := e.worker(pod)
	e.sync(w)
	if condition(w.status, CondReady) != "False" {
		t.Fatal("Ready before the readiness probe succeeded")
	}
	id := e.rt.running()[0].ID
	if got := e.prober.targets["uid-ready"]; len(got) != 1 || got[0].ContainerID != id {
		t.Fatalf("prober targets %v", got)
	}
	e.prober.set("app", prober.Readiness, prober.Result{State: prober.Success, ContainerID: id})
	e.sync(w)
	if condition(w.status, CondReady) != "True" || !containerState(w.status, "app").Ready {
		t.Fatal("not Ready after the probe succeeded")
	}
	readySince := findCondition(w.status.Conditions, CondReady).LastTransitionTime.AsTime()
	e.advance(time.Minute)
	e.sync(w)
	if got := findCondition(w.status.Conditions, CondReady).LastTransitionTime.AsTime(); !got.Equal(readySince) {
		t.Errorf("Ready's transition time moved from %v to %v without a change", readySince, got)
	}
	e.prober.set("app", prober.Readiness, prober.Result{State: prober.Failure, ContainerID: id})
	e.sync(w)
	if c := findCondition(w.status.Conditions, CondReady); c.Status != "False" || !c.LastTransitionTime.AsTime().Equal(e.now()) {
		t.Fatalf("Ready after the probe failed: %v", c)
	}
}

func TestGracefulDelete(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("bye", "app")
	w := e.worker(pod)
	e.sync(w)
	sbID := e.rt.running()[0].SandboxID

	deleting := proto.Clone(pod).(*v1.Pod)
	deleting.Metadata.DeletionTimestamp = timestamppb.New(e.now().Add(5 * time.Second))
	deleting.Metadata.DeletionGracePeriodSeconds = 5
	w.update(deleting)
	res := e.sync(w)
	if !res.done {
		t.Fatal("worker not done after terminating")
	}
	if len(e.rt.stops) != 1 || e.rt.stops[0].grace != 5*time.Second {
		t.Errorf("stops %v, want one with the deletion's 5s grace", e.rt.stops)
	}
	if len(e.net.dels) == 0 || e.net.dels[0] != sbID {
		t.Errorf("CNI DEL for %v, want %s", e.net.dels, sbID)
	}
	if len(e.rt.sandboxes) != 0 || len(e.rt.containers) != 0 || len(e.net.netns) != 0 {
		t.Errorf("left behind: sandboxes %v containers %v netns %v", e.rt.sandboxes, e.rt.containers, e.net.netns)
	}
	if len(e.api.deletes) != 1 {
		t.Errorf("API deletes %v, want the pod deleted with grace 0", e.api.deletes)
	}
	if !e.rec.has("Killing") {
		t.Error("no Killing event")
	}
}

func TestAdoptsRunningContainers(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("adopt", "app")
	w := e.worker(pod)
	e.sync(w)
	before := e.rt.running()[0].ID
	status := proto.Clone(w.status).(*v1.PodStatus)

	// A new kubelet: a new manager and worker on the same runtime.
	pod2 := proto.Clone(pod).(*v1.Pod)
	pod2.Status = status
	e2 := newTestEnv(t)
	e2.rt, e2.net = e.rt, e.net
	m, err := NewManager(e.m.cfg, Deps{Runtime: e.rt, Network: e.net, Prober: e2.prober, Recorder: e2.rec, API: e.api, Sources: e2.src, Now: e2.now})
	if err != nil {
		t.Fatal(err)
	}
	e2.m = m
	calls := len(e.rt.calls)
	w2 := e2.worker(pod2)
	e2.sync(w2)
	if got := e.rt.running(); len(got) != 1 || got[0].ID != before {
		t.Fatalf("running %v, want the same container %s", got, before)
	}
	if len(e.rt.calls) != calls {
		t.Errorf("adoption made runtime calls %v", e.rt.calls[calls:])
	}
	if w2.status.Phase != PhaseRunning || w2.status.PodIp != status.PodIp || !containerState(w2.status, "app").Ready {
		t.Errorf("adopted status %v", w2.status)
	}
}

func TestEnvAndConfigErrors(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("env", "app")
	pod.Metadata.Labels = map[string]string{"tier": "web"}
	pod.Spec.Containers[0].Env = []*v1.EnvVar{
		{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "TIER", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}},
		{Name: "COLOR", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.KeySelector{Name: "cfg", Key: "color"}}},
		{Name: "PASS", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.KeySelector{Name: "sec", Key: "password"}}},
		{Name: "GREETING", Value: "hello $(POD) in $(TIER), $$(POD) and $(NOPE)"},
	}
	pod.Spec.Containers[0].Args = []string{"echo", "$(GREETING)"}
	w := e.worker(pod)
	e.sync(w)
	wt := containerState(w.status, "app").GetState().GetWaiting()
	if wt.GetReason() != ReasonCreateContainerConfigError || !strings.Contains(wt.GetMessage(), `configmap "default/cfg" not found`) {
		t.Fatalf("waiting %v, want CreateContainerConfigError naming the configmap", wt)
	}
	e.src.configMaps["default/cfg"] = &v1.ConfigMap{Data: map[string]string{"color": "blue"}}
	e.src.secrets["default/sec"] = &v1.Secret{Data: map[string][]byte{"password": []byte("s3cret")}}
	e.advance(configRetry)
	e.sync(w)
	run := e.rt.running()
	if len(run) != 1 {
		t.Fatalf("not running: %v", containerState(w.status, "app"))
	}
	cfg := e.rt.containers[run[0].ID].cfg
	got := map[string]string{}
	for _, ev := range cfg.Env {
		got[ev.Name] = ev.Value
	}
	want := map[string]string{"POD": "env", "IP": "10.244.1.2", "TIER": "web", "COLOR": "blue", "PASS": "s3cret",
		"GREETING": "hello env in web, $(POD) and $(NOPE)"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env %s = %q, want %q", k, got[k], v)
		}
	}
	if strings.Join(cfg.Args, " ") != "echo hello env in web, $(POD) and $(NOPE)" {
		t.Errorf("args %q", cfg.Args)
	}
}

func TestNetworkNotReady(t *testing.T) {
	e := newTestEnv(t)
	e.net.readyErr = errors.New("no CNI network config in /etc/cni/net.d: " + network.ErrNotReady.Error())
	w := e.worker(newPod("nonet", "app"))
	e.sync(w)
	c := findCondition(w.status.Conditions, CondPodReadyToStartContainers)
	if c.GetStatus() != "False" || c.GetReason() != "NetworkNotReady" || !strings.Contains(c.GetMessage(), "no CNI network config") {
		t.Fatalf("condition %v", c)
	}
	if !e.rec.has("FailedCreatePodSandbox") {
		t.Error("no FailedCreatePodSandbox event")
	}
	e.net.readyErr = nil
	e.advance(time.Second)
	e.sync(w)
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s once the network is ready", w.status.Phase)
	}
}

func TestInitContainers(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("init", "app")
	pod.Spec.RestartPolicy = "Never"
	pod.Spec.InitContainers = []*v1.Container{{Name: "setup", Image: testImage}, {Name: "migrate", Image: testImage}}
	w := e.worker(pod)
	e.sync(w)
	if condition(w.status, CondInitialized) != "False" || containerState(w.status, "app").GetState().GetWaiting().GetReason() != ReasonPodInitializing {
		t.Fatalf("while init runs: %v", w.status)
	}
	e.rt.exit("setup", 0, "")
	e.sync(w)
	e.rt.exit("migrate", 0, "")
	e.sync(w)
	if condition(w.status, CondInitialized) != "True" || w.status.Phase != PhaseRunning {
		t.Fatalf("after init: phase %s %v", w.status.Phase, w.status.Conditions)
	}
	want := "RunPodSandbox init,CreateContainer setup/0,StartContainer setup/0,CreateContainer migrate/0,StartContainer migrate/0,CreateContainer app/0,StartContainer app/0"
	if got := strings.Join(e.rt.calls, ","); got != want {
		t.Errorf("calls\n%s\nwant\n%s", got, want)
	}

	e2 := newTestEnv(t)
	failing := newPod("initfail", "app")
	failing.Spec.RestartPolicy = "Never"
	failing.Spec.InitContainers = []*v1.Container{{Name: "setup", Image: testImage}}
	w2 := e2.worker(failing)
	e2.sync(w2)
	e2.rt.exit("setup", 2, "")
	e2.sync(w2)
	if w2.status.Phase != PhaseFailed {
		t.Fatalf("phase %s after a failed init container under Never", w2.status.Phase)
	}
}

func TestHousekeepingRemovesOrphans(t *testing.T) {
	e := newTestEnv(t)
	w := e.worker(newPod("orphan", "app"))
	e.sync(w)
	// The pod is gone from the node's view (no worker): housekeeping
	// tears everything down, CNI DEL included.
	e.m.mu.Lock()
	delete(e.m.workers, w.uid)
	e.m.mu.Unlock()
	if err := e.m.housekeeping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(e.rt.sandboxes) != 0 || len(e.rt.containers) != 0 || len(e.net.up) != 0 || len(e.net.netns) != 0 || len(e.net.dels) != 1 {
		t.Fatalf("left: sandboxes %v containers %v up %v netns %v dels %v", e.rt.sandboxes, e.rt.containers, e.net.up, e.net.netns, e.net.dels)
	}
}

func TestOOMKilledReported(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("oom", "hog")
	pod.Spec.RestartPolicy = "Never"
	pod.Spec.Containers[0].Resources = &v1.ResourceRequirements{Limits: map[string]string{"memory": "16Mi", "cpu": "500m"}}
	w := e.worker(pod)
	e.sync(w)
	cfg := e.rt.containers[e.rt.running()[0].ID].cfg
	if cfg.Resources.MemoryLimitBytes != 16<<20 || cfg.Resources.CPULimitMilli != 500 || cfg.Resources.CPURequestMilli != 500 {
		t.Errorf("resources %+v", cfg.Resources)
	}
	e.rt.exit("hog", 137, runtime.ReasonOOMKilled)
	e.sync(w)
	term := containerState(w.status, "hog").GetState().GetTerminated()
	if term.GetReason() != runtime.ReasonOOMKilled || term.GetExitCode() != 137 || w.status.Phase != PhaseFailed {
		t.Fatalf("terminated %v phase %s", term, w.status.Phase)
	}
	if w.status.QosClass != "Guaranteed" { // limits only: requests default to them
		t.Errorf("qos %s", w.status.QosClass)
	}
}

// TestCNIAddFailure: a CNI ADD that fails (in the background, while the
// first container is created) removes the sandbox and its container and
// is retried after the back-off.
func TestCNIAddFailure(t *testing.T) {
	e := newTestEnv(t)
	e.net.addErr = errors.New("plugin bridge failed (add): failed to allocate for range 0: no IP addresses available")
	w := e.worker(newPod("cnifail", "app"))
	e.sync(w)
	c := findCondition(w.status.Conditions, CondPodReadyToStartContainers)
	if c.GetStatus() != "False" || c.GetReason() != "FailedCreatePodSandbox" || !strings.Contains(c.GetMessage(), "no IP addresses available") {
		t.Fatalf("condition %v", c)
	}
	if len(e.rt.sandboxes) != 0 || len(e.rt.containers) != 0 || len(e.net.netns) != 0 {
		t.Fatalf("left: sandboxes %v containers %v netns %v", e.rt.sandboxes, e.rt.containers, e.net.netns)
	}
	if !e.rec.has("FailedCreatePodSandbox") {
		t.Error("no FailedCreatePodSandbox event")
	}
	e.net.addErr = nil
	e.advance(time.Second)
	e.sync(w)
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s after the network recovered", w.status.Phase)
	}
}

// TestPullAlwaysBurstAsksTheRegistryOnce: pods of a burst that queued
// behind a failing pull use the node's image without asking again.
func TestPullAlwaysBurstAsksTheRegistryOnce(t *testing.T) {
	e := newTestEnv(t)
	e.rt.pullErr = errors.New("no such host")
	e.rt.images["tugboat.local/echo:latest"] = true
	var ws []*worker
	for i := 0; i < 10; i++ {
		p := newPod("burst"+string(rune('a'+i)), "app")
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = "tugboat.local/echo:latest", "Always"
		ws = append(ws, e.worker(p))
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); e.sync(w) }()
	}
	wg.Wait()
	for _, w := range ws {
		if w.status.Phase != PhaseRunning {
			t.Fatalf("%s: phase %s", w.pod.Metadata.Name, w.status.Phase)
		}
	}
	if e.rt.pulls != 1 {
		t.Errorf("%d pulls for a burst of 10, want 1", e.rt.pulls)
	}
}

// TestExitSeenByTheSyncItselfIsActedOn: a container that exits before the
// sync that started it reads it back is restarted by an immediate
// follow-up sync (the relist will not wake the worker for it).
func TestExitSeenByTheSyncItselfIsActedOn(t *testing.T) {
	e := newTestEnv(t)
	e.rt.onStart = func(runtime.ContainerConfig) (bool, int, string) { return true, 1, "" }
	w := e.worker(newPod("quick", "app"))
	if res := e.sync(w); res.after > 100*time.Millisecond {
		t.Fatalf("next sync in %s after the container exited, want at once", res.after)
	}
	e.sync(w)
	if res := e.sync(w); res.after > 10*time.Second {
		t.Errorf("next sync in %s in CrashLoopBackOff, want the 10s back-off's end", res.after)
	}
	// Init containers: the next one starts without waiting for a resync.
	e2 := newTestEnv(t)
	e2.rt.onStart = func(c runtime.ContainerConfig) (bool, int, string) { return c.Name != "app", 0, "" }
	pod := newPod("inits", "app")
	pod.Spec.InitContainers = []*v1.Container{{Name: "one", Image: testImage}, {Name: "two", Image: testImage}}
	w2 := e2.worker(pod)
	for i := 0; i < 2; i++ { // "one", then "two", each seen done by its own sync
		if res := e2.sync(w2); res.after > 100*time.Millisecond {
			t.Fatalf("sync %d: next in %s with an init container done", i, res.after)
		}
	}
	e2.sync(w2) // starts app
	if w2.status.Phase != PhaseRunning {
		t.Fatalf("phase %s", w2.status.Phase)
	}
}
