package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/warning"
)

// Subresources created with a body of their own (kinds.Subresource):
// Objects.Create with CreateRequest.subresource, authorized as create on
// <resource>/<subresource>. The one served is serviceaccounts/token, as
// kube-apiserver serves it (pkg/registry/core/serviceaccount/storage
// token.go): the TokenRequest is defaulted (audiences: the apiserver's,
// expirationSeconds: 3600) and validated, capped at
// --service-account-max-token-expiration with a warning, its bound object
// looked up (a Pod, Secret or Node; with its uid if the request names
// one), and answered with status.token, a JWT signed by the apiserver's
// service-account key (auth.ServiceAccountTokens). Nothing is stored.
// A node (system:node:NAME) may ask only for a token bound to a pod that is
// bound to it and runs as that account (Kubernetes' NodeRestriction).

// tokenRequestKind is how errors name a TokenRequest (Kubernetes'
// GroupKind string).
const tokenRequestKind = "TokenRequest.authentication.k8s.io"

// createSubresource serves Create with a subresource.
func (s *Server) createSubresource(ctx context.Context, req *v1.CreateRequest) (*anypb.Any, error) {
	parent, err := lookupKind(req.Kind)
	if err != nil {
		return nil, err
	}
	sub, ok := kinds.CreateSubresource(parent, req.Subresource)
	if !ok {
		return nil, apierrors.New(apierrors.ErrNotFound, "%s have no %s subresource that is created", parent.Plural, req.Subresource)
	}
	if req.Name == "" {
		return nil, apierrors.Invalid("name", "required: the %s the %s is for", strings.ToLower(parent.Name), sub.Kind)
	}
	body := sub.New()
	if req.Object == nil {
		req.Object, _ = anypb.New(body)
	}
	if !req.Object.MessageIs(body) {
		return nil, apierrors.Invalid("object", "the %s/%s subresource takes a %s (%s), not %s", parent.Plural, sub.Name, sub.Kind, sub.APIVersion, req.Object.TypeUrl)
	}
	if err := req.Object.UnmarshalTo(body); err != nil {
		return nil, apierrors.Invalid("object", "cannot decode %s: %v", req.Object.TypeUrl, err)
	}
	ns := namespaceOf(parent, req.Namespace)
	if err := s.authorize(ctx, "create", parent, sub.Name, ns, req.Name, ""); err != nil {
		return nil, err
	}
	var out v1.Object
	switch parent.Name + "/" + sub.Name {
	case "ServiceAccount/token":
		out, err = s.createToken(ctx, sub, ns, req.Name, body.(*v1.TokenRequest), req.DryRun)
	default:
		err = apierrors.New(apierrors.ErrNotFound, "%s/%s is not served", parent.Plural, sub.Name)
	}
	if err != nil {
		return nil, err
	}
	return anypb.New(out)
}

// createToken makes a token of service account ns/name.
func (s *Server) createToken(ctx context.Context, sub *kinds.Subresource, ns, name string, tr *v1.TokenRequest, dryRun bool) (*v1.TokenRequest, error) {
	if s.saTokens == nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "this apiserver makes no service account tokens: it has no service-account key (--service-account-signing-key-file, or --pki-dir)")
	}
	m := tr.GetMetadata()
	if m.GetName() != "" && m.GetName() != name {
		return nil, apierrors.FieldErrors{{Path: "metadata.name", Msg: fmt.Sprintf("Invalid value: %q: must match the service account name if specified", m.GetName())}}.Err(tokenRequestKind, name)
	}
	if m.GetNamespace() != "" && m.GetNamespace() != ns {
		return nil, apierrors.FieldErrors{{Path: "metadata.namespace", Msg: fmt.Sprintf("Invalid value: %q: must match the service account namespace if specified", m.GetNamespace())}}.Err(tokenRequestKind, name)
	}
	tr = proto.Clone(tr).(*v1.TokenRequest)
	sub.Default(tr)
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = s.saTokens.Audiences()
	}
	if err := sub.Validate(tr).Err(tokenRequestKind, name); err != nil {
		return nil, err
	}
	saKind, _ := kinds.Lookup("ServiceAccount")
	o, err := s.store.Get(ctx, saKind, ns, name)
	if err != nil {
		return nil, err
	}
	sa := o.(*v1.ServiceAccount)
	claims := auth.TokenClaims{Namespace: ns, ServiceAccount: auth.Ref{Name: name, UID: sa.GetMetadata().GetUid()}, Audiences: tr.Spec.Audiences}
	if err := s.bindToken(ctx, ns, name, tr.Spec.BoundObjectRef, &claims); err != nil {
		return nil, err
	}
	if err := s.nodeMayRequestToken(ctx, ns, name, tr.Spec.BoundObjectRef); err != nil {
		return nil, err
	}
	if max := s.cfg.ServiceAccounts.MaxTokenExpiration; max > 0 && *tr.Spec.ExpirationSeconds > int64(max/time.Second) {
		warning.Add(ctx, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *tr.Spec.ExpirationSeconds, int64(max/time.Second)))
		tr.Spec.ExpirationSeconds = proto.Int64(int64(max / time.Second))
	}
	now := time.Now()
	if s.cfg.ServiceAccounts.Now != nil {
		now = s.cfg.ServiceAccounts.Now()
	}
	out := &v1.TokenRequest{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: ns},
		Spec:     tr.Spec,
		Status:   &v1.TokenRequestStatus{},
	}
	if dryRun {
		out.Status.ExpirationTimestamp = timestamppb.New(now.Truncate(time.Second).Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return out, nil
	}
	tok, exp, err := s.saTokens.Issue(claims, now, time.Duration(*tr.Spec.ExpirationSeconds)*time.Second)
	if err != nil {
		return nil, err
	}
	out.Status.Token, out.Status.ExpirationTimestamp = tok, timestamppb.New(exp)
	s.log.Info("service account token issued", "serviceAccount", ns+"/"+name, "audiences", tr.Spec.Audiences,
		"expirationSeconds", *tr.Spec.ExpirationSeconds, "boundTo", boundString(tr.Spec.BoundObjectRef), "by", userName(ctx))
	return out, nil
}

func boundString(ref *v1.BoundObjectReference) string {
	if ref == nil {
		return ""
	}
	return ref.Kind + "/" + ref.Name
}

func userName(ctx context.Context) string {
	if u := auth.UserFrom(ctx); u != nil {
		return u.Name
	}
	return ""
}

// bindToken looks up the bound object and puts it (and, for a pod, its
// node) into the claims, with Kubernetes' refusals.
func (s *Server) bindToken(ctx context.Context, ns, name string, ref *v1.BoundObjectReference, c *auth.TokenClaims) error {
	if ref == nil {
		return nil
	}
	if ref.ApiVersion != "" && ref.ApiVersion != "v1" || ref.Kind != "Pod" && ref.Kind != "Secret" && ref.Kind != "Node" {
		group, version, ok := strings.Cut(ref.ApiVersion, "/")
		if !ok {
			group, version = "", ref.ApiVersion
		}
		return apierrors.New(apierrors.ErrBadRequest, "cannot bind token to object of type %s/%s, Kind=%s", group, version, ref.Kind)
	}
	k, _ := kinds.Lookup(ref.Kind)
	objNS := ns
	if !k.Namespaced {
		objNS = ""
	}
	o, err := s.store.Get(ctx, k, objNS, ref.Name)
	if err != nil {
		return err
	}
	uid := o.GetMetadata().GetUid()
	if ref.Uid != "" && ref.Uid != uid {
		return apierrors.New(apierrors.ErrConflict, "Operation cannot be fulfilled on %s %q: the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated",
			tokenRequestKind, ref.Name, ref.Uid)
	}
	r := &auth.Ref{Name: ref.Name, UID: uid}
	switch ref.Kind {
	case "Pod":
		pod := o.(*v1.Pod)
		if sa := pod.GetSpec().GetServiceAccountName(); sa != name {
			return apierrors.New(apierrors.ErrBadRequest, "cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name)
		}
		c.Pod = r
		if n := pod.GetSpec().GetNodeName(); n != "" {
			nodeKind, _ := kinds.Lookup("Node")
			if node, err := s.store.Get(ctx, nodeKind, "", n); err == nil {
				c.Node = &auth.Ref{Name: n, UID: node.GetMetadata().GetUid()}
			} else if !apierrors.IsNotFound(err) {
				return err
			}
		}
	case "Secret":
		c.Secret = r
	case "Node":
		c.Node = r
	}
	return nil
}

// nodeMayRequestToken is Kubernetes' NodeRestriction for
// serviceaccounts/token: a node's token request must be bound to a pod
// (with its uid) that is bound to that node. (bindToken has checked that
// the pod runs as the account and has that uid.)
func (s *Server) nodeMayRequestToken(ctx context.Context, ns, name string, ref *v1.BoundObjectReference) error {
	node, isNode := auth.UserFrom(ctx).NodeName()
	if !isNode {
		return nil
	}
	forbidden := func(why string) error {
		return apierrors.New(apierrors.ErrForbidden, "serviceaccounts %q is forbidden: %s", name, why)
	}
	switch {
	case ref == nil:
		return forbidden("node requested token not bound to a pod")
	case ref.Kind != "Pod":
		return forbidden(fmt.Sprintf("node requested token bound to a %s, not a pod", ref.Kind))
	case ref.Uid == "":
		return forbidden("node requested token with a pod binding without a uid")
	}
	podKind, _ := kinds.Lookup("Pod")
	o, err := s.store.Get(ctx, podKind, ns, ref.Name)
	if err != nil {
		return err
	}
	if o.(*v1.Pod).GetSpec().GetNodeName() != node {
		return forbidden("node requested token bound to a pod scheduled on a different node")
	}
	return nil
}
