package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/api/tokens"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// setupAuth builds the authenticator, RBAC store and audit log when
// Config.Auth is set.
func (s *Server) setupAuth() error {
	if s.cfg.Auth == nil {
		return nil
	}
	secretKind, _ := kinds.Lookup("Secret")
	getSecret := func(ctx context.Context, ns, name string) (*v1.Secret, error) {
		o, err := s.store.Get(ctx, secretKind, ns, name)
		if err != nil {
			return nil, err
		}
		return o.(*v1.Secret), nil
	}
	a, err := auth.NewAuthenticator(s.cfg.Auth.TokenFile, getSecret)
	if err != nil {
		return err
	}
	s.revoked = &revocations{m: map[string]storage.CertRecord{}}
	a.Revoked = s.revoked.lookup
	s.authn = a
	s.rbac = auth.NewRBAC()
	if p := s.cfg.Auth.AuditLogPath; p != "" {
		al, err := openAudit(p)
		if err != nil {
			return err
		}
		s.audit = al
	}
	return nil
}

// authorizeTunnel lets a kubelet open only its own node's tunnel.
func (s *Server) authorizeTunnel(ctx context.Context, node string) error {
	if err := validation.NodeName("nodeName", node); err != nil {
		return err
	}
	nodeKind, _ := kinds.Lookup("Node")
	return s.authorize(ctx, "update", nodeKind, "tunnel", "", node, "")
}

type authService struct {
	v1.UnimplementedAuthServer
	s *Server
}

func (a *authService) WhoAmI(ctx context.Context, _ *v1.WhoAmIRequest) (*v1.UserInfo, error) {
	u := auth.UserFrom(ctx)
	if u == nil {
		return &v1.UserInfo{Name: "system:admin", Groups: []string{auth.GroupMasters}, Method: "insecure"}, nil
	}
	info := &v1.UserInfo{Name: u.Name, Groups: u.Groups, Method: u.Method, Uid: u.UID}
	for k, vs := range u.Extra {
		if info.Extra == nil {
			info.Extra = map[string]*v1.ExtraValue{}
		}
		info.Extra[k] = &v1.ExtraValue{Values: vs}
	}
	return info, nil
}

func (a *authService) Review(ctx context.Context, req *v1.AccessReviewRequest) (*v1.AccessReviewResponse, error) {
	if req.Verb == "" || req.Resource == "" {
		return nil, apierrors.Invalid("verb/resource", "both are required")
	}
	resource, sub, _ := strings.Cut(req.Resource, "/")
	k, err := kinds.Lookup(resource)
	_, virtual := virtualResources[resource]
	if err != nil && !virtual {
		return nil, err
	}
	caller := auth.UserFrom(ctx)
	if caller == nil {
		return &v1.AccessReviewResponse{Allowed: true, Reason: "authorization is off (insecure development mode)"}, nil
	}
	subject := caller
	if req.AsUser != "" {
		if !caller.InGroup(auth.GroupMasters) {
			return nil, apierrors.New(apierrors.ErrForbidden, "user %q cannot impersonate %q: only members of %s may ask about other users", caller.Name, req.AsUser, auth.GroupMasters)
		}
		subject = &auth.User{Name: req.AsUser, Groups: append(append([]string(nil), req.AsGroups...), auth.GroupAuthenticated)}
	}
	if virtual && k == nil {
		if err := a.s.authorizeVirtual(auth.WithUser(ctx, subject), req.Verb, resource, req.Name, ""); err != nil {
			return &v1.AccessReviewResponse{Allowed: false, Reason: err.Error()}, nil
		}
		return &v1.AccessReviewResponse{Allowed: true}, nil
	}
	ns := namespaceOf(k, req.Namespace)
	if k.Name == "ClusterRole" && (req.Verb == "bind" || req.Verb == "escalate") {
		// Binding a ClusterRole with a RoleBinding is decided in the
		// binding's namespace.
		ns = req.Namespace
	}
	err = a.s.authorize(auth.WithUser(ctx, subject), req.Verb, k, sub, ns, req.Name, "")
	if err != nil {
		if ok, why := a.s.bindAllowed(ctx, subject, req.Verb, k, sub, ns, req.Name); ok {
			return &v1.AccessReviewResponse{Allowed: true, Reason: why}, nil
		}
		return &v1.AccessReviewResponse{Allowed: false, Reason: err.Error()}, nil
	}
	return &v1.AccessReviewResponse{Allowed: true, Reason: a.s.escalationNote(subject, req.Verb, k, sub, ns)}, nil
}

// JoinNode spends a join token once for a node certificate. A name
// another machine holds — a Lease renewed within its duration, or an
// unexpired certificate the apiserver issued — is refused unless the token
// was made to replace that node (tugctl token create --replace NODE); a
// replacement revokes the old certificates and closes the old tunnel.
func (a *authService) JoinNode(ctx context.Context, req *v1.JoinNodeRequest) (*v1.CertificateResponse, error) {
	ca := a.signer()
	if ca == nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "this apiserver cannot sign certificates: start it with --cluster-signing-cert-file/--cluster-signing-key-file")
	}
	id, secret, ok := auth.SplitToken(req.Token)
	if !ok {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token is malformed: want <6 chars>.<16 chars> as printed by tugctl token create")
	}
	if err := validation.NodeName("nodeName", req.NodeName); err != nil {
		return nil, err
	}
	secretKind, _ := kinds.Lookup("Secret")
	obj, err := a.s.store.Get(ctx, secretKind, tokens.Namespace, tokens.JoinPrefix+id)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token %s is unknown or was already used", id)
	}
	if err != nil {
		return nil, err
	}
	sec := obj.(*v1.Secret)
	if sec.Type != tokens.BootstrapTokenType || !auth.SecretMatches(sec, secret) {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token %s is not valid", id)
	}
	if exp, expired := auth.Expired(sec, time.Now()); expired {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token %s expired at %s: create a new one with tugctl token create", id, exp)
	}
	replace := string(sec.Data[tokens.DataReplaceNode])
	if replace != "" && replace != req.NodeName {
		return nil, apierrors.New(apierrors.ErrForbidden, "join token %s was made to replace node %q, not to join %q", id, replace, req.NodeName)
	}
	if replace == "" {
		if err := a.s.nameFree(ctx, req.NodeName); err != nil {
			return nil, err
		}
	}
	cert, err := a.sign(req.Csr, auth.NodePrefix+req.NodeName, []string{auth.GroupNodes}, pki.NodeCertValidity)
	if err != nil {
		return nil, err
	}
	// Spend the token: a compare-and-swap delete, so two joins cannot both win.
	if _, err := a.s.store.Delete(ctx, secretKind, sec, sec.Metadata.ResourceVersion); err != nil {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token %s was used concurrently", id)
	}
	if replace != "" {
		old, err := a.s.revokeNode(ctx, replace, "join token "+id, "node replaced by join token "+id)
		if err != nil {
			return nil, err
		}
		a.s.tunnels.Disconnect(replace, "the node was replaced by join token "+id)
		a.s.log.Warn("node replaced by a join token: its certificates are revoked", "node", replace, "token", id, "revoked", len(old))
	}
	if err := a.s.recordIssued(ctx, req.NodeName, cert); err != nil {
		return nil, err
	}
	return &v1.CertificateResponse{Certificate: cert, Ca: ca.PEM}, nil
}

// nameFree refuses a node name another machine holds: a Lease renewed
// within its duration, or an unexpired, unrevoked certificate the
// apiserver issued for it.
func (s *Server) nameFree(ctx context.Context, node string) error {
	replace := fmt.Sprintf("if that machine is gone for good, create a join token that replaces it: tugctl token create --replace %s", node)
	leaseKind, _ := kinds.Lookup("Lease")
	obj, err := s.store.Get(ctx, leaseKind, "kube-node-lease", node)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err == nil {
		l := obj.(*v1.Lease).GetSpec()
		if rt := l.GetRenewTime(); rt != nil {
			d := time.Duration(max(l.GetLeaseDurationSeconds(), 40)) * time.Second
			if ago := time.Since(rt.AsTime()); ago < d {
				return apierrors.New(apierrors.ErrAlreadyExists, "node %q is held by a running node: its Lease was renewed %s ago; a join may not take its name (%s)", node, ago.Round(time.Second), replace)
			}
		}
	}
	rec, err := s.liveCertificate(ctx, node)
	if err != nil {
		return err
	}
	if rec != nil {
		return apierrors.New(apierrors.ErrAlreadyExists, "node %q holds a live certificate (serial %s, valid until %s); a join may not take its name (%s)", node, rec.Serial, rec.NotAfter.UTC().Format(time.RFC3339), replace)
	}
	return nil
}

// RenewCertificate signs a new certificate for the caller's own node, with
// the same name: only node certificates are renewed through the API
// (users get theirs from whoever holds the CA), and only while the Node
// exists (a deleted node joins again).
func (a *authService) RenewCertificate(ctx context.Context, req *v1.RenewCertificateRequest) (*v1.CertificateResponse, error) {
	ca := a.signer()
	if ca == nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "this apiserver cannot sign certificates")
	}
	u := auth.UserFrom(ctx)
	if u == nil || u.Method != "certificate" {
		return nil, apierrors.New(apierrors.ErrForbidden, "only callers with a client certificate may renew it")
	}
	node, err := auth.RenewableNode(u)
	if err != nil {
		return nil, err
	}
	nodeKind, _ := kinds.Lookup("Node")
	if _, err := a.s.store.Get(ctx, nodeKind, "", node); apierrors.IsNotFound(err) {
		return nil, apierrors.New(apierrors.ErrForbidden, "node %q does not exist: a node certificate is renewed only while its Node exists (join again with a new token)", node)
	} else if err != nil {
		return nil, err
	}
	cert, err := a.sign(req.Csr, u.Name, []string{auth.GroupNodes}, pki.NodeCertValidity)
	if err != nil {
		return nil, err
	}
	if err := a.s.recordIssued(ctx, node, cert); err != nil {
		return nil, err
	}
	return &v1.CertificateResponse{Certificate: cert, Ca: ca.PEM}, nil
}

func (a *authService) signer() *pki.CA {
	if a.s.cfg.Auth == nil {
		return nil
	}
	return a.s.cfg.Auth.SigningCA
}

// sign checks the CSR asks for exactly user and groups, then signs it.
func (a *authService) sign(csrPEM []byte, user string, groups []string, validity time.Duration) ([]byte, error) {
	ca := a.signer()
	cert, csr, err := ca.SignCSR(csrPEM, validity)
	if err != nil {
		return nil, apierrors.Invalid("csr", "%v", err)
	}
	if csr.Subject.CommonName != user || strings.Join(csr.Subject.Organization, ",") != strings.Join(groups, ",") {
		return nil, apierrors.New(apierrors.ErrForbidden, "csr asks for %q in %v; this request may only get %q in %v",
			csr.Subject.CommonName, csr.Subject.Organization, user, groups)
	}
	return cert, nil
}
