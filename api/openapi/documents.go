package openapi

import (
	"strings"

	"github.com/tugboat/tugboat/api/kinds"
)

// Resource is one kind as the documents describe its paths: the
// subresources it serves besides the object (status, scale).
type Resource struct {
	Kind      *kinds.Kind
	Status    bool
	Scale     bool
	GroupPath string // "api/v1" or "apis/apps/v1"
}

// GroupPath is where a group version's paths live: api/v1, apis/GROUP/VERSION.
func GroupPath(apiVersion string) string {
	if !strings.Contains(apiVersion, "/") {
		return "api/" + apiVersion
	}
	return "apis/" + apiVersion
}

func queryParam(name, desc string) Schema {
	return Schema{"name": name, "in": "query", "description": desc, "schema": Schema{"type": "string", "uniqueItems": true}}
}

// The write parameters: kubectl looks for fieldValidation on PATCH to use
// server-side field validation.
var writeParams = []Schema{
	queryParam("dryRun", "When present, indicates that modifications should not be persisted. The only valid value is All."),
	queryParam("fieldManager", "A name associated with the actor or entity that is making these changes."),
	queryParam("fieldValidation", "How the server treats fields it does not know: Strict and Warn refuse them, Ignore drops them with a warning."),
}

var listParams = []Schema{
	queryParam("labelSelector", "A selector to restrict the list of returned objects by their labels."),
	queryParam("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
	queryParam("limit", "Maximum number of responses to return for a list call."),
	queryParam("continue", "The continue token of the previous page."),
	queryParam("resourceVersion", "The version to list at, or to watch from."),
	queryParam("watch", "Watch for changes and return them as a stream of events."),
	queryParam("allowWatchBookmarks", "Ask for BOOKMARK events."),
	queryParam("sendInitialEvents", "Start a watch with ADDED events for the current state."),
	queryParam("timeoutSeconds", "Timeout for the list or watch call."),
}

var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}

// operation is one operation; v2 and v3 differ in how bodies and answers
// are written.
func operation(v Version, id, action string, k *kinds.Kind, kindName, ref string, params []Schema, body []string) Schema {
	op := Schema{
		"operationId":                     id,
		"x-kubernetes-action":             action,
		"x-kubernetes-group-version-kind": gvk(k.APIVersion, kindName),
	}
	if v == V2 {
		var ps []Schema
		for _, p := range params {
			ps = append(ps, Schema{"name": p["name"], "in": "query", "type": "string", "uniqueItems": true, "description": p["description"]})
		}
		if len(body) > 0 {
			ps = append(ps, Schema{"name": "body", "in": "body", "required": true, "schema": Schema{"$ref": ref}})
			op["consumes"] = body
		}
		op["parameters"] = ps
		op["produces"] = []string{"application/json", "application/yaml"}
		op["responses"] = Schema{"200": Schema{"description": "OK", "schema": Schema{"$ref": ref}}}
		return op
	}
	op["parameters"] = params
	if len(body) > 0 {
		content := Schema{}
		for _, ct := range body {
			content[ct] = Schema{"schema": Schema{"$ref": ref}}
		}
		op["requestBody"] = Schema{"content": content, "required": true}
	}
	op["responses"] = Schema{"200": Schema{"description": "OK", "content": Schema{"application/json": Schema{"schema": Schema{"$ref": ref}}}}}
	return op
}

// Paths are the operations of the resources rs.
func Paths(rs []Resource, v Version) map[string]Schema {
	out := map[string]Schema{}
	for _, r := range rs {
		k := r.Kind
		name := DefinitionName(k)
		ref, listRef := v.ref(name), v.ref(name+"List")
		base := "/" + r.GroupPath + "/"
		if k.Namespaced {
			base += "namespaces/{namespace}/"
		}
		base += k.Plural
		verb := k.Name
		out[base] = Schema{
			"get":    operation(v, "list"+verb, "list", k, k.Name, listRef, listParams, nil),
			"post":   operation(v, "create"+verb, "post", k, k.Name, ref, writeParams, []string{"application/json"}),
			"delete": operation(v, "deletecollection"+verb, "deletecollection", k, k.Name, listRef, listParams, nil),
		}
		item := Schema{
			"get":    operation(v, "read"+verb, "get", k, k.Name, ref, nil, nil),
			"put":    operation(v, "replace"+verb, "put", k, k.Name, ref, writeParams, []string{"application/json"}),
			"patch":  operation(v, "patch"+verb, "patch", k, k.Name, ref, writeParams, patchTypes),
			"delete": operation(v, "delete"+verb, "delete", k, k.Name, ref, writeParams, nil),
		}
		out[base+"/{name}"] = item
		if r.Status {
			out[base+"/{name}/status"] = Schema{
				"get":   operation(v, "read"+verb+"Status", "get", k, k.Name, ref, nil, nil),
				"put":   operation(v, "replace"+verb+"Status", "put", k, k.Name, ref, writeParams, []string{"application/json"}),
				"patch": operation(v, "patch"+verb+"Status", "patch", k, k.Name, ref, writeParams, patchTypes),
			}
		}
		if r.Scale {
			scale := v.ref("io.k8s.api.autoscaling.v1.Scale")
			sk := &kinds.Kind{Name: "Scale", APIVersion: "autoscaling/v1"}
			out[base+"/{name}/scale"] = Schema{
				"get":   operation(v, "read"+verb+"Scale", "get", sk, "Scale", scale, nil, nil),
				"put":   operation(v, "replace"+verb+"Scale", "put", sk, "Scale", scale, writeParams, []string{"application/json"}),
				"patch": operation(v, "patch"+verb+"Scale", "patch", sk, "Scale", scale, writeParams, patchTypes),
			}
		}
	}
	return out
}

// scaleSchema is autoscaling/v1 Scale, the scale subresource's body.
func scaleSchema(v Version) Schema {
	return Schema{
		"type":        "object",
		"description": "Scale represents a scaling request for a resource.",
		"properties": Schema{
			"apiVersion": Schema{"type": "string"},
			"kind":       Schema{"type": "string"},
			"metadata":   Schema{"$ref": v.ref(metaPrefix + "ObjectMeta")},
			"spec": Schema{"type": "object", "description": "The desired replicas.", "properties": Schema{
				"replicas": Schema{"type": "integer", "format": "int32", "description": "The desired number of instances for the scaled object."}}},
			"status": Schema{"type": "object", "description": "The current replicas and the label selector of the pods.", "properties": Schema{
				"replicas": Schema{"type": "integer", "format": "int32"},
				"selector": Schema{"type": "string"}}},
		},
		"x-kubernetes-group-version-kind": []Schema{gvk("autoscaling/v1", "Scale")},
	}
}

func info(version string) Schema {
	return Schema{"title": "Tugboat", "version": version}
}

// definitions are the schemas of the resources rs for version v, with
// autoscaling/v1 Scale when one of them has the scale subresource.
func definitions(rs []Resource, v Version) map[string]Schema {
	var ks []*kinds.Kind
	scale := false
	for _, r := range rs {
		ks = append(ks, r.Kind)
		scale = scale || r.Scale
	}
	defs := Schemas(ks, v)
	if scale {
		defs["io.k8s.api.autoscaling.v1.Scale"] = scaleSchema(v)
	}
	return defs
}

// V2Document is the swagger 2.0 document of every resource.
func V2Document(rs []Resource, version string) Schema {
	return Schema{"swagger": "2.0", "info": info(version), "paths": Paths(rs, V2), "definitions": definitions(rs, V2)}
}

// V3Document is the OpenAPI 3.0 document of one group version's
// resources rs.
func V3Document(rs []Resource, version string) Schema {
	return Schema{"openapi": "3.0.0", "info": info(version), "paths": Paths(rs, V3), "components": Schema{"schemas": definitions(rs, V3)}}
}
