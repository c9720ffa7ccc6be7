package apiserver

import (
	"encoding/json"
	"fmt"
	"sync"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	"github.com/tugboat/tugboat/api/openapi"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Server-side apply (a Patch of type "apply", the HTTP door's
// application/apply-patch+yaml): the patch is a field manager's whole
// intent for the object; Kubernetes' own field manager
// (k8s.io/apimachinery/pkg/util/managedfields over
// sigs.k8s.io/structured-merge-diff) merges it into the stored object
// with the schemas the OpenAPI documents publish (api/openapi: associative
// lists keyed by their patch merge key), records which manager owns which
// field in metadata.managedFields, and refuses with a Conflict listing the
// fields another manager owns, unless force is set. The merged object is
// decoded by the manifest codec and stored as an Update (or a Create when
// the object does not exist, which then also needs create permission, as
// in Kubernetes), so validation and admission are the same as for every
// other write.
//
// Every other write (create, update, status update, scale, non-apply
// patch) is recorded too, as an Update entry of its manager (see
// managedfields.go), so a field another client changed is no longer owned
// by the manager that applied it and the next apply does not conflict
// over it or take it back silently.

// fieldManagers builds the type converter once (from every kind's schema)
// and a field manager per kind and subresource ("", "status", "scale": the
// entries they write name the subresource).
type fieldManagers struct {
	once   sync.Once
	tc     managedfields.TypeConverter
	err    error
	mu     sync.Mutex
	byKind map[string]*managedfields.FieldManager
}

func (f *fieldManagers) forKind(k *kinds.Kind, subresource string) (*managedfields.FieldManager, error) {
	f.once.Do(func() {
		b, err := json.Marshal(openapi.Schemas(kinds.All(), openapi.V3))
		if err != nil {
			f.err = err
			return
		}
		var specs map[string]*spec.Schema
		if err := json.Unmarshal(b, &specs); err != nil {
			f.err = err
			return
		}
		f.tc, f.err = managedfields.NewTypeConverter(specs, false)
	})
	if f.err != nil {
		return nil, fmt.Errorf("server-side apply: the kinds' schemas: %w", f.err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := k.Name + "/" + subresource
	if fm := f.byKind[key]; fm != nil {
		return fm, nil
	}
	gvk := schema.FromAPIVersionAndKind(k.APIVersion, k.Name)
	fm, err := managedfields.NewDefaultFieldManager(f.tc, unstructuredScheme{}, unstructuredScheme{}, unstructuredScheme{}, gvk, gvk.GroupVersion(), subresource, resetFields(k, subresource))
	if err != nil {
		return nil, err
	}
	if f.byKind == nil {
		f.byKind = map[string]*managedfields.FieldManager{}
	}
	f.byKind[key] = fm
	return fm, nil
}

// resetFields are the fields a write through subresource cannot change,
// which the field manager then never records for it (Kubernetes'
// strategies' GetResetFields): status for the object, everything else for
// its status.
func resetFields(k *kinds.Kind, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	if !k.HasStatus() {
		return nil
	}
	var set *fieldpath.Set
	switch subresource {
	case "":
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case "status":
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(k.APIVersion): fieldpath.NewExcludeSetFilter(set)}
}

// unstructuredScheme converts, defaults and makes the unstructured objects
// the field manager works on: every kind has one version, so conversion
// is the identity, and defaulting is the apiserver's, after the merge.
type unstructuredScheme struct{}

func (unstructuredScheme) Convert(in, out, _ any) error {
	u, ok1 := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("server-side apply converts only unstructured objects, not %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (unstructuredScheme) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}

func (unstructuredScheme) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (unstructuredScheme) Default(runtime.Object) {}

func (unstructuredScheme) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// applyPatch reads an apply patch (YAML or JSON) for the object k/ns/name:
// it must be of kind k and name the object, if it names one.
func applyPatch(k *kinds.Kind, ns, name string, p []byte) (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON(p)
	if err != nil {
		return nil, apierrors.New(apierrors.ErrBadRequest, "error decoding YAML: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(j, &u.Object); err != nil || u.Object == nil {
		return nil, apierrors.New(apierrors.ErrBadRequest, "the apply patch is not an object: %s", truncateBody(j))
	}
	if av := u.GetAPIVersion(); av != k.APIVersion {
		return nil, apierrors.New(apierrors.ErrBadRequest, "the API version in the data (%s) does not match the expected API version (%s)", av, k.APIVersion)
	}
	if kind := u.GetKind(); kind != k.Name {
		return nil, apierrors.New(apierrors.ErrBadRequest, "the kind in the data (%s) does not match the expected kind (%s)", kind, k.Name)
	}
	if n := u.GetName(); n != "" && n != name {
		return nil, apierrors.New(apierrors.ErrBadRequest, "the name of the object (%s) does not match the name on the URL (%s)", n, name)
	}
	u.SetName(name)
	if k.Namespaced {
		if n := u.GetNamespace(); n != "" && n != ns {
			return nil, apierrors.New(apierrors.ErrBadRequest, "the namespace of the object (%s) does not match the namespace on the request (%s)", n, ns)
		}
		u.SetNamespace(ns)
	}
	return u, nil
}

func truncateBody(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// applyTo merges the manager's intent into live (nil: a new object) and
// decodes the result as kind k.
func applyTo(fm *managedfields.FieldManager, k *kinds.Kind, live v1.Object, intent *unstructured.Unstructured, manager string, force bool) (v1.Object, error) {
	var cur *unstructured.Unstructured
	if live != nil {
		var err error
		if cur, err = toUnstructured(live); err != nil {
			return nil, err
		}
	} else {
		cur = &unstructured.Unstructured{}
		cur.SetGroupVersionKind(intent.GroupVersionKind())
		cur.SetName(intent.GetName())
		cur.SetNamespace(intent.GetNamespace())
	}
	out, err := fm.Apply(cur, intent.DeepCopy(), manager, force)
	if err != nil {
		return nil, applyError(err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	dec, _, err := manifest.DecodeObject(b, manifest.ObjectOptions{APIVersion: k.APIVersion, Kind: k.Name})
	if err != nil {
		return nil, err
	}
	return dec.Object, nil
}

// toUnstructured is obj's Kubernetes-shaped JSON as the field manager
// reads it: the JSON numbers of the codec become the float64/int64 it
// expects.
func toUnstructured(obj v1.Object) (*unstructured.Unstructured, error) {
	m, err := manifest.ToMap(obj)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &u.Object); err != nil {
		return nil, err
	}
	return u, nil
}

// applyError maps the field manager's Kubernetes errors to the sentinels:
// a conflict keeps Kubernetes' text ("Apply failed with 1 conflict:
// conflict with \"kubectl\": .spec.replicas").
func applyError(err error) error {
	var se kerrors.APIStatus
	if s, ok := err.(kerrors.APIStatus); ok {
		se = s
	}
	if se == nil {
		return apierrors.New(apierrors.ErrInvalid, "%v", err)
	}
	msg := se.Status().Message
	switch {
	case kerrors.IsConflict(err):
		return apierrors.New(apierrors.ErrConflict, "%s", msg)
	case kerrors.IsBadRequest(err):
		return apierrors.New(apierrors.ErrBadRequest, "%s", msg)
	}
	return apierrors.New(apierrors.ErrInvalid, "%s", msg)
}
