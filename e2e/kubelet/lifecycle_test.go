package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
)

// Lifecycle hooks and sidecar containers on the real kubelet: what the
// containers and their hooks write to a hostPath directory of the test's
// own (one line each, appended: the file's order is the order things
// happened in) shows the order Kubernetes gives them.

// logger is a busybox script that appends "<name> start" to /out/log,
// then on SIGTERM "<name> TERM" and exits 0; it runs until then.
func logger(name string) string {
	return fmt.Sprintf(`trap 'echo %[1]s TERM >> /out/log; exit 0' TERM; echo %[1]s start >> /out/log; while true; do sleep 0.1; done`, name)
}

// outVolume mounts a fresh host directory at /out in every container of
// the pod, and returns the path of its log file.
func outVolume(t *testing.T, p *v1.Pod) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	p.Spec.Volumes = append(p.Spec.Volumes, &v1.Volume{Name: "out", HostPath: &v1.HostPathVolumeSource{Path: dir, Type: "Directory"}})
	for _, c := range append(append([]*v1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		c.VolumeMounts = append(c.VolumeMounts, &v1.VolumeMount{Name: "out", MountPath: "/out"})
	}
	return filepath.Join(dir, "log")
}

// logLines waits until the log has every line of want and returns its
// lines.
func logLines(t *testing.T, path string, want ...string) []string {
	t.Helper()
	var lines []string
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("%s to have %q", path, want), func() error {
		b, _ := os.ReadFile(path)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, w := range want {
			if index(lines, w) < 0 {
				return fmt.Errorf("it has %q", lines)
			}
		}
		return nil
	})
	return lines
}

func index(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}

// before fails the test unless line a comes before line b.
func before(t *testing.T, lines []string, a, b string) {
	t.Helper()
	if i, j := index(lines, a), index(lines, b); i < 0 || j < 0 || i >= j {
		t.Errorf("want %q before %q in %q", a, b, lines)
	}
}

func initStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for _, cs := range p.GetStatus().GetInitContainerStatuses() {
		if cs.Name == name {
			return cs
		}
	}
	return nil
}

// TestSidecarAndHooksOnDelete: a sidecar starts before the next init
// container and the app, runs (started, ready, counted for the pod's
// Ready) while the app runs, and on delete is stopped after the app; every
// container's preStop hook (exec, and httpGet against the pod's own
// server by port name) runs before its SIGTERM, within the grace period.
func TestSidecarAndHooksOnDelete(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "sidecar-delete", "web"
	openNamespace(t, c.Client, ns) // the hostPath the test reads
	p := busyboxPod(ns, name, "node1", logger("app"))
	p.Spec.TerminationGracePeriodSeconds = proto.Int64(20)
	app := p.Spec.Containers[0]
	app.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo app preStop >> /out/log; sleep 1"}}}}
	// The sidecar serves HTTP; its preStop is a GET of a CGI script that
	// logs the request.
	proxy := &v1.Container{Name: "proxy", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent", RestartPolicy: "Always",
		Ports:          []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Command:        []string{"sh", "-c", `mkdir -p /www/cgi-bin && printf '#!/bin/sh\necho "proxy $QUERY_STRING" >> /out/log\nprintf "Content-Type: text/plain\\r\\n\\r\\nok"\n' > /www/cgi-bin/hook && chmod +x /www/cgi-bin/hook && httpd -p 8080 -h /www && ` + logger("proxy")},
		StartupProbe:   &v1.Probe{TcpSocket: &v1.TCPSocketAction{Port: "8080"}, PeriodSeconds: 1},
		ReadinessProbe: &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/cgi-bin/hook?ready", Port: "http"}, PeriodSeconds: 1},
		Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HttpGet: &v1.HTTPGetAction{Path: "/cgi-bin/hook?preStop", Port: "http"}}}}
	setup := &v1.Container{Name: "setup", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent", Command: []string{"sh", "-c", "echo setup >> /out/log"}}
	p.Spec.InitContainers = []*v1.Container{proxy, setup}
	log := outVolume(t, p)
	createPod(t, c.Client, p)

	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Ready", func(p *v1.Pod) bool { return condition(p, "Ready").GetStatus() == "True" })
	if cs := initStatus(p, "proxy"); cs.GetState().GetRunning() == nil || !cs.GetStarted() || !cs.GetReady() {
		t.Errorf("sidecar status %v, want running, started and ready", cs)
	}
	if cs := initStatus(p, "setup"); cs.GetState().GetTerminated().GetExitCode() != 0 || cs.GetState().GetTerminated() == nil {
		t.Errorf("init container status %v, want terminated with 0", cs)
	}
	if p.Status.Phase != "Running" || condition(p, "Initialized").GetStatus() != "True" {
		t.Errorf("phase %s, Initialized %v", p.Status.Phase, condition(p, "Initialized"))
	}
	lines := logLines(t, log, "proxy start", "setup", "app start")
	before(t, lines, "proxy start", "setup")
	before(t, lines, "setup", "app start")

	if _, err := client.For[*v1.Pod](c.Client).Delete(context.Background(), ns, name, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c.Client, ns, name, 40*time.Second)
	lines = logLines(t, log, "app preStop", "app TERM", "proxy preStop", "proxy TERM")
	before(t, lines, "app preStop", "app TERM")
	before(t, lines, "proxy preStop", "proxy TERM")
	before(t, lines, "app TERM", "proxy TERM")
}

// TestSidecarJob: a restartPolicy Never pod completes when its app
// container does, though its sidecar would run forever: the sidecar is
// stopped then (after the app, by SIGTERM), and the pod Succeeded. The
// app starts once the sidecar's postStart (a sleep) returned.
func TestSidecarJob(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "sidecar-job", "batch"
	openNamespace(t, c.Client, ns)
	p := busyboxPod(ns, name, "node2", "echo app start >> /out/log; sleep 2; echo app done >> /out/log")
	p.Spec.RestartPolicy = "Never"
	p.Spec.TerminationGracePeriodSeconds = proto.Int64(10)
	p.Spec.InitContainers = []*v1.Container{{Name: "agent", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent", RestartPolicy: "Always",
		Command:   []string{"sh", "-c", logger("agent")},
		Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 1}}}}}
	log := outVolume(t, p)
	createPod(t, c.Client, p)
	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Succeeded", func(p *v1.Pod) bool { return p.Status.GetPhase() == "Succeeded" })
	if term := containerStatus(p, "main").GetState().GetTerminated(); term == nil || term.ExitCode != 0 {
		t.Errorf("app state %v, want terminated with 0", containerStatus(p, "main").GetState())
	}
	if cs := initStatus(p, "agent"); cs.GetState().GetTerminated() == nil || cs.GetRestartCount() != 0 {
		t.Errorf("sidecar status %v, want terminated, never restarted", cs)
	}
	lines := logLines(t, log, "agent start", "app start", "app done", "agent TERM")
	before(t, lines, "agent start", "app start")
	before(t, lines, "app done", "agent TERM")
}

// TestPostStartHook: the app sees what its postStart hook wrote, and the
// container is reported Running only once the hook returned; a failing
// postStart kills the container (FailedPostStartHook) and it restarts.
func TestPostStartHook(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns := "poststart"
	ok := busyboxPod(ns, "ok", "node1", "while [ ! -f /tmp/hook ]; do sleep 0.1; done; cat /tmp/hook > /tmp/seen; exec sleep 3600")
	ok.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{
		Command: []string{"sh", "-c", "sleep 2; echo written by postStart > /tmp/hook"}}}}
	bad := busyboxPod(ns, "bad", "node2", "exec sleep 3600")
	bad.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{
		Command: []string{"sh", "-c", "echo no good; exit 3"}}}}
	createPod(t, c.Client, ok)
	createPod(t, c.Client, bad)

	waitPod(t, c.Client, ns, "ok", 60*time.Second, "Running", running)
	// Running only after the hook: its file is there already.
	if out, code := execIn(t, c.Client, ns, "ok", "cat", "/tmp/hook"); code != 0 || out != "written by postStart\n" {
		t.Errorf("the hook's file when the container was Running: %q (exit %d)", out, code)
	}
	wait.Eventually(t, 10*time.Second, "the app to read the hook's file", func() error {
		if out, code := execIn(t, c.Client, ns, "ok", "cat", "/tmp/seen"); code != 0 || out != "written by postStart\n" {
			return fmt.Errorf("the app saw %q (exit %d)", out, code)
		}
		return nil
	})

	waitEvent(t, c.Client, ns, "bad", "FailedPostStartHook: PostStartHook failed", 60*time.Second)
	waitEvent(t, c.Client, ns, "bad", "Killing: FailedPostStartHook", 10*time.Second)
	p := waitPod(t, c.Client, ns, "bad", 60*time.Second, "restarted", func(p *v1.Pod) bool {
		return containerStatus(p, "main").GetRestartCount() >= 1
	})
	if containerStatus(p, "main").GetReady() || condition(p, "Ready").GetStatus() == "True" {
		t.Errorf("a container whose postStart fails is ready: %v", p.Status)
	}
}

// TestHTTPSHookFallback: a preStop httpGet hook with scheme HTTPS to a
// server that speaks plain HTTP (busybox httpd) is sent again over HTTP,
// runs before the container's SIGTERM, and is reported with Kubernetes'
// LifecycleHTTPFallback warning naming the pod's address.
func TestHTTPSHookFallback(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "https-hook", "web"
	openNamespace(t, c.Client, ns) // the hostPath the test reads
	p := busyboxPod(ns, name, "node2", `mkdir -p /www/cgi-bin && printf '#!/bin/sh\necho "hook $QUERY_STRING" >> /out/log\nprintf "Content-Type: text/plain\\r\\n\\r\\nok"\n' > /www/cgi-bin/hook && chmod +x /www/cgi-bin/hook && httpd -p 8080 -h /www && `+logger("app"))
	p.Spec.TerminationGracePeriodSeconds = proto.Int64(20)
	app := p.Spec.Containers[0]
	app.Ports = []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	app.ReadinessProbe = &v1.Probe{TcpSocket: &v1.TCPSocketAction{Port: "8080"}, PeriodSeconds: 1}
	app.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HttpGet: &v1.HTTPGetAction{Path: "/cgi-bin/hook?preStop", Port: "http", Scheme: "HTTPS"}}}
	log := outVolume(t, p)
	createPod(t, c.Client, p)
	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Ready", func(p *v1.Pod) bool { return condition(p, "Ready").GetStatus() == "True" })
	ip := p.GetStatus().GetPodIp()

	if _, err := client.For[*v1.Pod](c.Client).Delete(context.Background(), ns, name, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := logLines(t, log, "hook preStop", "app TERM")
	before(t, lines, "hook preStop", "app TERM")
	waitEvent(t, c.Client, ns, name, "LifecycleHTTPFallback: request to HTTPS lifecycle hook "+ip+":8080 got HTTP response, retry with HTTP succeeded", 30*time.Second)
	for _, e := range podEvents(t, c.Client, ns, name) {
		if strings.Contains(e, "FailedPreStopHook") {
			t.Errorf("the hook that fell back is reported failed: %q", e)
		}
	}
}
