// Package openapi writes the OpenAPI documents of the Kubernetes HTTP API
// (swagger 2.0 at /openapi/v2, OpenAPI 3.0 per group version at
// /openapi/v3/...) from the kind registry (api/kinds) and the protobuf
// descriptors, with each message's and field's description taken from the
// comments of the .proto files (api/v1.Comment). kubectl explain reads the
// schemas, kubectl apply reads the strategic merge patch keys
// (x-kubernetes-patch-merge-key, from the patch_merge_key field option) and
// the fieldValidation parameter of each PATCH operation (which turns on
// server-side field validation). tugctl explain can read the same
// schemas (Schemas).
//
// Definitions are named as Kubernetes names them
// (io.k8s.api.core.v1.PodSpec, io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta):
// a message is named for the API group of the first kind (in registry
// order) that uses it, and messages of meta.proto for meta.k8s.io.
//
// Contract: the documents are pure functions of the registry and the
// descriptors; building them reads nothing else and never fails.
package openapi

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Schema is a JSON schema object as the documents write it.
type Schema = map[string]any

// Version is which OpenAPI a schema is for: they differ in how they refer
// to other schemas.
type Version int

const (
	V2 Version = 2
	V3 Version = 3
)

func (v Version) ref(name string) string {
	if v == V2 {
		return "#/definitions/" + name
	}
	return "#/components/schemas/" + name
}

// names gives every message reachable from a kind its definition name.
type names struct {
	byMessage map[protoreflect.FullName]string
	order     []protoreflect.MessageDescriptor
	kindOf    map[protoreflect.FullName]*kinds.Kind
}

func newNames(ks []*kinds.Kind) *names {
	n := &names{byMessage: map[protoreflect.FullName]string{}, kindOf: map[protoreflect.FullName]*kinds.Kind{}}
	for _, k := range ks {
		md := k.New().ProtoReflect().Descriptor()
		n.kindOf[md.FullName()] = k
		n.visit(md, pkgPrefix(k.APIVersion))
	}
	return n
}

// pkgPrefix is Kubernetes' Go package of a group version, as definitions
// are named: "v1" -> io.k8s.api.core.v1, "rbac.authorization.k8s.io/v1" ->
// io.k8s.api.rbac.v1.
func pkgPrefix(apiVersion string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "core", apiVersion
	}
	group, _, _ = strings.Cut(group, ".")
	return "io.k8s.api." + group + "." + version + "."
}

const metaPrefix = "io.k8s.apimachinery.pkg.apis.meta.v1."

func (n *names) visit(md protoreflect.MessageDescriptor, prefix string) {
	if _, ok := n.byMessage[md.FullName()]; ok || isTimestamp(md) || isStruct(md) {
		return
	}
	name := prefix + string(md.Name())
	if strings.HasSuffix(md.ParentFile().Path(), "meta.proto") {
		name = metaPrefix + string(md.Name())
	}
	n.byMessage[md.FullName()] = name
	n.order = append(n.order, md)
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		if fd.Message() != nil {
			n.visit(fd.Message(), prefix)
		}
	}
}

// isStruct is free-form JSON (managedFields' fieldsV1), an object in the
// schemas.
func isStruct(md protoreflect.MessageDescriptor) bool {
	return md.FullName() == "google.protobuf.Struct"
}

func isTimestamp(md protoreflect.MessageDescriptor) bool {
	return md.FullName() == "google.protobuf.Timestamp"
}

// messageSchema is the schema of one message.
func (n *names) messageSchema(md protoreflect.MessageDescriptor, v Version) Schema {
	s := Schema{"type": "object"}
	if c := v1.Comment(md.FullName()); c != "" {
		s["description"] = c
	}
	props := Schema{}
	fields := md.Fields()
	k := n.kindOf[md.FullName()]
	if k != nil {
		props["apiVersion"] = Schema{"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object: " + k.APIVersion + "."}
		props["kind"] = Schema{"type": "string", "description": "Kind is a string value representing the REST resource this object represents: " + k.Name + "."}
		s["x-kubernetes-group-version-kind"] = []Schema{gvk(k.APIVersion, k.Name)}
	}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		props[fd.JSONName()] = n.fieldSchema(fd, v)
	}
	s["properties"] = props
	return s
}

func gvk(apiVersion, kind string) Schema {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	return Schema{"group": group, "version": version, "kind": kind}
}

// fieldSchema is the schema of one field, with its description and patch
// metadata.
func (n *names) fieldSchema(fd protoreflect.FieldDescriptor, v Version) Schema {
	var s Schema
	switch {
	case fd.IsMap():
		s = Schema{"type": "object", "additionalProperties": n.valueSchema(fd.MapValue(), v)}
	case fd.IsList():
		s = Schema{"type": "array", "items": n.valueSchema(fd, v)}
		key, strategy := v1.PatchMeta(fd)
		if key != "" {
			s["x-kubernetes-patch-merge-key"] = key
			s["x-kubernetes-list-type"] = "map"
			s["x-kubernetes-list-map-keys"] = []string{key}
		} else if strings.Contains(strategy, "merge") {
			s["x-kubernetes-list-type"] = "set"
		} else {
			s["x-kubernetes-list-type"] = "atomic"
		}
		if strategy != "" {
			s["x-kubernetes-patch-strategy"] = strategy
		}
	default:
		s = n.valueSchema(fd, v)
		if _, strategy := v1.PatchMeta(fd); strategy != "" {
			s["x-kubernetes-patch-strategy"] = strategy
		}
	}
	if c := v1.Comment(fd.FullName()); c != "" {
		s["description"] = c
	}
	return s
}

// valueSchema is the schema of one value of fd (an element, for lists).
func (n *names) valueSchema(fd protoreflect.FieldDescriptor, v Version) Schema {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if isTimestamp(fd.Message()) {
			return Schema{"type": "string", "format": "date-time"}
		}
		if isStruct(fd.Message()) {
			return Schema{"type": "object"}
		}
		ref := v.ref(n.byMessage[fd.Message().FullName()])
		if v == V2 {
			return Schema{"$ref": ref}
		}
		return Schema{"allOf": []Schema{{"$ref": ref}}, "default": Schema{}}
	case protoreflect.StringKind:
		if v1.IsIntOrString(fd) {
			return Schema{"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": true}
		}
		return Schema{"type": "string"}
	case protoreflect.BytesKind:
		return Schema{"type": "string", "format": "byte"}
	case protoreflect.BoolKind:
		return Schema{"type": "boolean"}
	case protoreflect.EnumKind:
		return Schema{"type": "string"}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return Schema{"type": "number", "format": "double"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return Schema{"type": "integer", "format": "int32"}
	default:
		if fd.Name() == "resource_version" {
			// A string in Kubernetes' JSON, as the manifest codec writes it.
			return Schema{"type": "string"}
		}
		return Schema{"type": "integer", "format": "int64"}
	}
}

// Schemas are the definitions of every message the kinds ks use, by name,
// with references written for version v.
func Schemas(ks []*kinds.Kind, v Version) map[string]Schema {
	n := newNames(ks)
	out := map[string]Schema{}
	for _, md := range n.order {
		out[n.byMessage[md.FullName()]] = n.messageSchema(md, v)
	}
	for _, k := range ks {
		name := n.byMessage[k.FullName()]
		out[name+"List"] = listSchema(k, name, v)
	}
	out[metaPrefix+"ListMeta"] = Schema{"type": "object", "description": "ListMeta describes metadata that synthetic resources must have, including lists.",
		"properties": Schema{"resourceVersion": Schema{"type": "string"}, "continue": Schema{"type": "string"}, "remainingItemCount": Schema{"type": "integer", "format": "int64"}}}
	return out
}

// DefinitionName is the name of kind k's schema.
func DefinitionName(k *kinds.Kind) string {
	return newNames([]*kinds.Kind{k}).byMessage[k.FullName()]
}

func listSchema(k *kinds.Kind, item string, v Version) Schema {
	return Schema{
		"type":        "object",
		"description": k.Name + "List is a list of " + k.Name + " objects.",
		"properties": Schema{
			"apiVersion": Schema{"type": "string"},
			"kind":       Schema{"type": "string"},
			"metadata":   Schema{"$ref": v.ref(metaPrefix + "ListMeta")},
			"items":      Schema{"type": "array", "items": Schema{"$ref": v.ref(item)}},
		},
		"required":                        []string{"items"},
		"x-kubernetes-group-version-kind": []Schema{gvk(k.APIVersion, k.Name+"List")},
	}
}
