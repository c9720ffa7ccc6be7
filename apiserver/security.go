package apiserver

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/fields"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/storage"
	"github.com/tugboat/tugboat/apiserver/warning"
	"github.com/tugboat/tugboat/apiserver/watchcache"
)

// AuthConfig turns authentication and authorization on. Without it the
// apiserver trusts every caller: a loopback development setup only.
type AuthConfig struct {
	// TokenFile is the static bearer tokens file (CSV token,user,uid,"groups").
	TokenFile string
	// SigningCA signs node certificates for JoinNode and RenewCertificate.
	SigningCA *pki.CA
	// AuditLogPath, if set, gets one JSON line per mutating request.
	AuditLogPath string
}

// publicMethods need no credentials.
func publicMethod(full string) bool {
	return strings.HasPrefix(full, "/grpc.health.v1.") ||
		strings.HasPrefix(full, "/grpc.reflection.") ||
		full == "/tugboat.api.v1.Auth/JoinNode"
}

func (s *Server) authenticate(ctx context.Context, method string) (context.Context, error) {
	if s.authn == nil || publicMethod(method) {
		return ctx, nil
	}
	u, err := s.authn.Authenticate(ctx)
	if err != nil {
		s.metrics.authFailures.WithLabelValues("authentication").Inc()
		return nil, err
	}
	if u.Method == "anonymous" {
		s.metrics.authFailures.WithLabelValues("authentication").Inc()
		return nil, apierrors.New(apierrors.ErrUnauthenticated,
			"no credentials: present a client certificate signed by the cluster CA or a bearer token")
	}
	return auth.WithUser(ctx, u), nil
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	actx, err := s.authenticate(ctx, info.FullMethod)
	if err != nil {
		s.auditUnauthenticated(ctx, info.FullMethod, req, err)
		return nil, err
	}
	actx, rec := warning.NewContext(actx)
	resp, err := handler(actx, req)
	if w := rec.Warnings(); len(w) > 0 {
		md := metadata.MD{}
		md.Append(warning.MetadataKey, w...)
		_ = grpc.SetHeader(ctx, md)
	}
	s.auditRequest(actx, info.FullMethod, req, err)
	return resp, err
}

type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a authedStream) Context() context.Context { return a.ctx }

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := s.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		s.auditUnauthenticated(ss.Context(), info.FullMethod, nil, err)
		return err
	}
	return handler(srv, authedStream{ServerStream: ss, ctx: ctx})
}

// apiGroup is the group part of an apiVersion ("apps/v1" -> "apps").
func apiGroup(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// authorize checks the caller may do verb on kind k (with subresource sub)
// in ns/name. fieldSelector is a list or watch's, for the node authorizer.
func (s *Server) authorize(ctx context.Context, verb string, k *kinds.Kind, sub, ns, name, fieldSelector string) error {
	// Every handler names its object here first: names longer than any
	// object can have are refused before they reach a message or etcd.
	if err := validation.NameLengths(ns, name); err != nil {
		return err
	}
	u := auth.UserFrom(ctx)
	if u == nil {
		return nil // authentication is off
	}
	a := auth.Attributes{User: u, Verb: verb, APIGroup: apiGroup(k.APIVersion), Resource: k.Plural, Subresource: sub, Namespace: ns, Name: name}
	var ok bool
	var why string
	if node, isNode := u.NodeName(); isNode {
		fieldNode := ""
		if fs, err := fields.Parse(fieldSelector); err == nil {
			fieldNode, _ = fs.Get("spec.nodeName")
		}
		ok, why = auth.AuthorizeNode(ctx, node, a, fieldNode, nodeFacts{s})
	} else {
		// RBAC refuses without a reason, as Kubernetes' does.
		ok, _ = s.rbac.Authorize(a)
		if !ok && u.Name == auth.UserKubeProxy && a.Resource == "secrets" {
			fieldName := ""
			if fs, err := fields.Parse(fieldSelector); err == nil {
				fieldName, _ = fs.Get("metadata.name")
			}
			ok, why = auth.AuthorizeProxySecret(ctx, a, fieldName, proxyFacts{s})
		}
	}
	if !ok {
		s.metrics.authFailures.WithLabelValues("authorization").Inc()
		return apierrors.New(apierrors.ErrForbidden, "%s", a.Denied(why))
	}
	return nil
}

// proxyFacts answers the proxy authorizer from storage.
type proxyFacts struct{ s *Server }

func (f proxyFacts) IngressSecret(ctx context.Context, ns, name string) (bool, error) {
	ingKind, _ := kinds.Lookup("Ingress")
	res, err := f.s.store.List(ctx, ingKind, storage.ListOptions{Namespace: ns, Filter: func(o v1.Object) bool {
		for _, t := range o.(*v1.Ingress).GetSpec().GetTls() {
			if t.GetSecretName() == name {
				return true
			}
		}
		return false
	}})
	if err != nil {
		return false, err
	}
	return len(res.Items) > 0, nil
}

// nodeFacts answers the node authorizer from storage.
type nodeFacts struct{ s *Server }

func (f nodeFacts) PodNode(ctx context.Context, ns, name string) (string, error) {
	podKind, _ := kinds.Lookup("Pod")
	obj, err := f.s.store.Get(ctx, podKind, ns, name)
	if err != nil {
		return "", err
	}
	return obj.(*v1.Pod).GetSpec().GetNodeName(), nil
}

func (f nodeFacts) Referenced(ctx context.Context, node, kind, ns, name string) (bool, error) {
	if kind == "persistentvolumes" {
		pvKind, _ := kinds.Lookup("PersistentVolume")
		o, err := f.s.store.Get(ctx, pvKind, "", name)
		if err != nil {
			return false, err
		}
		ref := o.(*v1.PersistentVolume).GetSpec().GetClaimRef()
		if ref == nil {
			return false, nil
		}
		return f.Referenced(ctx, node, "persistentvolumeclaims", ref.GetNamespace(), ref.GetName())
	}
	if f.s.pods != nil && f.s.pods.referenced(node, kind, ns, name) {
		return true, nil
	}
	// Not (yet) in the graph: storage decides (podGraph says why).
	podKind, _ := kinds.Lookup("Pod")
	res, err := f.s.store.List(ctx, podKind, storage.ListOptions{Namespace: ns, Filter: func(o v1.Object) bool {
		return o.(*v1.Pod).GetSpec().GetNodeName() == node
	}})
	if err != nil {
		return false, err
	}
	for _, o := range res.Items {
		if podReferences(o.(*v1.Pod), kind, name) {
			return true, nil
		}
	}
	return false, nil
}

// podReferences reports whether a pod uses ConfigMap or Secret name
// (volumes, projected volumes' sources, the env and envFrom of its init,
// app and ephemeral containers, as Kubernetes' node graph follows
// VisitPodSecretNames and VisitPodConfigmapNames; a Secret also as an
// image pull secret), or claim name.
func podReferences(p *v1.Pod, kind, name string) bool {
	if kind == "serviceaccounts" {
		return p.GetSpec().GetServiceAccountName() == name
	}
	if kind == "persistentvolumeclaims" {
		for _, v := range p.GetSpec().GetVolumes() {
			if v.GetPersistentVolumeClaim().GetClaimName() == name && v.PersistentVolumeClaim != nil {
				return true
			}
		}
		return false
	}
	cm := kind == "configmaps"
	if !cm {
		for _, r := range p.GetSpec().GetImagePullSecrets() {
			if r.GetName() == name {
				return true
			}
		}
	}
	for _, v := range p.GetSpec().GetVolumes() {
		if cm && v.ConfigMap != nil && v.ConfigMap.Name == name || !cm && v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		for _, src := range v.GetProjected().GetSources() {
			if cm && src.ConfigMap != nil && src.ConfigMap.Name == name || !cm && src.Secret != nil && src.Secret.Name == name {
				return true
			}
		}
	}
	for _, c := range p.GetSpec().GetInitContainers() {
		if envReferences(c.Env, c.EnvFrom, cm, name) {
			return true
		}
	}
	for _, c := range p.GetSpec().GetContainers() {
		if envReferences(c.Env, c.EnvFrom, cm, name) {
			return true
		}
	}
	for _, c := range p.GetSpec().GetEphemeralContainers() {
		if envReferences(c.Env, c.EnvFrom, cm, name) {
			return true
		}
	}
	return false
}

// envReferences reports whether a container's env (valueFrom) or envFrom
// names ConfigMap (cm) or Secret name.
func envReferences(env []*v1.EnvVar, envFrom []*v1.EnvFromSource, cm bool, name string) bool {
	for _, e := range env {
		vf := e.GetValueFrom()
		if cm && vf.GetConfigMapKeyRef() != nil && vf.GetConfigMapKeyRef().GetName() == name ||
			!cm && vf.GetSecretKeyRef() != nil && vf.GetSecretKeyRef().GetName() == name {
			return true
		}
	}
	for _, ef := range envFrom {
		if cm && ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == name || !cm && ef.SecretRef != nil && ef.SecretRef.Name == name {
			return true
		}
	}
	return false
}

// followRBAC loads the Roles, ClusterRoles and their bindings from storage
// and keeps s.rbac current from their watch caches until ctx ends. The
// first List's error is returned (the apiserver does not start without its
// policy); after that, a watch that cannot start or that ends is followed
// by a new list that replaces what the kind held, and a watch from its
// revision, as client-go's reflector re-lists. A watch may not start at
// once: with several etcd members the list may read a revision the watch
// cache, fed by another member, has not reached yet (the full run of make
// test once stopped an apiserver of the three-server install at start on
// "too large resource version: 23, current: 22 (of rolebindings)").
func (s *Server) followRBAC(ctx context.Context) error {
	for _, name := range []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"} {
		k, _ := kinds.Lookup(name)
		res, err := s.store.List(ctx, k, storage.ListOptions{})
		if err != nil {
			return err
		}
		s.rbac.Replace(name, res.Items)
		go s.watchRBAC(ctx, k, name, res.Revision)
	}
	return nil
}

// watchRBAC applies the kind's changes after revision rev to s.rbac,
// listing again whenever its watch cannot start or ends, until ctx ends.
func (s *Server) watchRBAC(ctx context.Context, k *kinds.Kind, name string, rev int64) {
	for {
		w, err := s.caches[k].Watch(ctx, rev)
		if err == nil {
			for {
				var e *watchcache.Event
				if e, err = w.Next(ctx); err != nil {
					break
				}
				if e.Obj != nil {
					s.rbac.Apply(e.Obj, e.Type == "DELETED")
				}
			}
			w.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("RBAC watch ended; listing again", "kind", name, "err", err)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			res, err := s.store.List(ctx, k, storage.ListOptions{})
			if err == nil {
				s.rbac.Replace(name, res.Items)
				rev = res.Revision
				break
			}
			s.log.Warn("listing RBAC objects again", "kind", name, "err", err)
		}
	}
}

// bootstrapPolicy creates the default roles and bindings that are missing,
// and puts the default ClusterRoles' rules back as this version defines
// them (a fix to a default role reaches existing clusters), as Kubernetes'
// auto-reconciliation does, unless the role is annotated
// rbac.authorization.kubernetes.io/autoupdate: "false".
func (s *Server) bootstrapPolicy(ctx context.Context) error {
	for _, obj := range auth.DefaultPolicy() {
		_, err := s.create(ctx, obj, false)
		if isAlreadyExists(err) {
			if cr, ok := obj.(*v1.ClusterRole); ok {
				err = s.reconcileClusterRole(ctx, cr)
			} else {
				err = nil
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) reconcileClusterRole(ctx context.Context, want *v1.ClusterRole) error {
	k, _ := kinds.Lookup("ClusterRole")
	obj, err := s.store.Get(ctx, k, "", want.Metadata.Name)
	if err != nil {
		return err
	}
	have := obj.(*v1.ClusterRole)
	if have.GetMetadata().GetAnnotations()["rbac.authorization.kubernetes.io/autoupdate"] == "false" ||
		slices.EqualFunc(have.Rules, want.Rules, func(a, b *v1.PolicyRule) bool { return proto.Equal(a, b) }) {
		return nil
	}
	next := proto.Clone(have).(*v1.ClusterRole)
	next.Rules = want.Rules
	if _, err := s.update(ctx, k, next, false, false); err != nil {
		return err
	}
	s.log.Info("default ClusterRole reconciled to this version's rules", "clusterrole", want.Metadata.Name)
	return nil
}
