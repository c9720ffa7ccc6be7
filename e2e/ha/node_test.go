package ha

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// tugctlOn runs tugctl as c's admin against server only.
func tugctlOn(c *cluster.Cluster, server string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flags := c.ClientArgs("admin")
	flags[1] = server // "--server", c.Server, ...
	cmd := exec.CommandContext(ctx, tugctlBin, append(flags, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+c.Dir, "TUGBOAT_CONFIG=", "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestNodeStreamsThroughEitherAPIServer: with two apiservers the kubelet
// keeps a tunnel to each, so logs, exec and image import work through
// either one alone; with one killed they work through the other, and
// once it is back the kubelet's tunnel to it is too.
func TestNodeStreamsThroughEitherAPIServer(t *testing.T) {
	if bins == nil {
		cluster.NewForTest(t, cluster.Options{}) // skips, or fails under CI, saying why
	}
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 1, APIServers: 2, NoScheduler: true, NoControllerManager: true})
	ctx := context.Background()
	_, err := client.For[*v1.Pod](c.Client).Create(ctx, &v1.Pod{
		Metadata: &v1.ObjectMeta{Namespace: "default", Name: "talker"},
		Spec: &v1.PodSpec{NodeName: "node1", TerminationGracePeriodSeconds: proto.Int64(1), Containers: []*v1.Container{{
			Name: "main", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent",
			Command: []string{"sh", "-c", `i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done`},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 90*time.Second, "pod talker Running", func() error {
		p, err := client.For[*v1.Pod](c.Client).Get(ctx, "default", "talker")
		if err != nil {
			return err
		}
		if p.GetStatus().GetPhase() != "Running" {
			return fmt.Errorf("phase %q", p.GetStatus().GetPhase())
		}
		return nil
	})
	streams := func(server string) error {
		out, err := tugctlOn(c, server, "logs", "talker", "--tail", "2")
		if err != nil || !strings.Contains(out, "tick") {
			return fmt.Errorf("tugctl --server %s logs: %v: %s", server, err, out)
		}
		out, err = tugctlOn(c, server, "exec", "talker", "--", "sh", "-c", "echo from-exec; exit 3")
		if !strings.Contains(out, "from-exec") {
			return fmt.Errorf("tugctl --server %s exec: %v: %s", server, err, out)
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			return fmt.Errorf("tugctl --server %s exec: exit %v, want 3", server, err)
		}
		return nil
	}
	for _, s := range c.Servers {
		if err := streams(s); err != nil {
			t.Fatal(err)
		}
	}
	archive, err := bins.Image(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tugctlOn(c, c.Servers[1], "image", "import", archive, "--node", "node1"); err != nil {
		t.Fatalf("image import through the second apiserver: %v: %s", err, out)
	}
	if out, err := tugctlOn(c, c.Servers[1], "image", "ls", "--node", "node1"); err != nil || !strings.Contains(out, "echo") {
		t.Fatalf("image ls through the second apiserver: %v: %s", err, out)
	}

	if err := c.KillAPIServer(0); err != nil {
		t.Fatal(err)
	}
	if err := streams(c.Servers[1]); err != nil {
		t.Fatalf("with the first apiserver killed: %v", err)
	}
	if err := streams(c.Server); err != nil {
		t.Fatalf("with the first apiserver killed, both addresses given: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := c.RestartAPIServer(rctx, 0); err != nil {
		t.Fatal(err)
	}
	// The kubelet reconnects its tunnel to the restarted apiserver.
	wait.Eventually(t, 30*time.Second, "logs and exec through the restarted apiserver", func() error {
		return streams(c.Servers[0])
	})
}
