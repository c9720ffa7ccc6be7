package apiserver

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/fields"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/storage"
)

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// unpack turns a request's Any into an object of a stored kind.
func unpack(a *anypb.Any) (*kinds.Kind, v1.Object, error) {
	if a == nil {
		return nil, nil, apierrors.Invalid("object", "required")
	}
	if len(a.Value) > validation.MaxObjectBytes {
		return nil, nil, apierrors.Invalid("object", "%d bytes is larger than the limit of %d bytes", len(a.Value), validation.MaxObjectBytes)
	}
	// Fields this version does not know are dropped, not stored and
	// served back to whoever reads the object (a place to hide data).
	msg, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{DiscardUnknown: true})
	if err != nil {
		return nil, nil, apierrors.Invalid("object", "cannot decode %s: %v", a.TypeUrl, err)
	}
	k, err := kinds.ForMessage(msg)
	if err != nil {
		return nil, nil, err
	}
	return k, msg.(v1.Object), nil
}

// pack is an object as a response carries it: every response of the
// Objects API goes through here, so a token Secret's secret never leaves.
func pack(obj v1.Object) (*anypb.Any, error) { return anypb.New(redactSecret(obj)) }

func lookupKind(name string) (*kinds.Kind, error) {
	if name == "" {
		return nil, apierrors.Invalid("kind", "required")
	}
	return kinds.Lookup(name)
}

// namespaceOf defaults and checks the namespace for a kind.
func namespaceOf(k *kinds.Kind, ns string) string {
	if k.Namespaced && ns == "" {
		return "default"
	}
	if !k.Namespaced {
		return ""
	}
	return ns
}

// Create implements Objects.Create.
func (s *Server) Create(ctx context.Context, req *v1.CreateRequest) (*anypb.Any, error) {
	if req.Subresource != "" {
		return s.createSubresource(ctx, req)
	}
	if req.Kind != "" || req.Name != "" || req.Namespace != "" {
		return nil, apierrors.Invalid("kind", "kind, namespace and name are for a subresource's create (subresource); an object's are in its metadata")
	}
	k, obj, err := unpack(req.Object)
	if err != nil {
		return nil, err
	}
	m := v1.Meta(obj)
	if err := s.authorize(ctx, "create", k, "", namespaceOf(k, m.Namespace), m.Name, ""); err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx, req.FieldManager, "")
	if err != nil {
		return nil, err
	}
	out, err := s.createAs(ctx, obj, req.DryRun, owner)
	if err != nil {
		return nil, err
	}
	return pack(out)
}

// create stores a new object the apiserver makes itself (no
// managedFields entry); see createAs.
func (s *Server) create(ctx context.Context, obj v1.Object, dryRun bool) (v1.Object, error) {
	return s.createAs(ctx, obj, dryRun, fieldOwner{})
}

// createAs stores a new object written by owner; with dryRun it does every
// step but the store (admission reservations are released) and returns the
// object as it would be stored.
func (s *Server) createAs(ctx context.Context, obj v1.Object, dryRun bool, owner fieldOwner) (v1.Object, error) {
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return nil, err
	}
	m := v1.Meta(obj)
	m.Namespace = namespaceOf(k, m.Namespace)
	if m.Name == "" && m.GenerateName != "" {
		m.Name = m.GenerateName + randomSuffix()
	}
	// Fields the server owns.
	m.Uid = uuid.NewString()
	m.ResourceVersion = 0
	m.Generation = 1
	m.CreationTimestamp = timestamppb.Now()
	m.DeletionTimestamp = nil
	m.DeletionGracePeriodSeconds = 0
	k.Default(obj)
	if err := k.Validate(obj).Err(k.Name, m.Name); err != nil {
		return nil, err
	}
	if k.ValidateCreate != nil {
		if err := k.ValidateCreate(obj).Err(k.Name, m.Name); err != nil {
			return nil, err
		}
	}
	s.recordUpdate(k, owner, nil, obj)
	if k.Namespaced {
		if err := s.checkNamespace(ctx, m.Namespace); err != nil {
			return nil, err
		}
	}
	if err := s.admit(ctx, k, obj, nil); err != nil {
		return nil, err
	}
	if dryRun {
		s.release(ctx, k, obj)
		return obj, nil
	}
	out, err := s.store.Create(ctx, k, obj)
	if err != nil {
		s.release(ctx, k, obj)
		return nil, err
	}
	if k.Name == "Namespace" {
		if err := s.ensureDefaultServiceAccount(ctx, m.Name); err != nil {
			s.log.Error("default service account", "namespace", m.Name, "err", err)
		}
	}
	return out, nil
}

// checkNamespace refuses objects in a namespace that does not exist or is
// being deleted.
func (s *Server) checkNamespace(ctx context.Context, ns string) error {
	nsKind, _ := kinds.Lookup("Namespace")
	obj, err := s.store.Get(ctx, nsKind, "", ns)
	if apierrors.IsNotFound(err) {
		return apierrors.New(apierrors.ErrNotFound, "namespace %q not found: create it first (tugctl create namespace %s)", ns, ns)
	}
	if err != nil {
		return err
	}
	if obj.GetMetadata().DeletionTimestamp != nil {
		return apierrors.New(apierrors.ErrForbidden, "namespace %q is being deleted: no new objects may be created in it", ns)
	}
	return nil
}

func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// Get implements Objects.Get.
func (s *Server) Get(ctx context.Context, req *v1.GetRequest) (*anypb.Any, error) {
	k, err := lookupKind(req.Kind)
	if err != nil {
		return nil, err
	}
	if known, err := objectSubresource(k, req.Subresource); err != nil {
		return nil, err
	} else if !known {
		return nil, apierrors.Invalid("subresource", "%q cannot be read with Get (only the object, its scale, or a pod's resize or ephemeralcontainers)", req.Subresource)
	}
	ns := namespaceOf(k, req.Namespace)
	if err := s.authorize(ctx, "get", k, req.Subresource, ns, req.Name, ""); err != nil {
		return nil, err
	}
	obj, err := s.store.Get(ctx, k, ns, req.Name)
	if err != nil {
		return nil, err
	}
	return pack(obj)
}

// objectSubresources are the subresources Get, Update and Patch serve
// beside the object, each with its check of the kind.
var objectSubresources = map[string]func(*kinds.Kind) error{
	"scale":             scaleSubresource,
	"resize":            resizeSubresource,
	ephemeralContainers: ephemeralSubresource,
}

// objectSubresource checks sub ("" is the object itself) for kind k;
// known is false for a subresource none of them serves.
func objectSubresource(k *kinds.Kind, sub string) (known bool, err error) {
	if sub == "" {
		return true, nil
	}
	check, ok := objectSubresources[sub]
	if !ok {
		return false, nil
	}
	return true, check(k)
}

// selectors parses a request's label and field selectors for kind k.
func selectors(k *kinds.Kind, label, field string) (func(v1.Object) bool, error) {
	ls, err := labels.Parse(label)
	if err != nil {
		return nil, apierrors.Invalid("labelSelector", "%v", err)
	}
	fs, err := fields.Parse(field)
	if err != nil {
		return nil, apierrors.Invalid("fieldSelector", "%v", err)
	}
	if err := fs.Validate(k.New()); err != nil {
		return nil, apierrors.Invalid("fieldSelector", "%v", err)
	}
	if ls.Empty() && len(fs) == 0 {
		return nil, nil
	}
	return func(o v1.Object) bool {
		return ls.Matches(o.GetMetadata().GetLabels()) && fs.Matches(o)
	}, nil
}

// List implements Objects.List.
func (s *Server) List(ctx context.Context, req *v1.ListRequest) (*v1.ListResponse, error) {
	k, err := lookupKind(req.Kind)
	if err != nil {
		return nil, err
	}
	filter, err := selectors(k, req.LabelSelector, req.FieldSelector)
	if err != nil {
		return nil, err
	}
	if req.Limit < 0 {
		return nil, apierrors.Invalid("limit", "must be >= 0")
	}
	ns := ""
	if k.Namespaced {
		ns = req.Namespace
	}
	if err := s.authorize(ctx, "list", k, "", ns, "", req.FieldSelector); err != nil {
		return nil, err
	}
	res, err := s.store.List(ctx, k, storage.ListOptions{Namespace: ns, Filter: filter, Limit: req.Limit, Continue: req.Continue})
	if err != nil {
		return nil, err
	}
	out := &v1.ListResponse{ResourceVersion: res.Revision, Continue: res.Continue, Items: make([]*anypb.Any, 0, len(res.Items))}
	for _, o := range res.Items {
		a, err := pack(o)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, a)
	}
	return out, nil
}

// Update implements Objects.Update: metadata and spec from the request,
// status as stored.
func (s *Server) Update(ctx context.Context, req *v1.UpdateRequest) (*anypb.Any, error) {
	k, obj, err := unpack(req.Object)
	if err != nil {
		return nil, err
	}
	m := v1.Meta(obj)
	if known, err := objectSubresource(k, req.Subresource); err != nil {
		return nil, err
	} else if !known {
		return nil, apierrors.Invalid("subresource", "%q cannot be written with Update (only the object, its scale, or a pod's resize or ephemeralcontainers; status with UpdateStatus)", req.Subresource)
	}
	if err := s.authorize(ctx, "update", k, req.Subresource, namespaceOf(k, m.Namespace), m.Name, ""); err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx, req.FieldManager, req.Subresource)
	if err != nil {
		return nil, err
	}
	if req.Subresource == ephemeralContainers {
		out, err := s.updateFrom(ctx, k, obj, ephemeralContainers, req.DryRun, owner, func(cur v1.Object) (v1.Object, error) { return withEphemeralContainers(cur, obj), nil })
		if err != nil {
			return nil, err
		}
		return pack(out)
	}
	if req.Subresource == "resize" {
		out, err := s.updateFrom(ctx, k, obj, "resize", req.DryRun, owner, func(cur v1.Object) (v1.Object, error) { return withResize(cur, obj) })
		if err != nil {
			return nil, err
		}
		return pack(out)
	}
	if req.Subresource == "scale" {
		n := k.Scale.Replicas(obj)
		out, err := s.updateFrom(ctx, k, obj, "", req.DryRun, owner, func(cur v1.Object) (v1.Object, error) { return withReplicas(k, cur, n), nil })
		if err != nil {
			return nil, err
		}
		return pack(out)
	}
	out, err := s.updateAs(ctx, k, obj, false, req.DryRun, owner)
	if err != nil {
		return nil, err
	}
	return pack(out)
}

// UpdateStatus implements Objects.UpdateStatus: status from the request,
// everything else as stored.
func (s *Server) UpdateStatus(ctx context.Context, req *v1.UpdateRequest) (*anypb.Any, error) {
	k, obj, err := unpack(req.Object)
	if err != nil {
		return nil, err
	}
	if !k.HasStatus() {
		return nil, apierrors.Invalid("status", "kind %s has no status", k.Name)
	}
	m := v1.Meta(obj)
	if err := s.authorize(ctx, "update", k, "status", namespaceOf(k, m.Namespace), m.Name, ""); err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx, req.FieldManager, "status")
	if err != nil {
		return nil, err
	}
	out, err := s.updateAs(ctx, k, obj, true, req.DryRun, owner)
	if err != nil {
		return nil, err
	}
	return pack(out)
}

// update stores an update the apiserver makes itself (no managedFields
// entry); see updateAs.
func (s *Server) update(ctx context.Context, k *kinds.Kind, in v1.Object, statusOnly, dryRun bool) (v1.Object, error) {
	return s.updateAs(ctx, k, in, statusOnly, dryRun, fieldOwner{})
}

func (s *Server) updateAs(ctx context.Context, k *kinds.Kind, in v1.Object, statusOnly, dryRun bool, owner fieldOwner) (v1.Object, error) {
	sub := ""
	if statusOnly {
		sub = "status"
	}
	return s.updateFrom(ctx, k, in, sub, dryRun, owner, func(v1.Object) (v1.Object, error) { return in, nil })
}

// updateFrom is update with the user's object built from the stored one
// (build), so that a patch is applied again to what another writer stored
// when a compare-and-swap loses. in names the object and the version
// wanted (0: any); the change is recorded for owner (managedfields.go).
// sub is the subresource written: "" (the object), "status" (only the
// status is taken from build's object) or "resize" (a pod's resize:
// build keeps everything but the containers' resources, and the resize
// rules replace the update rules, resize.go) or "ephemeralcontainers" (a
// pod's ephemeral containers: build keeps everything else, and only
// additions are allowed, ephemeral.go).
func (s *Server) updateFrom(ctx context.Context, k *kinds.Kind, in v1.Object, sub string, dryRun bool, owner fieldOwner, build func(cur v1.Object) (v1.Object, error)) (v1.Object, error) {
	statusOnly := sub == "status"
	m := v1.Meta(in)
	ns := namespaceOf(k, m.Namespace)
	want := m.ResourceVersion
	for attempt := 0; ; attempt++ {
		cur, err := s.store.Get(ctx, k, ns, m.Name)
		if err != nil {
			return nil, err
		}
		have := cur.GetMetadata().ResourceVersion
		if want != 0 && want != have {
			return nil, apierrors.Conflict(k.GroupResource(), m.Name)
		}
		user, err := build(cur)
		if err != nil {
			return nil, err
		}
		var next v1.Object
		if statusOnly {
			next = proto.Clone(cur).(v1.Object)
			copyField(next, user, "status")
			if owner.applied {
				v1.Meta(next).ManagedFields = user.GetMetadata().GetManagedFields()
			}
		} else {
			next, err = s.mergeUpdate(k, cur, user)
			if err != nil {
				return nil, err
			}
		}
		if err := k.Validate(next).Err(k.Name, m.Name); err != nil {
			return nil, err
		}
		switch {
		case sub == ephemeralContainers:
			if err := validation.PodEphemeralContainersUpdate(cur.(*v1.Pod), next.(*v1.Pod)).Err(k.Name, m.Name); err != nil {
				return nil, err
			}
		case sub == "resize":
			if err := validation.PodResize(cur.(*v1.Pod), next.(*v1.Pod)).Err(k.Name, m.Name); err != nil {
				return nil, err
			}
		case k.ValidateUpdate != nil && !statusOnly:
			if err := k.ValidateUpdate(cur, next).Err(k.Name, m.Name); err != nil {
				return nil, err
			}
		}
		s.recordUpdate(k, owner, cur, next)
		if !statusOnly {
			if err := s.admit(ctx, k, next, cur); err != nil {
				return nil, err
			}
		}
		if proto.Equal(next, cur) {
			return cur, nil
		}
		if dryRun {
			if !statusOnly {
				s.updateDone(ctx, k, cur, next, false)
			}
			return next, nil
		}
		if done, out, err := s.maybeFinalize(ctx, k, next, have); done {
			return out, err
		}
		out, err := s.store.Update(ctx, k, next, have)
		if !statusOnly {
			s.updateDone(ctx, k, cur, next, err == nil)
		}
		if apierrors.IsConflict(err) && want == 0 && attempt < 50 {
			continue
		}
		return out, err
	}
}

// mergeUpdate builds the object to store from the stored one and a user's
// update: server-owned metadata and status are kept, generation bumps when
// spec changes.
func (s *Server) mergeUpdate(k *kinds.Kind, cur, in v1.Object) (v1.Object, error) {
	next := proto.Clone(in).(v1.Object)
	cm, nm := cur.GetMetadata(), v1.Meta(next)
	nm.Namespace = cm.Namespace
	nm.Uid = cm.Uid
	nm.CreationTimestamp = cm.CreationTimestamp
	nm.DeletionTimestamp = cm.DeletionTimestamp
	nm.DeletionGracePeriodSeconds = cm.DeletionGracePeriodSeconds
	nm.Generation = cm.Generation
	nm.GenerateName = cm.GenerateName
	nm.ResourceVersion = cm.ResourceVersion
	if len(nm.ManagedFields) == 0 {
		// An update that leaves managedFields out keeps them (Kubernetes).
		nm.ManagedFields = cm.ManagedFields
	}
	if cm.DeletionTimestamp != nil {
		// While deleting, finalizers may only be removed.
		have := map[string]bool{}
		for _, f := range cm.Finalizers {
			have[f] = true
		}
		for _, f := range nm.Finalizers {
			if !have[f] {
				return nil, apierrors.Invalid("metadata.finalizers", "%q cannot be added while the object is being deleted", f)
			}
		}
	}
	if k.HasStatus() {
		copyField(next, cur, "status")
	}
	k.Default(next)
	if fd := v1.Field(next, "spec"); fd != nil {
		if !proto.Equal(next.ProtoReflect().Get(fd).Message().Interface(), cur.ProtoReflect().Get(fd).Message().Interface()) {
			nm.Generation = cm.Generation + 1
		}
	}
	return next, nil
}

// copyField sets dst's top-level field name to src's.
func copyField(dst, src proto.Message, name string) {
	fd := v1.Field(dst, name)
	if fd == nil {
		return
	}
	sm := src.ProtoReflect()
	if sm.Has(fd) {
		dst.ProtoReflect().Set(fd, sm.Get(fd))
	} else {
		dst.ProtoReflect().Clear(fd)
	}
}

// Bind implements Objects.Bind: set spec.nodeName of an unbound pod.
func (s *Server) Bind(ctx context.Context, req *v1.BindRequest) (*anypb.Any, error) {
	podKind, _ := kinds.Lookup("Pod")
	if err := validation.NodeName("nodeName", req.NodeName); err != nil {
		return nil, err
	}
	ns := namespaceOf(podKind, req.Namespace)
	if err := s.authorize(ctx, "create", podKind, "binding", ns, req.Name, ""); err != nil {
		return nil, err
	}
	b := storage.Binding{Node: req.NodeName, Binder: req.Binder, ObservedRevision: req.ObservedRevision}
	out, err := s.store.UpdateBinding(ctx, podKind, ns, req.Name, b, func(cur v1.Object) (v1.Object, error) {
		pod := cur.(*v1.Pod)
		if req.ResourceVersion != 0 && req.ResourceVersion != pod.Metadata.ResourceVersion {
			return nil, apierrors.Conflict(podKind.GroupResource(), req.Name)
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.New(apierrors.ErrConflict, "Operation cannot be fulfilled on pods/binding %q: pod %s is already assigned to node %q", req.Name, req.Name, pod.Spec.NodeName)
		}
		if pod.Metadata.DeletionTimestamp != nil {
			return nil, apierrors.New(apierrors.ErrConflict, "pod %s/%s is being deleted", ns, req.Name)
		}
		pod.Spec.NodeName = req.NodeName
		if pod.Status == nil {
			pod.Status = &v1.PodStatus{Phase: "Pending"}
		}
		SetCondition(&pod.Status.Conditions, &v1.Condition{Type: "PodScheduled", Status: "True"})
		return pod, nil
	})
	if err != nil {
		return nil, err
	}
	return pack(out)
}

// SetCondition replaces or appends a condition, keeping the transition time
// when the status did not change.
func SetCondition(list *[]*v1.Condition, c *v1.Condition) {
	now := timestamppb.New(time.Now())
	for i, old := range *list {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			} else {
				c.LastTransitionTime = now
			}
			(*list)[i] = c
			return
		}
	}
	c.LastTransitionTime = now
	*list = append(*list, c)
}
