package apiserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// DefaultServiceAccount is the account every namespace has and pods get
// when they name none.
const DefaultServiceAccount = "default"

const (
	// ServiceAccountTokenMountPath is where every container finds its
	// pod's token, the cluster CA and its namespace (Kubernetes'
	// DefaultAPITokenMountPath).
	ServiceAccountTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// serviceAccountVolumePrefix names the volume admission adds:
	// kube-api-access-<5 random characters>.
	serviceAccountVolumePrefix = "kube-api-access-"
	// serviceAccountTokenExpirationSeconds is the token's requested
	// lifetime: Kubernetes' one hour plus 7 s, the mark its apiserver
	// recognises as "added by admission" (WarnOnlyBoundTokenExpirationSeconds).
	serviceAccountTokenExpirationSeconds = 3607
	// rootCAConfigMap is the ConfigMap the root-ca-cert-publisher
	// controller writes in every namespace (key ca.crt).
	rootCAConfigMap = "kube-root-ca.crt"
	// mirrorPodAnnotation marks a kubelet's mirror of a static pod.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
)

// serviceAccountAdmission is Kubernetes' ServiceAccount admission for
// pods, on create only (the spec is fixed afterwards):
//
//   - a pod without spec.serviceAccountName gets "default";
//   - a pod whose account does not exist is refused (its token could not
//     be made), with Kubernetes' text "error looking up service account
//     ns/name: serviceaccount "name" not found";
//   - unless spec.automountServiceAccountToken, or else the account's
//     automountServiceAccountToken, is false, every container and init
//     container that mounts nothing at
//     /var/run/secrets/kubernetes.io/serviceaccount gets a read-only mount
//     there of a projected volume kube-api-access-xxxxx (added once, or an
//     existing kube-api-access-* volume is reused) holding the token
//     (serviceAccountToken, 3607 s, path token), the cluster CA (ConfigMap
//     kube-root-ca.crt, key ca.crt) and the namespace (downward API),
//     defaultMode 0644 — the kubelet fills it through its token manager;
//   - a mirror pod (annotation kubernetes.io/config.mirror) gets neither
//     an account nor the volume, and may not name an account. Ephemeral
//     containers are never mounted (they come later, through their own
//     subresource, as in Kubernetes);
//   - a pod with no spec.imagePullSecrets gets the account's (whatever
//     automountServiceAccountToken says), as Kubernetes' admission copies
//     them.
type serviceAccountAdmission struct{ store *storage.Store }

func (serviceAccountAdmission) Release(context.Context, v1.Object) {}

func (a serviceAccountAdmission) Admit(ctx context.Context, obj, old v1.Object) error {
	pod := obj.(*v1.Pod)
	if old != nil || pod.Spec == nil {
		return nil // the spec, and so the account, is fixed after create
	}
	if _, mirror := pod.GetMetadata().GetAnnotations()[mirrorPodAnnotation]; mirror {
		if pod.Spec.ServiceAccountName != "" {
			return apierrors.New(apierrors.ErrForbidden, "pods %q is forbidden: a mirror pod may not reference service accounts", pod.GetMetadata().GetName())
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccount
	}
	saKind, _ := kinds.Lookup("ServiceAccount")
	ns, name := pod.GetMetadata().GetNamespace(), pod.Spec.ServiceAccountName
	obj, err := a.store.Get(ctx, saKind, ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.New(apierrors.ErrForbidden, "pods %q is forbidden: error looking up service account %s/%s: serviceaccount %q not found",
				pod.GetMetadata().GetName(), ns, name, name)
		}
		return err
	}
	sa := obj.(*v1.ServiceAccount)
	if len(pod.Spec.ImagePullSecrets) == 0 {
		for _, r := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, &v1.LocalObjectReference{Name: r.GetName()})
		}
	}
	if shouldAutomount(sa, pod) {
		mountServiceAccountToken(pod.Spec)
	}
	return nil
}

// shouldAutomount: the pod's automountServiceAccountToken wins, then the
// account's; unset on both means mount.
func shouldAutomount(sa *v1.ServiceAccount, pod *v1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken adds the mount to every container and init
// container without one at ServiceAccountTokenMountPath, and the volume
// if any container got the mount and the pod has no kube-api-access-*
// volume yet.
func mountServiceAccountToken(spec *v1.PodSpec) {
	volName, haveVolume := "", false
	names := map[string]bool{}
	for _, v := range spec.Volumes {
		names[v.GetName()] = true
		if !haveVolume && strings.HasPrefix(v.GetName(), serviceAccountVolumePrefix) {
			volName, haveVolume = v.GetName(), true
		}
	}
	for volName == "" || (!haveVolume && names[volName]) {
		volName = serviceAccountVolumePrefix + randomSuffix()
	}
	needed := false
	for _, c := range append(append([]*v1.Container(nil), spec.InitContainers...), spec.Containers...) {
		if !mountsAt(c, ServiceAccountTokenMountPath) {
			c.VolumeMounts = append(c.VolumeMounts, &v1.VolumeMount{Name: volName, MountPath: ServiceAccountTokenMountPath, ReadOnly: true})
			needed = true
		}
	}
	if needed && !haveVolume {
		spec.Volumes = append(spec.Volumes, &v1.Volume{Name: volName, Projected: serviceAccountTokenVolume()})
	}
}

func mountsAt(c *v1.Container, path string) bool {
	for _, m := range c.GetVolumeMounts() {
		if m.GetMountPath() == path {
			return true
		}
	}
	return false
}

// serviceAccountTokenVolume is the source Kubernetes' admission adds
// (TokenVolumeSource), with its defaults written out.
func serviceAccountTokenVolume() *v1.ProjectedVolumeSource {
	return &v1.ProjectedVolumeSource{
		DefaultMode: proto.Int32(0o644),
		Sources: []*v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: proto.Int64(serviceAccountTokenExpirationSeconds)}},
			{ConfigMap: &v1.ConfigMapProjection{Name: rootCAConfigMap, Items: []*v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardApi: &v1.DownwardAPIProjection{Items: []*v1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.namespace"}},
			}}},
		},
	}
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
