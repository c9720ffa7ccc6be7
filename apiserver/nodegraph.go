package apiserver

import (
	"context"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
	"github.com/tugboat/tugboat/apiserver/watchcache"
)

// podGraph is the node authorizer's graph (Kubernetes' node authorizer
// keeps one, fed by informers): the pods bound to each node, kept from
// the Pod watch cache, so that a kubelet's Get of a ConfigMap, Secret or
// claim its pods use, and its service account TokenRequest, are checked
// against the pods of its node instead of by listing every pod of the
// namespace from etcd. That List per request made pods with the default
// service account volume (kube-api-access-*: a token and the
// kube-root-ca.crt ConfigMap) O(pods²) to start: with 2,000 pods in one
// namespace, each pod start and each once-a-minute volume refresh read
// and decoded all 2,000 twice, and 121 of 2,000 hollow pods were Running
// after 4 minutes.
//
// The graph lags storage by the watch's delay. What it has is answered
// at once; what it lacks (a pod bound a moment ago, or a node asking for
// something none of its pods uses) is asked of storage as before, so the
// lag never denies what storage allows. A pod that is gone leaves the
// graph with its DELETED event, as it leaves Kubernetes' graph.
type podGraph struct {
	mu     sync.RWMutex
	byNode map[string]map[podKey]*v1.Pod
	node   map[podKey]string // the node of each pod in byNode
}

type podKey struct{ ns, name string }

func newPodGraph() *podGraph {
	return &podGraph{byNode: map[string]map[podKey]*v1.Pod{}, node: map[podKey]string{}}
}

// reset replaces the graph with pods (a List).
func (g *podGraph) reset(pods []v1.Object) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.byNode, g.node = map[string]map[podKey]*v1.Pod{}, map[podKey]string{}
	for _, o := range pods {
		g.putLocked(o.(*v1.Pod))
	}
}

// apply follows one watch event.
func (g *podGraph) apply(e *watchcache.Event) {
	p, _ := e.Obj.(*v1.Pod)
	if p == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := podKey{p.GetMetadata().GetNamespace(), p.GetMetadata().GetName()}
	g.removeLocked(k)
	if e.Type != watchcache.Deleted {
		g.putLocked(p)
	}
}

func (g *podGraph) putLocked(p *v1.Pod) {
	node := p.GetSpec().GetNodeName()
	if node == "" {
		return // references count only once the pod is bound
	}
	k := podKey{p.GetMetadata().GetNamespace(), p.GetMetadata().GetName()}
	pods := g.byNode[node]
	if pods == nil {
		pods = map[podKey]*v1.Pod{}
		g.byNode[node] = pods
	}
	pods[k] = p
	g.node[k] = node
}

func (g *podGraph) removeLocked(k podKey) {
	node, ok := g.node[k]
	if !ok {
		return
	}
	delete(g.node, k)
	delete(g.byNode[node], k)
	if len(g.byNode[node]) == 0 {
		delete(g.byNode, node)
	}
}

// referenced reports whether the graph has a pod bound to node, in ns,
// that references kind ns/name (podReferences).
func (g *podGraph) referenced(node, kind, ns, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for k, p := range g.byNode[node] {
		if k.ns == ns && podReferences(p, kind, name) {
			return true
		}
	}
	return false
}

// followPods fills s.pods from storage and keeps it current from the Pod
// watch cache until ctx ends, listing again whenever the watch ends. The
// first List's error is returned; later ones are logged and retried.
func (s *Server) followPods(ctx context.Context) error {
	k, _ := kinds.Lookup("Pod")
	res, err := s.store.List(ctx, k, storage.ListOptions{})
	if err != nil {
		return err
	}
	go func() {
		backoff := time.Second
		for {
			s.pods.reset(res.Items)
			if w, err := s.caches[k].Watch(ctx, res.Revision); err == nil {
				for {
					e, err := w.Next(ctx)
					if err != nil {
						if ctx.Err() == nil {
							s.log.Warn("node authorizer's pod watch ended; listing pods again", "err", err)
						}
						break
					}
					s.pods.apply(e)
				}
				w.Stop()
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				if res, err = s.store.List(ctx, k, storage.ListOptions{}); err == nil {
					break
				}
				s.log.Warn("node authorizer: listing pods", "err", err)
			}
		}
	}()
	return nil
}
