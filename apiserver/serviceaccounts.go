package apiserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// DefaultServiceAccount is the account every namespace has and pods get
// when they name none.
const DefaultServiceAccount = "default"

// serviceAccountAdmission is Kubernetes' ServiceAccount admission for
// pods: a pod without spec.serviceAccountName gets "default", and a pod
// whose account does not exist is refused (its token could not be made).
type serviceAccountAdmission struct{ store *storage.Store }

func (serviceAccountAdmission) Release(context.Context, v1.Object) {}

func (a serviceAccountAdmission) Admit(ctx context.Context, obj, old v1.Object) error {
	pod := obj.(*v1.Pod)
	if old != nil || pod.Spec == nil {
		return nil // the spec, and so the account, is fixed after create
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccount
	}
	saKind, _ := kinds.Lookup("ServiceAccount")
	ns, name := pod.GetMetadata().GetNamespace(), pod.Spec.ServiceAccountName
	if _, err := a.store.Get(ctx, saKind, ns, name); err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.New(apierrors.ErrForbidden, "pods %q is forbidden: error looking up service account %s/%s: serviceaccount %q not found",
				pod.GetMetadata().GetName(), ns, name, name)
		}
		return err
	}
	return nil
}

// ensureDefaultServiceAccount makes the namespace's "default" account if
// it is missing: when a namespace is created, at start for every
// namespace, and when the account is deleted (Kubernetes' service account
// controller does this; here the apiserver does it in the same request, so
// a pod created right after its namespace finds its account). A namespace
// being deleted gets none.
func (s *Server) ensureDefaultServiceAccount(ctx context.Context, ns string) error {
	sa := &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: DefaultServiceAccount, Namespace: ns}}
	if _, err := s.create(ctx, sa, false); err != nil && !isAlreadyExists(err) && !errors.Is(err, apierrors.ErrForbidden) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("creating service account %s/%s: %w", ns, DefaultServiceAccount, err)
	}
	return nil
}

// ensureDefaultServiceAccounts runs ensureDefaultServiceAccount for every
// namespace (at start: namespaces made before accounts existed).
func (s *Server) ensureDefaultServiceAccounts(ctx context.Context) error {
	nsKind, _ := kinds.Lookup("Namespace")
	res, err := s.store.List(ctx, nsKind, storage.ListOptions{})
	if err != nil {
		return err
	}
	for _, o := range res.Items {
		if o.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		if err := s.ensureDefaultServiceAccount(ctx, o.GetMetadata().GetName()); err != nil {
			return err
		}
	}
	return nil
}
