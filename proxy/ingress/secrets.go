package ingress

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// secretSyncWait bounds how long a rebuild waits for a newly referenced
// Secret's first list before it reports the Secret missing (its watch
// keeps trying and the next change rebuilds).
const secretSyncWait = 10 * time.Second

// secretWatches holds one informer per Secret the served Ingresses name
// in spec.tls, each pinned to its namespace and metadata.name, as the
// kubelet watches its pods' Secrets one by one: the apiserver's proxy
// authorizer lets the proxy identity read exactly those Secrets, so it
// cannot list them all. Used by the rebuild goroutine only, but Get is
// safe from any goroutine.
type secretWatches struct {
	cl      *client.Client
	log     *slog.Logger
	changed func()

	mu      sync.Mutex
	ctx     context.Context // Run's; nil before Run
	watches map[string]*secretWatch
	wg      sync.WaitGroup
}

type secretWatch struct {
	inf    *informer.Informer[*v1.Secret]
	cancel context.CancelFunc
}

func newSecretWatches(cl *client.Client, log *slog.Logger, changed func()) *secretWatches {
	return &secretWatches{cl: cl, log: log, changed: changed, watches: map[string]*secretWatch{}}
}

// start sets the context the watches run under; they end with it.
func (s *secretWatches) start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
}

// wait waits for the watches' goroutines after ctx ended.
func (s *secretWatches) wait() { s.wg.Wait() }

// set watches exactly the Secrets keys ("namespace/name"): starts the new
// ones (waiting up to secretSyncWait for their first list), stops the rest.
func (s *secretWatches) set(keys map[string]bool) {
	s.mu.Lock()
	ctx := s.ctx
	var started []*informer.Informer[*v1.Secret]
	for key, w := range s.watches {
		if !keys[key] {
			w.cancel()
			delete(s.watches, key)
		}
	}
	for key := range keys {
		if _, ok := s.watches[key]; ok || ctx == nil {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		inf := informer.New(client.For[*v1.Secret](s.cl), informer.Options{Namespace: ns, FieldSelector: "metadata.name=" + name,
			Logger: s.log.With("secret", key)})
		changed := func(*v1.Secret) { s.changed() }
		inf.AddHandler(informer.Handler[*v1.Secret]{OnAdd: changed, OnUpdate: func(_, _ *v1.Secret) { s.changed() }, OnDelete: changed})
		wctx, cancel := context.WithCancel(ctx)
		s.watches[key] = &secretWatch{inf: inf, cancel: cancel}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); _ = inf.Run(wctx) }()
		started = append(started, inf)
	}
	s.mu.Unlock()
	if len(started) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, secretSyncWait)
	defer cancel()
	for _, inf := range started {
		inf.WaitForSync(wctx)
	}
}

// Get returns the watched Secret key, if it exists.
func (s *secretWatches) Get(key string) (*v1.Secret, bool) {
	s.mu.Lock()
	w := s.watches[key]
	s.mu.Unlock()
	if w == nil {
		return nil, false
	}
	return w.inf.Get(key)
}

// secretKeys are the Secrets the Ingresses name in spec.tls.
func secretKeys(served []*v1.Ingress) map[string]bool {
	keys := map[string]bool{}
	for _, ing := range served {
		for _, entry := range ing.GetSpec().GetTls() {
			if entry.GetSecretName() != "" {
				keys[ing.GetMetadata().GetNamespace()+"/"+entry.GetSecretName()] = true
			}
		}
	}
	return keys
}
