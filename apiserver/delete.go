package apiserver

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// Finalizers the apiserver adds for a delete's propagation policy; the
// garbage collector acts on them and removes them.
const (
	FinalizerOrphan     = "orphan"
	FinalizerForeground = "foregroundDeletion"
)

// Delete implements Objects.Delete.
//
// An object goes at once unless it must wait: a pod bound to a node waits
// for its grace period (the kubelet stops it, then deletes with grace 0), an
// object with finalizers waits for them to be removed, and a namespace
// waits until everything in it is gone. Waiting objects get
// deletion_timestamp and are returned.
func (s *Server) Delete(ctx context.Context, req *v1.DeleteRequest) (*anypb.Any, error) {
	k, err := lookupKind(req.Kind)
	if err != nil {
		return nil, err
	}
	if err := checkDeleteOptions(req); err != nil {
		return nil, err
	}
	ns := namespaceOf(k, req.Namespace)
	if err := s.authorize(ctx, "delete", k, "", ns, req.Name, ""); err != nil {
		return nil, err
	}
	out, err := s.delete(ctx, k, ns, req.Name, req)
	if err != nil {
		return nil, err
	}
	return pack(out)
}

// checkDeleteOptions checks what Delete and Evict share of a request.
func checkDeleteOptions(req *v1.DeleteRequest) error {
	switch req.PropagationPolicy {
	case "", "Background", "Foreground", "Orphan":
	default:
		return apierrors.Invalid("propagationPolicy", "%q is not one of Background, Foreground, Orphan", req.PropagationPolicy)
	}
	if req.GracePeriodSeconds != nil && *req.GracePeriodSeconds < 0 {
		return apierrors.Invalid("gracePeriodSeconds", "must be >= 0")
	}
	return nil
}

func (s *Server) delete(ctx context.Context, k *kinds.Kind, ns, name string, req *v1.DeleteRequest) (v1.Object, error) {
	if k.Name == "Namespace" && (name == "default" || name == "kube-system") {
		return nil, apierrors.New(apierrors.ErrForbidden, "namespace %q may not be deleted", name)
	}
	for attempt := 0; ; attempt++ {
		cur, err := s.store.Get(ctx, k, ns, name)
		if err != nil {
			return nil, err
		}
		m := cur.GetMetadata()
		if req.ResourceVersion != 0 && req.ResourceVersion != m.ResourceVersion {
			return nil, apierrors.Conflict(k.GroupResource(), name)
		}
		if req.Uid != "" && req.Uid != m.Uid {
			return nil, apierrors.New(apierrors.ErrConflict, "Precondition failed: UID in precondition: %s, UID in object meta: %s", req.Uid, m.Uid)
		}
		next := proto.Clone(cur).(v1.Object)
		nm := v1.Meta(next)
		switch req.PropagationPolicy {
		case "Orphan":
			addFinalizer(nm, FinalizerOrphan)
		case "Foreground":
			addFinalizer(nm, FinalizerForeground)
		}
		grace := gracePeriod(k, cur, req)
		if nm.DeletionTimestamp != nil && nm.DeletionGracePeriodSeconds < grace {
			grace = nm.DeletionGracePeriodSeconds // a delete never lengthens the grace period
		}
		if k.Name == "Namespace" {
			grace = 1 // waits for its contents
		}
		var out v1.Object
		if grace == 0 && len(nm.Finalizers) == 0 {
			if req.DryRun {
				return cur, nil
			}
			out, err = s.store.Delete(ctx, k, cur, m.ResourceVersion)
			if err == nil {
				s.release(ctx, k, cur)
				if k.Name == "ServiceAccount" && name == DefaultServiceAccount {
					if err := s.ensureDefaultServiceAccount(ctx, ns); err != nil {
						s.log.Error("default service account", "namespace", ns, "err", err)
					}
				}
			}
		} else {
			if nm.DeletionTimestamp == nil {
				nm.DeletionTimestamp = timestamppb.New(time.Now().Add(time.Duration(grace) * time.Second))
			}
			nm.DeletionGracePeriodSeconds = grace
			if k.Name == "Namespace" {
				next.(*v1.Namespace).Status = &v1.NamespaceStatus{Phase: "Terminating"}
			}
			if proto.Equal(next, cur) {
				return cur, nil
			}
			if req.DryRun {
				return next, nil
			}
			out, err = s.store.Update(ctx, k, next, m.ResourceVersion)
			if err == nil && k.Name == "Namespace" {
				s.startNamespaceFinalizer(name)
			}
		}
		if apierrors.IsConflict(err) && req.ResourceVersion == 0 && attempt < 50 {
			continue
		}
		return out, err
	}
}

// gracePeriod is how long an object waits before it is removed: only pods
// bound to a node wait, for the request's grace period or their own.
func gracePeriod(k *kinds.Kind, obj v1.Object, req *v1.DeleteRequest) int64 {
	pod, ok := obj.(*v1.Pod)
	if !ok || k.Name != "Pod" {
		return 0
	}
	if pod.GetSpec().GetNodeName() == "" {
		return 0
	}
	// A pod that has finished has nothing to stop.
	if p := pod.GetStatus().GetPhase(); p == "Succeeded" || p == "Failed" {
		return 0
	}
	if req.GracePeriodSeconds != nil {
		return *req.GracePeriodSeconds
	}
	if g := pod.GetSpec().TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return 30
}

func addFinalizer(m *v1.ObjectMeta, f string) {
	for _, have := range m.Finalizers {
		if have == f {
			return
		}
	}
	m.Finalizers = append(m.Finalizers, f)
}

// maybeFinalize deletes an object whose deletion was waiting only on
// finalizers that an update just removed.
func (s *Server) maybeFinalize(ctx context.Context, k *kinds.Kind, next v1.Object, have int64) (bool, v1.Object, error) {
	m := next.GetMetadata()
	if m.DeletionTimestamp == nil || len(m.Finalizers) > 0 || k.Name == "Namespace" {
		return false, nil, nil
	}
	if k.Name == "Pod" && m.DeletionGracePeriodSeconds > 0 {
		return false, nil, nil // the kubelet finishes a bound pod's deletion
	}
	out, err := s.store.Delete(ctx, k, next, have)
	if err == nil {
		s.release(ctx, k, next)
	}
	return true, out, err
}

// startNamespaceFinalizer deletes everything in a terminating namespace,
// then the namespace, in the background (once per namespace).
func (s *Server) startNamespaceFinalizer(ns string) {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	if s.nsActive[ns] || s.nsCtx == nil {
		return
	}
	s.nsActive[ns] = true
	go func() {
		defer func() {
			s.nsMu.Lock()
			delete(s.nsActive, ns)
			s.nsMu.Unlock()
		}()
		s.finalizeNamespace(s.nsCtx, ns)
	}()
}

func (s *Server) finalizeNamespace(ctx context.Context, ns string) {
	log := s.log.With("namespace", ns)
	log.Info("deleting namespace contents")
	nsKind, _ := kinds.Lookup("Namespace")
	for ctx.Err() == nil {
		remaining := 0
		for _, k := range kinds.All() {
			if !k.Namespaced {
				continue
			}
			res, err := s.store.List(ctx, k, storage.ListOptions{Namespace: ns})
			if err != nil {
				remaining++
				continue
			}
			remaining += len(res.Items)
			for _, o := range res.Items {
				if o.GetMetadata().DeletionTimestamp != nil {
					continue
				}
				_, err := s.delete(ctx, k, ns, o.GetMetadata().Name, &v1.DeleteRequest{})
				if err != nil && !apierrors.IsNotFound(err) {
					log.Warn("deleting object in namespace", "kind", k.Plural, "name", o.GetMetadata().Name, "err", err)
				}
			}
		}
		if remaining == 0 {
			cur, err := s.store.Get(ctx, nsKind, "", ns)
			if err == nil {
				_, err = s.store.Delete(ctx, nsKind, cur, cur.GetMetadata().ResourceVersion)
			}
			if err == nil || apierrors.IsNotFound(err) {
				log.Info("namespace deleted")
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// resumeNamespaceFinalizers restarts finalizers for namespaces that were
// terminating when the apiserver last stopped.
func (s *Server) resumeNamespaceFinalizers(ctx context.Context) {
	s.nsMu.Lock()
	s.nsCtx = ctx
	s.nsMu.Unlock()
	nsKind, _ := kinds.Lookup("Namespace")
	res, err := s.store.List(ctx, nsKind, storage.ListOptions{})
	if err != nil {
		return
	}
	for _, o := range res.Items {
		if o.GetMetadata().DeletionTimestamp != nil {
			s.startNamespaceFinalizer(o.GetMetadata().Name)
		}
	}
}
