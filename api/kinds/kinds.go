// Package kinds is the registry of stored kinds: for each, its names (Kind,
// plural, short), API version, scope, constructor, defaulting and
// validation. The apiserver, the client, tugctl and the manifest decoder all
// resolve kinds here, so adding a kind is one message (api/v1/<group>.proto),
// one entry in its group's file here (core.go, apps.go, ...) and its
// validation function in api/validation's file of the same group.
package kinds

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Kind describes one stored kind.
type Kind struct {
	Name   string   // "Pod"
	Plural string   // "pods": the etcd key segment and the CLI name
	Short  []string // "po"
	// Categories groups kinds for `kubectl get all` ("all").
	Categories []string
	APIVersion string // "v1", "apps/v1", ...
	Namespaced bool
	New        func() v1.Object
	Default    func(v1.Object)
	Validate   func(v1.Object) apierrors.FieldErrors
	// ValidateCreate, if set, checks what only a create may not set (after
	// Validate, which creates and updates share).
	ValidateCreate func(v1.Object) apierrors.FieldErrors
	// ValidateUpdate, if set, checks what may not change (old is stored).
	ValidateUpdate func(old, new v1.Object) apierrors.FieldErrors
	// Scale is set for scalable kinds: where their replicas and selector
	// live (the scale subresource and its users read it from here).
	Scale *Scale
}

// HasStatus reports whether the kind has a status field that only
// UpdateStatus writes.
func (k *Kind) HasStatus() bool { return v1.Field(k.New(), "status") != nil }

// GroupResource is how Kubernetes names the kind's resource in messages:
// "pods", "deployments.apps" (the plural, then the group unless core).
func (k *Kind) GroupResource() string {
	if g, _, ok := strings.Cut(k.APIVersion, "/"); ok {
		return k.Plural + "." + g
	}
	return k.Plural
}

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

// table is every kind, group by group: each API group's file (core.go,
// core_volumes.go, core_policy.go, apps.go, autoscaling.go, batch.go, coordination.go,
// discovery.go, networking.go, policy.go, rbac.go, resource.go, scheduling.go, storage.go) holds its
// kinds' entries and defaults, and its validation lives in api/validation's
// file of the same name. A new kind touches only its group's files; a new
// group adds its files and one name here.
var table = slices.Concat(coreKinds, coreVolumeKinds, corePolicyKinds, appsKinds, autoscalingKinds, batchKinds, coordinationKinds, discoveryKinds, networkingKinds, policyKinds, rbacKinds, resourceKinds, schedulingKinds, storageKinds)

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
