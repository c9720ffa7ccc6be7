package apiserver

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Update entries in metadata.managedFields. Every write through the API
// that is not a server-side apply — Create, Update, UpdateStatus, an
// update of the scale, a merge/JSON/strategic patch — is given to
// Kubernetes' field manager (the same managedfields.FieldManager the apply
// uses, one per kind and subresource) as an Update of its manager: the
// fields the write changed become that manager's, taken from whichever
// manager owned them, and the entry's time moves only when it changed
// something (a no-op write stays a no-op). The manager is the request's
// fieldManager or, as in Kubernetes, the client's user agent up to its
// first "/" (or space: grpc-go appends " grpc-go/1.x"), so kubectl's
// commands are "kubectl-create", "kubectl-edit", "kubectl-label", the
// kubelet is "kubelet". Creates are recorded before admission, as
// Kubernetes does, so fields a mutating admission adds are owned by
// nobody. Writes the apiserver makes itself (bootstrap objects, a
// namespace's default account) are not recorded.
//
// A write whose object the field manager cannot follow (a schema gap) is
// stored with its managedFields as they were, and the failure logged and
// counted in tugboat_apiserver_managed_fields_errors_total: ownership is
// bookkeeping, never a reason to refuse a valid write or to drop what the
// user stored.

// fieldOwner is the manager a write is recorded for and the subresource it
// went through; the zero value records nothing. applied marks a
// server-side apply, whose object already carries the managedFields the
// field manager made of it (kept by a status-only write too).
type fieldOwner struct {
	manager     string
	subresource string
	applied     bool
}

// ownerOf is the fieldOwner of a request with the given fieldManager
// parameter, refused as Kubernetes' ValidateFieldManager refuses it.
func ownerOf(ctx context.Context, fieldManager, subresource string) (fieldOwner, error) {
	if errs := metavalidation.ValidateFieldManager(fieldManager, field.NewPath("fieldManager")); len(errs) > 0 {
		return fieldOwner{}, apierrors.New(apierrors.ErrInvalid, "%s", errs.ToAggregate().Error())
	}
	if fieldManager == "" {
		fieldManager = managerFromUserAgent(ctx)
	}
	if fieldManager == "" {
		fieldManager = "unknown"
	}
	return fieldOwner{manager: fieldManager, subresource: subresource}, nil
}

// managerFromUserAgent is Kubernetes' prefixFromUserAgent: the user agent
// up to the first "/" (here also the first space), printable characters
// only, at most 128 bytes.
func managerFromUserAgent(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	ua := md.Get("user-agent")
	if len(ua) == 0 {
		return ""
	}
	u := ua[0]
	if i := strings.IndexAny(u, "/ "); i >= 0 {
		u = u[:i]
	}
	var b strings.Builder
	for _, r := range u {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metavalidation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// recordUpdate sets next's managedFields to what the field manager makes
// of owner's write from live (nil: a create) to next.
func (s *Server) recordUpdate(k *kinds.Kind, owner fieldOwner, live, next v1.Object) {
	if owner.manager == "" {
		return
	}
	if err := s.recordUpdateErr(k, owner, live, next); err != nil {
		s.metrics.managedFieldsErrors.Inc()
		s.log.Warn("managedFields not updated", "kind", k.Name, "namespace", next.GetMetadata().GetNamespace(),
			"name", next.GetMetadata().GetName(), "manager", owner.manager, "err", err)
	}
}

func (s *Server) recordUpdateErr(k *kinds.Kind, owner fieldOwner, live, next v1.Object) error {
	fm, err := s.applier.forKind(k, owner.subresource)
	if err != nil {
		return err
	}
	nu, err := toUnstructured(next)
	if err != nil {
		return err
	}
	lu := &unstructured.Unstructured{}
	if live != nil {
		if lu, err = toUnstructured(live); err != nil {
			return err
		}
	} else {
		lu.SetGroupVersionKind(nu.GroupVersionKind())
	}
	out, err := fm.Update(lu, nu, owner.manager)
	if err != nil {
		return err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	entries, err := managedFieldsToProto(u.GetManagedFields())
	if err != nil {
		return err
	}
	v1.Meta(next).ManagedFields = entries
	return nil
}

// managedFieldsToProto converts Kubernetes' entries to ObjectMeta's.
func managedFieldsToProto(in []metav1.ManagedFieldsEntry) ([]*v1.ManagedFieldsEntry, error) {
	out := make([]*v1.ManagedFieldsEntry, 0, len(in))
	for _, e := range in {
		pe := &v1.ManagedFieldsEntry{Manager: e.Manager, Operation: string(e.Operation), ApiVersion: e.APIVersion,
			FieldsType: e.FieldsType, Subresource: e.Subresource}
		if e.Time != nil {
			pe.Time = timestamppb.New(e.Time.Time)
		}
		if e.FieldsV1 != nil && len(e.FieldsV1.Raw) > 0 {
			var m map[string]any
			if err := json.Unmarshal(e.FieldsV1.Raw, &m); err != nil {
				return nil, err
			}
			st, err := structpb.NewStruct(m)
			if err != nil {
				return nil, err
			}
			pe.FieldsV1 = st
		}
		out = append(out, pe)
	}
	return out, nil
}
