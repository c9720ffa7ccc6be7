// Package kinds is the registry of stored kinds: for each, its names (Kind,
// plural, short), API version, scope, constructor, defaulting and
// validation. The apiserver, the client, tugctl and the manifest decoder all
// resolve kinds here, so adding a kind is one message, one entry in table and
// its validation function.
package kinds

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// Kind describes one stored kind.
type Kind struct {
	Name       string   // "Pod"
	Plural     string   // "pods": the etcd key segment and the CLI name
	Short      []string // "po"
	APIVersion string   // "v1", "apps/v1", ...
	Namespaced bool
	New        func() v1.Object
	Default    func(v1.Object)
	Validate   func(v1.Object) apierrors.FieldErrors
	// ValidateUpdate, if set, checks what may not change (old is stored).
	ValidateUpdate func(old, new v1.Object) apierrors.FieldErrors
}

// HasStatus reports whether the kind has a status field that only
// UpdateStatus writes.
func (k *Kind) HasStatus() bool { return v1.Field(k.New(), "status") != nil }

// FullName is the protobuf message name, e.g. tugboat.api.v1.Pod.
func (k *Kind) FullName() protoreflect.FullName {
	return k.New().ProtoReflect().Descriptor().FullName()
}

func typed[T v1.Object](f func(T) apierrors.FieldErrors) func(v1.Object) apierrors.FieldErrors {
	return func(o v1.Object) apierrors.FieldErrors { return f(o.(T)) }
}

func typedUpdate[T v1.Object](f func(old, new T) apierrors.FieldErrors) func(old, new v1.Object) apierrors.FieldErrors {
	return func(old, new v1.Object) apierrors.FieldErrors { return f(old.(T), new.(T)) }
}

func typedDefault[T v1.Object](f func(T)) func(v1.Object) {
	return func(o v1.Object) { f(o.(T)) }
}

func noDefault(v1.Object) {}

var table = []*Kind{
	{Name: "Namespace", Plural: "namespaces", Short: []string{"ns"}, APIVersion: "v1",
		New: func() v1.Object { return &v1.Namespace{} }, Default: typedDefault(defaultNamespace), Validate: typed(validation.Namespace)},
	{Name: "Node", Plural: "nodes", Short: []string{"no"}, APIVersion: "v1",
		New: func() v1.Object { return &v1.Node{} }, Default: noDefault, Validate: typed(validation.Node)},
	{Name: "Pod", Plural: "pods", Short: []string{"po"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Pod{} }, Default: typedDefault(DefaultPod), Validate: typed(validation.Pod),
		ValidateUpdate: typedUpdate(validation.PodUpdate)},
	{Name: "Event", Plural: "events", Short: []string{"ev"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Event{} }, Default: typedDefault(defaultEvent), Validate: typed(validation.Event)},
	{Name: "Lease", Plural: "leases", APIVersion: "coordination.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Lease{} }, Default: noDefault, Validate: typed(validation.Lease)},
	{Name: "ConfigMap", Plural: "configmaps", Short: []string{"cm"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.ConfigMap{} }, Default: noDefault, Validate: typed(validation.ConfigMap)},
	{Name: "Secret", Plural: "secrets", APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Secret{} }, Default: typedDefault(defaultSecret), Validate: typed(validation.Secret)},
	{Name: "Service", Plural: "services", Short: []string{"svc"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Service{} }, Default: typedDefault(defaultService), Validate: typed(validation.Service)},
	{Name: "Endpoints", Plural: "endpoints", Short: []string{"ep"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Endpoints{} }, Default: typedDefault(defaultEndpoints), Validate: typed(validation.Endpoints)},
	{Name: "ReplicaSet", Plural: "replicasets", Short: []string{"rs"}, APIVersion: "apps/v1", Namespaced: true,
		New: func() v1.Object { return &v1.ReplicaSet{} }, Default: typedDefault(defaultReplicaSet), Validate: typed(validation.ReplicaSet),
		ValidateUpdate: func(o, n v1.Object) (errs apierrors.FieldErrors) {
			validation.SelectorUnchanged(&errs, o.(*v1.ReplicaSet).GetSpec().GetSelector(), n.(*v1.ReplicaSet).GetSpec().GetSelector())
			return errs
		}},
	{Name: "Deployment", Plural: "deployments", Short: []string{"deploy"}, APIVersion: "apps/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Deployment{} }, Default: typedDefault(defaultDeployment), Validate: typed(validation.Deployment),
		ValidateUpdate: func(o, n v1.Object) (errs apierrors.FieldErrors) {
			validation.SelectorUnchanged(&errs, o.(*v1.Deployment).GetSpec().GetSelector(), n.(*v1.Deployment).GetSpec().GetSelector())
			return errs
		}},
	{Name: "Role", Plural: "roles", APIVersion: "rbac.authorization.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Role{} }, Default: noDefault, Validate: typed(validation.Role)},
	{Name: "ClusterRole", Plural: "clusterroles", APIVersion: "rbac.authorization.k8s.io/v1",
		New: func() v1.Object { return &v1.ClusterRole{} }, Default: noDefault, Validate: typed(validation.ClusterRole)},
	{Name: "RoleBinding", Plural: "rolebindings", APIVersion: "rbac.authorization.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.RoleBinding{} }, Default: noDefault, Validate: typed(validation.RoleBinding)},
	{Name: "ClusterRoleBinding", Plural: "clusterrolebindings", APIVersion: "rbac.authorization.k8s.io/v1",
		New: func() v1.Object { return &v1.ClusterRoleBinding{} }, Default: noDefault, Validate: typed(validation.ClusterRoleBinding)},
}

// index maps every accepted spelling (lower-cased) to its kind.
var index = func() map[string]*Kind {
	m := map[string]*Kind{}
	for _, k := range table {
		for _, n := range append([]string{k.Name, k.Plural, strings.TrimSuffix(k.Plural, "s")}, k.Short...) {
			m[strings.ToLower(n)] = k
		}
	}
	return m
}()

var byMessage = func() map[protoreflect.FullName]*Kind {
	m := map[protoreflect.FullName]*Kind{}
	for _, k := range table {
		m[k.FullName()] = k
	}
	return m
}()

// Lookup resolves "Pod", "pods", "pod" or "po" (any case), and
// "deployments.apps"-style names.
func Lookup(name string) (*Kind, error) {
	n := strings.ToLower(name)
	if i := strings.Index(n, "."); i > 0 {
		n = n[:i]
	}
	if k, ok := index[n]; ok {
		return k, nil
	}
	return nil, apierrors.New(apierrors.ErrInvalid, "unknown kind %q (known: %s)", name, strings.Join(Names(), ", "))
}

// ForMessage returns the kind of a message, or an error for a message that is
// not a stored kind.
func ForMessage(m proto.Message) (*Kind, error) {
	fn := m.ProtoReflect().Descriptor().FullName()
	if k, ok := byMessage[fn]; ok {
		return k, nil
	}
	return nil, apierrors.New(apierrors.ErrInvalid, "unknown kind %q", fn)
}

// ForManifest resolves apiVersion + kind from a manifest, checking the group.
func ForManifest(apiVersion, kind string) (*Kind, error) {
	k, ok := index[strings.ToLower(kind)]
	if !ok || k.Name != kind {
		return nil, fmt.Errorf("kind: unknown kind %q (known: %s)", kind, strings.Join(Names(), ", "))
	}
	if apiVersion != k.APIVersion {
		return nil, fmt.Errorf("apiVersion: %q does not serve kind %s (use %q)", apiVersion, kind, k.APIVersion)
	}
	return k, nil
}

// All returns every kind, in registration order.
func All() []*Kind { return append([]*Kind(nil), table...) }

// Names returns every Kind name, sorted.
func Names() []string {
	var out []string
	for _, k := range table {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}
