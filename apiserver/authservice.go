package apiserver

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/api/tokens"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
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
	return &v1.UserInfo{Name: u.Name, Groups: u.Groups, Method: u.Method}, nil
}

func (a *authService) Review(ctx context.Context, req *v1.AccessReviewRequest) (*v1.AccessReviewResponse, error) {
	if req.Verb == "" || req.Resource == "" {
		return nil, apierrors.Invalid("verb/resource", "both are required")
	}
	resource, sub, _ := strings.Cut(req.Resource, "/")
	k, err := kinds.Lookup(resource)
	if err != nil {
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
	ns := namespaceOf(k, req.Namespace)
	if k.Name == "ClusterRole" && (req.Verb == "bind" || req.Verb == "escalate") {
		// Binding a ClusterRole with a RoleBinding is decided in the
		// binding's namespace.
		ns = req.Namespace
	}
	err = a.s.authorize(auth.WithUser(ctx, subject), req.Verb, k, sub, ns, req.Name, "")
	if err != nil {
		if ok, why := a.s.bindAllowed(subject, req.Verb, k, sub, ns, req.Name); ok {
			return &v1.AccessReviewResponse{Allowed: true, Reason: why}, nil
		}
		return &v1.AccessReviewResponse{Allowed: false, Reason: err.Error()}, nil
	}
	return &v1.AccessReviewResponse{Allowed: true, Reason: a.s.escalationNote(subject, req.Verb, k, sub, ns)}, nil
}

// JoinNode spends a join token once for a node certificate.
func (a *authService) JoinNode(ctx context.Context, req *v1.JoinNodeRequest) (*v1.CertificateResponse, error) {
	ca := a.signer()
	if ca == nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "this apiserver cannot sign certificates: start it with --cluster-signing-cert-file/--cluster-signing-key-file")
	}
	id, secret, ok := auth.SplitToken(req.Token)
	if !ok {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token is malformed: want <6 chars>.<16 chars> as printed by tugctl token create")
	}
	if req.NodeName == "" {
		return nil, apierrors.Invalid("nodeName", "required")
	}
	secretKind, _ := kinds.Lookup("Secret")
	obj, err := a.s.store.Get(ctx, secretKind, tokens.Namespace, "bootstrap-token-"+id)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token %s is unknown or was already used", id)
	}
	if err != nil {
		return nil, err
	}
	sec := obj.(*v1.Secret)
	if sec.Type != tokens.BootstrapTokenType || subtle.ConstantTimeCompare(sec.Data["token-secret"], []byte(secret)) != 1 {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token %s is not valid", id)
	}
	if exp := string(sec.Data["expiration"]); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil || time.Now().After(t) {
			return nil, apierrors.New(apierrors.ErrUnauthenticated, "join token %s expired at %s: create a new one with tugctl token create", id, exp)
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
	return &v1.CertificateResponse{Certificate: cert, Ca: ca.PEM}, nil
}

// RenewCertificate signs a new certificate for the caller's own identity.
func (a *authService) RenewCertificate(ctx context.Context, req *v1.RenewCertificateRequest) (*v1.CertificateResponse, error) {
	ca := a.signer()
	if ca == nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "this apiserver cannot sign certificates")
	}
	u := auth.UserFrom(ctx)
	if u == nil || u.Method != "certificate" {
		return nil, apierrors.New(apierrors.ErrForbidden, "only callers with a client certificate may renew it")
	}
	var groups []string
	for _, g := range u.Groups {
		if g != auth.GroupAuthenticated {
			groups = append(groups, g)
		}
	}
	validity := pki.CertValidity
	if _, isNode := u.NodeName(); isNode {
		validity = pki.NodeCertValidity
	}
	cert, err := a.sign(req.Csr, u.Name, groups, validity)
	if err != nil {
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
