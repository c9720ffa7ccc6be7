package apiserver

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// auditLog appends one JSON line per mutating request: who, verb, object,
// result.
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

type auditEntry struct {
	Time      time.Time `json:"time"`
	User      string    `json:"user"`
	Groups    []string  `json:"groups,omitempty"`
	Verb      string    `json:"verb"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Code      string    `json:"code"`
	Message   string    `json:"message,omitempty"`
}

var mutating = map[string]bool{"Create": true, "Update": true, "Patch": true, "UpdateStatus": true, "Delete": true, "Bind": true, "Evict": true, "JoinNode": true, "RenewCertificate": true}

func (a *auditLog) record(ctx context.Context, method string, req any, err error) {
	verb := method[strings.LastIndex(method, "/")+1:]
	if !mutating[verb] {
		return
	}
	e := auditEntry{Time: time.Now().UTC(), Verb: verb, Kind: requestKind(req), Code: apierrors.Code(err).String()}
	if u := auth.UserFrom(ctx); u != nil {
		e.User, e.Groups = u.Name, u.Groups
	}
	if err != nil {
		e.Message = status.Convert(err).Message()
	}
	switch r := req.(type) {
	case interface{ GetObject() *anypb.Any }:
		if msg, uerr := r.GetObject().UnmarshalNew(); uerr == nil {
			if o, ok := msg.(v1.Object); ok {
				e.Namespace, e.Name = o.GetMetadata().GetNamespace(), o.GetMetadata().GetName()
			}
		}
	case interface {
		GetNamespace() string
		GetName() string
	}:
		e.Namespace, e.Name = r.GetNamespace(), r.GetName()
	}
	line, _ := json.Marshal(e)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.f.Write(append(line, '\n'))
}

func (a *auditLog) Close() error { return a.f.Close() }
