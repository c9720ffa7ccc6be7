package kubeapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/kinds"
)

// Aggregated discovery (apidiscovery.k8s.io/v2): /api and /apis answer, in
// one document each, every group's versions with their resources, when the
// client asks for it in its Accept header (kubectl and client-go do,
// falling back to the legacy documents otherwise). Built from the same
// registry as the legacy documents.

const aggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func wantsAggregated(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if strings.Contains(part, "g=apidiscovery.k8s.io") && strings.Contains(part, "v=v2") && !strings.Contains(part, "v=v2beta1") {
			return true
		}
		if strings.TrimSpace(part) == "application/json" {
			return false // the client prefers the legacy form
		}
	}
	return false
}

type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type discoveredSubresource struct {
	Subresource  string   `json:"subresource"`
	ResponseKind gvk      `json:"responseKind"`
	Verbs        []string `json:"verbs"`
}

type discoveredResource struct {
	Resource         string                  `json:"resource"`
	ResponseKind     gvk                     `json:"responseKind"`
	Scope            string                  `json:"scope"`
	SingularResource string                  `json:"singularResource"`
	Verbs            []string                `json:"verbs"`
	ShortNames       []string                `json:"shortNames,omitempty"`
	Categories       []string                `json:"categories,omitempty"`
	Subresources     []discoveredSubresource `json:"subresources,omitempty"`
}

type discoveredVersion struct {
	Version   string               `json:"version"`
	Resources []discoveredResource `json:"resources"`
	Freshness string               `json:"freshness"`
}

type discoveredGroup struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Versions []discoveredVersion `json:"versions"`
}

// aggregated is the APIGroupDiscoveryList of the core group (core true)
// or of every other group.
func (h *Handler) aggregated(core bool) map[string]any {
	byGroup := map[string]*discoveredGroup{}
	var names []string
	for _, r := range h.reg.all {
		if (r.group == "") != core {
			continue
		}
		g := byGroup[r.group]
		if g == nil {
			g = &discoveredGroup{}
			g.Metadata.Name = r.group
			g.Versions = []discoveredVersion{{Version: r.version, Freshness: "Current"}}
			byGroup[r.group] = g
			names = append(names, r.group)
		}
		g.Versions[0].Resources = append(g.Versions[0].Resources, discoveredResourceOf(r))
	}
	if g := byGroup[""]; core && g != nil {
		cs := componentStatusResource
		g.Versions[0].Resources = append(g.Versions[0].Resources, discoveredResource{Resource: cs.Name, ResponseKind: gvk{Version: "v1", Kind: cs.Kind},
			Scope: "Cluster", SingularResource: cs.SingularName, Verbs: cs.Verbs, ShortNames: cs.ShortNames})
	}
	if !core {
		for _, name := range sortedKeys(virtualGroups) {
			vg := virtualGroups[name]
			g := &discoveredGroup{}
			g.Metadata.Name = name
			dv := discoveredVersion{Version: vg.version, Freshness: "Current"}
			for _, rr := range vg.resources {
				scope := "Cluster"
				if rr.Namespaced {
					scope = "Namespaced"
				}
				dv.Resources = append(dv.Resources, discoveredResource{Resource: rr.Name, ResponseKind: gvk{Group: name, Version: vg.version, Kind: rr.Kind},
					Scope: scope, SingularResource: rr.SingularName, Verbs: rr.Verbs})
			}
			g.Versions = []discoveredVersion{dv}
			byGroup[name] = g
			names = append(names, name)
		}
	}
	sort.Strings(names)
	items := make([]*discoveredGroup, 0, len(names))
	for _, n := range names {
		items = append(items, byGroup[n])
	}
	return map[string]any{"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": map[string]any{}, "items": items}
}

func discoveredResourceOf(r *resource) discoveredResource {
	scope := "Cluster"
	if r.kind.Namespaced {
		scope = "Namespaced"
	}
	d := discoveredResource{Resource: r.kind.Plural, ResponseKind: gvk{Group: r.group, Version: r.version, Kind: r.kind.Name},
		Scope: scope, SingularResource: strings.ToLower(r.kind.Name), Verbs: objectVerbs, ShortNames: r.kind.Short, Categories: r.kind.Categories}
	subs := r.subresources()
	for _, s := range sortedKeys(subs) {
		k := gvk{Group: r.group, Version: r.version, Kind: r.kind.Name}
		switch s {
		case "scale":
			k = gvk{Group: "autoscaling", Version: "v1", Kind: "Scale"}
		case "eviction":
			k = gvk{Group: "policy", Version: "v1", Kind: "Eviction"}
		case "binding":
			k.Kind = "Binding"
		}
		if cs, ok := kinds.CreateSubresource(r.kind, s); ok {
			g, v, _ := strings.Cut(cs.APIVersion, "/")
			k = gvk{Group: g, Version: v, Kind: cs.Kind}
		}
		d.Subresources = append(d.Subresources, discoveredSubresource{Subresource: s, ResponseKind: k, Verbs: subs[s]})
	}
	return d
}

func (h *Handler) writeAggregated(w http.ResponseWriter, core bool) {
	b, err := json.Marshal(h.aggregated(core))
	if err != nil {
		writeStatus(w, statusOf(err, target{}))
		return
	}
	w.Header().Set("Content-Type", aggregatedType)
	w.Header().Set("Vary", "Accept")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
