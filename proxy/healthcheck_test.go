package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// TestExternalTrafficPolicyLocalAgainstAPIServer: a LoadBalancer Service
// with externalTrafficPolicy Local, its healthCheckNodePort allocated by
// the apiserver, served by the proxy of node-a; the peer host (outside the
// cluster CIDR) probes it and reaches the nodePort with its own address,
// the moment the check says healthy (its count is the datapath's, as
// programmed), and is dropped the moment it says unavailable.
func TestExternalTrafficPolicyLocalAgainstAPIServer(t *testing.T) {
	nstest.RequireRoot(t)
	srv := apiservertest.Start(t)
	ctx := context.Background()
	l := nstest.NewLab(t, 1)
	nstest.Serve(t, l.Pods[0], "pod1", ":8080")

	svcs, epsAPI := client.For[*v1.Service](srv.Client), client.For[*v1.EndpointSlice](srv.Client)
	s := service("lb", 80)
	s.Spec.Type, s.Spec.ExternalTrafficPolicy = "LoadBalancer", "Local"
	lb, err := svcs.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	hcPort, nodePort := lb.GetSpec().GetHealthCheckNodePort(), lb.GetSpec().GetPorts()[0].GetNodePort()
	if hcPort == 0 || nodePort == 0 {
		t.Fatalf("apiserver allocated healthCheckNodePort %d, nodePort %d", hcPort, nodePort)
	}
	slice := endpoints("lb", nstest.PodIP(0))
	slice.Endpoints[0].NodeName = proto.String("node-a")
	if slice, err = epsAPI.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}

	p := start(t, srv.Client, l)
	defer p.stop(t)

	probe := func() (int, map[string]any, error) {
		c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
				return l.Peer.Dial(network, addr, 2*time.Second)
			}}}
		resp, err := c.Get(fmt.Sprintf("http://%s:%d/healthz", nstest.NodeIP, hcPort))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("body %q: %w", b, err)
		}
		return resp.StatusCode, body, nil
	}
	wait.Eventually(t, 20*time.Second, "the health check node port healthy", func() error {
		code, body, err := probe()
		if err != nil || code != 200 || body["localEndpoints"] != float64(1) || body["serviceProxyHealthy"] != true ||
			fmt.Sprint(body["service"]) != "map[name:lb namespace:default]" {
			return fmt.Errorf("%d %v %v", code, body, err)
		}
		return nil
	})
	// The check counts the endpoints the datapath has programmed: once it
	// says healthy, the nodePort answers at once.
	if got, err := nstest.Ask(l.Peer, fmt.Sprintf("%s:%d", nstest.NodeIP, nodePort)); err != nil || got != "pod1 "+nstest.PeerIP {
		t.Fatalf("right after the check turned healthy the nodePort answered %q, %v; want the client's own address", got, err)
	}

	// The endpoint now said to be on another node: 503, and the peer's
	// connections to the nodePort are dropped.
	slice.Endpoints[0].NodeName = proto.String("node-b")
	if _, err := epsAPI.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the health check node port unavailable", func() error {
		code, body, err := probe()
		if err != nil || code != 503 || body["localEndpoints"] != float64(0) {
			return fmt.Errorf("%d %v %v", code, body, err)
		}
		return nil
	})
	// And once it says unavailable, the rule is gone.
	if c, err := l.Peer.Dial("tcp", fmt.Sprintf("%s:%d", nstest.NodeIP, nodePort), time.Second); err == nil {
		c.Close()
		t.Fatal("right after the check turned unavailable the peer connected to the nodePort")
	} else if !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the nodePort after the check turned unavailable: %v, want a timeout (dropped)", err)
	}

	// The Service deleted: the port closes.
	if _, err := svcs.Delete(ctx, "default", "lb", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the health check node port closed", func() error {
		if _, _, err := probe(); !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("got %v, want connection refused", err)
		}
		return nil
	})
}
