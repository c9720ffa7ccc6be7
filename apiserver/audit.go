package apiserver

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/warning"
)

// The audit log (--audit-log-path) is one JSON line per event: who (user,
// groups, how it authenticated, from which address), what (verb, kind,
// namespace, name, subresource; the node, the join token's id, an exec's
// command, a port), and the result (code, message). It records:
//
//   - every mutating request (auditRequest), on either door, including
//     those refused before they had a user (authentication failed or
//     absent: user "", code Unauthenticated);
//   - joins and renewals, naming the node and the join token (its id,
//     never its secret);
//   - logs, exec, attach and port-forward sessions and image imports,
//     with the pod and its node: a line when the session starts
//     (stage ResponseStarted) and one with its result (ResponseComplete);
//   - node tunnel connects (accepted or refused) and their end;
//   - refused impersonations (verb impersonate); an allowed one's
//     requests name the impersonated user beside the caller.
//
// Both doors call these functions: the gRPC interceptor and handlers, and
// the Kubernetes HTTP door through kubeBackend and the same NodeAPI relay.

// auditLog appends the lines to a file.
type auditLog struct {
	mu sync.Mutex
	f  *os.File
}

func openAudit(path string) (*auditLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return &auditLog{f: f}, nil
}

func (a *auditLog) Close() error { return a.f.Close() }

// Audit stages, as Kubernetes' audit names them.
const (
	stageStarted  = "ResponseStarted"
	stageComplete = "ResponseComplete"
)

type auditEntry struct {
	Time       time.Time `json:"time"`
	Stage      string    `json:"stage,omitempty"`
	User       string    `json:"user"`
	Groups     []string  `json:"groups,omitempty"`
	AuthMethod string    `json:"authMethod,omitempty"`
	// ImpersonatedUser and ImpersonatedGroups are who User acted as
	// (Kubernetes' impersonatedUser).
	ImpersonatedUser   string   `json:"impersonatedUser,omitempty"`
	ImpersonatedGroups []string `json:"impersonatedGroups,omitempty"`
	Source             string   `json:"source,omitempty"`
	UserAgent          string   `json:"userAgent,omitempty"`
	Verb               string   `json:"verb"`
	Kind               string   `json:"kind,omitempty"`
	Namespace          string   `json:"namespace,omitempty"`
	Name               string   `json:"name,omitempty"`
	Subresource        string   `json:"subresource,omitempty"`
	Node               string   `json:"node,omitempty"`
	Container          string   `json:"container,omitempty"`
	Command            []string `json:"command,omitempty"`
	Port               int32    `json:"port,omitempty"`
	Token              string   `json:"token,omitempty"`
	Code               string   `json:"code,omitempty"`
	Message            string   `json:"message,omitempty"`
	// Annotations are what admission noted (Pod Security's policy and
	// violations), Kubernetes' audit annotations.
	Annotations map[string]string `json:"annotations,omitempty"`
}

var mutating = map[string]bool{"Create": true, "Update": true, "Patch": true, "UpdateStatus": true, "Delete": true,
	"Bind": true, "Evict": true, "JoinNode": true, "RenewCertificate": true, "CreateToken": true, "RevokeCertificate": true}

// streamAudited are the stream methods audited when authentication fails
// (their sessions are audited by the relay and the tunnel).
var streamAudited = map[string]bool{"Exec": true, "Attach": true, "PortForward": true, "ImportImage": true, "Connect": true}

// auditEvent writes e, with the time, the caller and its address from ctx.
func (s *Server) auditEvent(ctx context.Context, e auditEntry) {
	if s.audit == nil {
		return
	}
	e.Time = time.Now().UTC()
	if u := auth.UserFrom(ctx); u != nil {
		if u.Impersonator != nil {
			e.ImpersonatedUser, e.ImpersonatedGroups = u.Name, u.Groups
			u = u.Impersonator
		}
		e.User, e.Groups, e.AuthMethod = u.Name, u.Groups, u.Method
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		e.Source = p.Addr.String()
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if ua := md.Get("user-agent"); len(ua) > 0 {
			e.UserAgent = ua[0]
		}
	}
	line, _ := json.Marshal(e)
	s.audit.mu.Lock()
	defer s.audit.mu.Unlock()
	_, _ = s.audit.f.Write(append(line, '\n'))
}

// withResult sets the entry's code and message from err.
func (e auditEntry) withResult(err error) auditEntry {
	e.Code = apierrors.Code(err).String()
	if err != nil {
		e.Message = status.Convert(apierrors.ToGRPC(err)).Message()
	}
	return e
}

// auditRequest records a unary request (method is the full gRPC name) if
// it mutates: what it names and how it ended.
func (s *Server) auditRequest(ctx context.Context, method string, req any, err error) {
	verb := method[strings.LastIndex(method, "/")+1:]
	if s.audit == nil || !mutating[verb] {
		return
	}
	e := auditEntry{Stage: stageComplete, Verb: verb, Kind: requestKind(req), Annotations: warning.From(ctx).Annotations()}
	switch r := req.(type) {
	case interface{ GetObject() *anypb.Any }:
		if msg, uerr := r.GetObject().UnmarshalNew(); uerr == nil {
			if o, ok := msg.(v1.Object); ok {
				e.Namespace, e.Name = o.GetMetadata().GetNamespace(), o.GetMetadata().GetName()
			}
		}
	case *v1.JoinNodeRequest:
		e.Kind, e.Node = "Node", r.NodeName
		e.Token, _, _ = strings.Cut(r.Token, ".") // the id only, never the secret
	case *v1.RenewCertificateRequest:
		e.Kind = "Node"
		if n, ok := auth.UserFrom(ctx).NodeName(); ok {
			e.Node = n
		}
	case *v1.CreateTokenRequest:
		e.Kind, e.Name, e.Node = "Token", r.User, r.ReplaceNode
	case *v1.RevokeCertificateRequest:
		e.Kind, e.Node = "Certificate", r.NodeName
		e.Name = strings.Join(r.Serials, ",")
	case interface {
		GetNamespace() string
		GetName() string
	}:
		e.Namespace, e.Name = r.GetNamespace(), r.GetName()
		if b, ok := req.(*v1.BindRequest); ok {
			e.Subresource, e.Node = "binding", b.NodeName
		}
	}
	s.auditEvent(ctx, e.withResult(err))
}

// auditUnauthenticated records a request refused because it had no valid
// credentials, if it would have changed something (method is the gRPC
// name, or on the HTTP door "HTTP <METHOD> <path>").
func (s *Server) auditUnauthenticated(ctx context.Context, method string, req any, err error) {
	if s.audit == nil {
		return
	}
	if http, ok := strings.CutPrefix(method, "HTTP "); ok {
		verb, path, _ := strings.Cut(http, " ")
		switch verb {
		case "POST", "PUT", "PATCH", "DELETE":
			s.auditEvent(ctx, auditEntry{Stage: stageComplete, Verb: verb, Name: path}.withResult(err))
		}
		return
	}
	verb := method[strings.LastIndex(method, "/")+1:]
	switch {
	case mutating[verb]:
		s.auditRequest(ctx, method, req, err)
	case streamAudited[verb]:
		s.auditEvent(ctx, auditEntry{Stage: stageComplete, Verb: verb}.withResult(err))
	}
}
