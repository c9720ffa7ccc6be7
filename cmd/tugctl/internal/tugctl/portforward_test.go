package tugctl

import (
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// forwardedPorts reads the local ports from port-forward's
// "Forwarding from 127.0.0.1:PORT -> N" lines.
var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)`)

// roundTrip connects to a local port, sends msg, half-closes and returns
// the answer.
func roundTrip(t *testing.T, port, msg string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, msg)
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the forwarded answer: %v (got %q)", err, b)
	}
	return string(b)
}

func TestPortForward(t *testing.T) {
	e := newEnv(t)
	n := e.startFakeNode("n1")
	labels := map[string]string{"app": "web"}
	for _, name := range []string{"web-1", "pending"} {
		p := mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: &v1.PodSpec{NodeName: "n1", Containers: []*v1.Container{{Name: "app", Image: "nginx",
				Ports: []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}})
		phase := "Running"
		if name == "pending" {
			phase, p.Metadata.Labels = "Pending", nil
			if p, _ = client.For[*v1.Pod](e.c).Update(ctxT(t), p); p == nil {
				t.Fatal("update")
			}
		}
		p.Status = &v1.PodStatus{Phase: phase}
		if _, err := client.For[*v1.Pod](e.c).UpdateStatus(ctxT(t), p); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: &v1.ServiceSpec{
		Selector: labels, Ports: []*v1.ServicePort{{Name: "front", Port: 80, TargetPort: "http"}, {Name: "raw", Port: 81, TargetPort: "9000"}}}})

	// A pod by name, a named container port, a free local port; two
	// connections, each its own stream.
	bg := e.start("port-forward", "pod/web-1", "0:http", ":7000")
	wait.Eventually(t, 10*time.Second, "port-forward listening", outputHas(bg.out, "-> 7000"))
	m := forwardingRE.FindAllStringSubmatch(bg.out.String(), -1)
	if len(m) != 2 || m[0][2] != "8080" || m[1][2] != "7000" {
		t.Fatalf("forwarding lines: %q", bg.out.String())
	}
	if got := roundTrip(t, m[0][1], "hello"); got != "web-1:8080 got hello" {
		t.Errorf("first connection: %q", got)
	}
	if got := roundTrip(t, m[1][1], strings.Repeat("x", 100000)); got != "web-1:7000 got "+strings.Repeat("x", 100000) {
		t.Errorf("second connection: %d bytes", len(got))
	}
	wait.Eventually(t, 5*time.Second, "connections reported", outputHas(bg.out, "Handling connection for "+m[1][1]))
	bg.cancel()
	if code := bg.wait(t, 10*time.Second); code != 0 {
		t.Errorf("port-forward exited %d after interrupt: %s", code, bg.err.String())
	}

	// A Service: its port (by number and by name) to the target port on
	// one of its pods; a refused connection is reported and the command
	// goes on.
	bg = e.start("port-forward", "svc/web", "0:80", "0:raw")
	wait.Eventually(t, 10*time.Second, "port-forward listening", outputHas(bg.out, "-> 9000"))
	m = forwardingRE.FindAllStringSubmatch(bg.out.String(), -1)
	if got := roundTrip(t, m[0][1], "a"); got != "web-1:8080 got a" {
		t.Errorf("svc port 80: %q", got)
	}
	if got := roundTrip(t, m[1][1], "b"); got != "web-1:9000 got b" {
		t.Errorf("svc port raw: %q", got)
	}
	bg.cancel()
	bg.wait(t, 10*time.Second)
	bg = e.start("port-forward", "web-1", "0:9")
	wait.Eventually(t, 10*time.Second, "port-forward listening", outputHas(bg.out, "-> 9"))
	m = forwardingRE.FindAllStringSubmatch(bg.out.String(), -1)
	// The refused connection is closed (reset, as the bytes sent are
	// unread): only the report matters here.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+m[0][1], 5*time.Second); err == nil {
		io.WriteString(c, "x")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.ReadAll(c)
		c.Close()
	}
	wait.Eventually(t, 5*time.Second, "the refusal reported", outputHas(bg.err, "an error occurred forwarding "+m[0][1]+" -> 9: error forwarding port 9 to pod web-1: connection refused"))
	bg.cancel()
	bg.wait(t, 10*time.Second)
	n.mu.Lock()
	got := strings.Join(n.forwards, " ")
	n.mu.Unlock()
	if got != "default/web-1:8080 default/web-1:7000 default/web-1:8080 default/web-1:9000 default/web-1:9" {
		t.Errorf("streams the node got: %s", got)
	}

	// Mistakes name what is wrong.
	mustFail(t, e.run("port-forward", "pending", "80"), "unable to forward port because pod is not running. Current status=Pending")
	mustFail(t, e.run("port-forward", "web-1", "0:nope"), `pod web-1 does not have a named port "nope"`)
	mustFail(t, e.run("port-forward", "svc/web", "0:443"), "service web does not have a service port 443 (its ports: 80, 81)")
	mustFail(t, e.run("port-forward", "web-1", "x:80"), `port "x:80": local port "x" is not a port number`)
	mustFail(t, e.run("port-forward", "web-1", "0:70000"), "remote port 70000 is not a port number")
	mustFail(t, e.run("port-forward", "web-1"), "want TARGET [LOCAL_PORT:]REMOTE_PORT")
}
