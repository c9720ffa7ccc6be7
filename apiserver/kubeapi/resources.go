package kubeapi

import (
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/kinds"
)

// resource is one kind as the HTTP API serves it: its group, version and
// plural in paths, and which subresources it has. All of it is derived from
// the kind registry and the kind's descriptor.
type resource struct {
	kind     *kinds.Kind
	group    string // "" for the core group
	version  string // "v1"
	scalable bool   // the kind has a scale (kinds.Kind.Scale): the scale subresource
}

// groupVersion is "v1" or "apps/v1".
func (r *resource) groupVersion() string { return r.kind.APIVersion }

// subresources are the subresources of a kind with their verbs.
func (r *resource) subresources() map[string][]string {
	out := map[string][]string{}
	if r.kind.HasStatus() {
		out["status"] = []string{"get", "patch", "update"}
	}
	if r.scalable {
		out["scale"] = []string{"get", "patch", "update"}
	}
	for _, s := range kinds.CreateSubresources(r.kind) {
		out[s.Name] = []string{"create"}
	}
	if r.kind.Name == "Pod" {
		out["ephemeralcontainers"] = []string{"get", "patch", "update"}
		out["binding"] = []string{"create"}
		out["eviction"] = []string{"create"}
		out["resize"] = []string{"get", "patch", "update"}
		out["log"] = []string{"get"}
		out["exec"] = []string{"create", "get"}
		out["attach"] = []string{"create", "get"}
		out["portforward"] = []string{"create", "get"}
	}
	return out
}

var objectVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// registry is every served resource, by group/version and plural.
type registry struct {
	byPath map[string]*resource // "apps/v1/deployments", "v1/pods"
	groups []string             // API groups other than core, sorted
	all    []*resource
}

func newRegistry() *registry {
	reg := &registry{byPath: map[string]*resource{}}
	seen := map[string]bool{}
	for _, k := range kinds.All() {
		r := &resource{kind: k, version: k.APIVersion}
		if g, v, ok := strings.Cut(k.APIVersion, "/"); ok {
			r.group, r.version = g, v
		}
		r.scalable = k.Scale != nil
		reg.byPath[k.APIVersion+"/"+k.Plural] = r
		reg.all = append(reg.all, r)
		if r.group != "" && !seen[r.group] {
			seen[r.group] = true
			reg.groups = append(reg.groups, r.group)
		}
	}
	sort.Strings(reg.groups)
	return reg
}

// lookup finds the resource plural in groupVersion ("v1", "apps/v1").
func (reg *registry) lookup(groupVersion, plural string) *resource {
	return reg.byPath[groupVersion+"/"+plural]
}

// inGroupVersion lists the resources of one group version.
func (reg *registry) inGroupVersion(gv string) []*resource {
	var out []*resource
	for _, r := range reg.all {
		if r.groupVersion() == gv {
			out = append(out, r)
		}
	}
	return out
}
