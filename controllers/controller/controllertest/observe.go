package controllertest

import (
	"context"
	"sync"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// ObservePods watches the pods of namespace ns and calls fn with all of
// them after every single change, in the order the apiserver made the
// changes: an observer that samples every state the cluster passes
// through, not just some. fn runs on one goroutine.
func ObservePods(ctx context.Context, t testing.TB, c *client.Client, ns string, fn func(pods []*v1.Pod)) {
	ctx, cancel := context.WithCancel(ctx)
	inf := informer.New(client.For[*v1.Pod](c), informer.Options{Namespace: ns, Logger: Logger()})
	var mu sync.Mutex
	cur := map[string]*v1.Pod{}
	emit := func() {
		all := make([]*v1.Pod, 0, len(cur))
		for _, p := range cur {
			all = append(all, p)
		}
		fn(all)
	}
	inf.AddHandler(informer.Handler[*v1.Pod]{
		OnAdd: func(p *v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			cur[p.Metadata.Uid] = p
			emit()
		},
		OnUpdate: func(_, p *v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			cur[p.Metadata.Uid] = p
			emit()
		},
		OnDelete: func(p *v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			delete(cur, p.Metadata.Uid)
			emit()
		},
	})
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !inf.WaitForSync(ctx) {
		t.Fatal("pod observer did not sync")
	}
}
