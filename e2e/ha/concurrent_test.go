package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestConcurrentWritesThroughTwoAPIServers: what must be decided once for
// the whole cluster is decided in etcd, not in one apiserver's memory.
// Two apiservers create 1,000 Services at once (half NodePort): no
// ClusterIP and no nodePort is handed out twice. Both bind the same pods
// at once to different nodes: exactly one bind of each pod wins, the other
// gets Conflict, and the stored pod is the winner's. Secrets written
// through one (encrypted at rest with the shared key file) read back
// through the other.
func TestConcurrentWritesThroughTwoAPIServers(t *testing.T) {
	cp := startControlPlane(t, 1, 2)
	a, b := cp.clientFor(cp.addrs[0]), cp.clientFor(cp.addrs[1])
	defer a.Close()
	defer b.Close()
	ctx := context.Background()

	t.Run("services", func(t *testing.T) {
		const perServer, workers = 500, 8
		var mu sync.Mutex
		var created []*v1.Service
		var errs []error
		var wg sync.WaitGroup
		for si, c := range []*client.Client{a, b} {
			svcs := client.For[*v1.Service](c)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < perServer; i += workers {
						typ := "ClusterIP"
						if i%2 == 1 {
							typ = "NodePort"
						}
						s, err := svcs.Create(ctx, &v1.Service{
							Metadata: &v1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%d-%d", si, i)},
							Spec: &v1.ServiceSpec{Type: typ, Selector: map[string]string{"app": "x"},
								Ports: []*v1.ServicePort{{Protocol: "TCP", Port: 80, TargetPort: "8080"}}},
						})
						mu.Lock()
						if err != nil {
							errs = append(errs, err)
						} else {
							created = append(created, s)
						}
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%d creates failed, first: %v", len(errs), errs[0])
		}
		ips, ports := map[string]string{}, map[int32]string{}
		nodePorts := 0
		for _, s := range created {
			name := s.Metadata.Name
			ip := s.GetSpec().GetClusterIp()
			if ip == "" {
				t.Errorf("%s: no ClusterIP", name)
			} else if other, dup := ips[ip]; dup {
				t.Errorf("ClusterIP %s given to %s and %s", ip, other, name)
			}
			ips[ip] = name
			for _, p := range s.GetSpec().GetPorts() {
				if p.NodePort == 0 {
					continue
				}
				nodePorts++
				if other, dup := ports[p.NodePort]; dup {
					t.Errorf("nodePort %d given to %s and %s", p.NodePort, other, name)
				}
				ports[p.NodePort] = name
			}
		}
		// And what is stored agrees with what the creates returned.
		stored, _, err := client.For[*v1.Service](a).List(ctx, client.ListOptions{Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stored {
			if n, ok := ips[s.GetSpec().GetClusterIp()]; ok && n != s.Metadata.Name {
				t.Errorf("stored %s has %s's ClusterIP", s.Metadata.Name, n)
			}
		}
		if nodePorts != perServer {
			t.Errorf("%d nodePorts, want %d", nodePorts, perServer)
		}
		t.Logf("%d Services through two apiservers at once: %d distinct ClusterIPs, %d distinct nodePorts", len(created), len(ips), len(ports))
	})

	t.Run("bind", func(t *testing.T) {
		const n = 100
		pods := client.For[*v1.Pod](a)
		for i := range n {
			_, err := pods.Create(ctx, &v1.Pod{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "p" + strconv.Itoa(i)},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox"}}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		type result struct {
			node string
			err  error
		}
		results := make([][2]result, n)
		var wg sync.WaitGroup
		for i := range n {
			for si, c := range []*client.Client{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					node := "node-" + strconv.Itoa(si)
					_, err := c.Bind(ctx, "default", "p"+strconv.Itoa(i), node, 0)
					results[i][si] = result{node, err}
				}()
			}
		}
		wg.Wait()
		for i := range n {
			name := "p" + strconv.Itoa(i)
			won := ""
			for _, r := range results[i] {
				switch {
				case r.err == nil:
					if won != "" {
						t.Errorf("%s bound twice: to %s and %s", name, won, r.node)
					}
					won = r.node
				case !errors.Is(r.err, apierrors.ErrConflict):
					t.Errorf("%s: bind to %s: %v, want success or Conflict", name, r.node, r.err)
				}
			}
			p, err := client.For[*v1.Pod](b).Get(ctx, "default", name)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.GetSpec().GetNodeName(); won == "" || got != won {
				t.Errorf("%s: stored on node %q, the winning bind was to %q", name, got, won)
			}
		}
	})

	t.Run("secrets", func(t *testing.T) {
		var wg sync.WaitGroup
		errc := make(chan error, 100)
		for si, c := range []*client.Client{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					name := fmt.Sprintf("sec%d-%d", si, i)
					if _, err := client.For[*v1.Secret](c).Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
						Data: map[string][]byte{"v": []byte(name)}}); err != nil {
						errc <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		// Each read through the apiserver that did not write it.
		for si, c := range []*client.Client{b, a} {
			for i := range 50 {
				name := fmt.Sprintf("sec%d-%d", si, i)
				s, err := client.For[*v1.Secret](c).Get(ctx, "default", name)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(s.Data["v"], []byte(name)) {
					t.Errorf("%s read through the other apiserver: %q", name, s.Data["v"])
				}
			}
		}
	})
}
