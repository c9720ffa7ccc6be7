package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// Each apiserver says it is alive with a Lease of its own, as
// kube-apiserver does (its APIServerIdentity Leases): kube-system/
// apiserver-<id>, labelled apiserver.kubernetes.io/identity=kube-apiserver,
// renewed every identityRenew. The cluster status (clusterstatus.go)
// lists them to name every apiserver and whether it still renews; a Lease
// unrenewed for identityGC is deleted by the others (an apiserver that was
// removed), as kube-apiserver's garbage collector does after an hour.
const (
	identityLabel    = "apiserver.kubernetes.io/identity"
	identityValue    = "kube-apiserver"
	identityHostname = "kubernetes.io/hostname"
	// addressAnnotation is where clients reach the apiserver's gRPC API.
	addressAnnotation = "tugboat.dev/apiserver-address"
	identityRenew     = 10 * time.Second
	identityDuration  = 30 * time.Second
	identityGC        = time.Hour
)

// identity is this apiserver's Lease name and holder identity. The name
// is stable across restarts of the same apiserver (its host name and
// listen address); the holder is new per process.
type identity struct {
	name, holder, address string
}

func newIdentity(listen string) identity {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "|" + listen))
	name := "apiserver-" + hex.EncodeToString(sum[:])[:16]
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	addr := listen
	if h, p, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(h); h == "" || ip != nil && ip.IsUnspecified() {
			addr = net.JoinHostPort(host, p)
		}
	}
	return identity{name: name, holder: name + "_" + hex.EncodeToString(b), address: addr}
}

// runIdentityLease renews this apiserver's identity Lease until ctx ends.
func (s *Server) runIdentityLease(ctx context.Context) {
	t := time.NewTicker(identityRenew)
	defer t.Stop()
	for {
		if err := s.renewIdentity(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("renewing the apiserver identity Lease", "lease", "kube-system/"+s.identity.name, "err", err)
		}
		s.collectIdentities(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) renewIdentity(ctx context.Context) error {
	k, _ := kinds.Lookup("Lease")
	now := timestamppb.Now()
	obj, err := s.store.Get(ctx, k, "kube-system", s.identity.name)
	if apierrors.IsNotFound(err) {
		l := &v1.Lease{
			Metadata: &v1.ObjectMeta{
				Name: s.identity.name, Namespace: "kube-system",
				Labels:      map[string]string{identityLabel: identityValue, identityHostname: hostname()},
				Annotations: map[string]string{addressAnnotation: s.identity.address},
			},
			Spec: &v1.LeaseSpec{HolderIdentity: s.identity.holder, LeaseDurationSeconds: int32(identityDuration / time.Second), AcquireTime: now, RenewTime: now},
		}
		_, err = s.create(ctx, l, false)
		return err
	}
	if err != nil {
		return err
	}
	l := proto.Clone(obj).(*v1.Lease)
	if l.Spec == nil {
		l.Spec = &v1.LeaseSpec{}
	}
	if l.Spec.HolderIdentity != s.identity.holder {
		l.Spec.HolderIdentity, l.Spec.AcquireTime = s.identity.holder, now
		l.Spec.LeaseTransitions++
	}
	l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = now, int32(identityDuration/time.Second)
	if l.Metadata.Annotations == nil {
		l.Metadata.Annotations = map[string]string{}
	}
	l.Metadata.Annotations[addressAnnotation] = s.identity.address
	_, err = s.update(ctx, k, l, false, false)
	return err
}

// collectIdentities deletes the identity Leases of other apiservers not
// renewed for identityGC.
func (s *Server) collectIdentities(ctx context.Context) {
	leases, err := s.identityLeases(ctx)
	if err != nil {
		return
	}
	k, _ := kinds.Lookup("Lease")
	for _, l := range leases {
		if l.GetMetadata().GetName() == s.identity.name || time.Since(l.GetSpec().GetRenewTime().AsTime()) < identityGC {
			continue
		}
		if _, err := s.store.Delete(ctx, k, l, l.GetMetadata().GetResourceVersion()); err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("deleting a stale apiserver identity Lease", "lease", "kube-system/"+l.GetMetadata().GetName(), "err", err)
		}
	}
}

// identityLeases lists every apiserver's identity Lease.
func (s *Server) identityLeases(ctx context.Context) ([]*v1.Lease, error) {
	k, _ := kinds.Lookup("Lease")
	res, err := s.store.List(ctx, k, storage.ListOptions{Namespace: "kube-system", Filter: func(o v1.Object) bool {
		return v1.Meta(o).GetLabels()[identityLabel] == identityValue
	}})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Lease, 0, len(res.Items))
	for _, o := range res.Items {
		out = append(out, o.(*v1.Lease))
	}
	return out, nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
