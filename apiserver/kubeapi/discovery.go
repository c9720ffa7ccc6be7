package kubeapi

import (
	"net/http"
	"runtime"
	"sort"
	"strings"
)

// Discovery documents (legacy, as every client since kubectl 1.0 reads
// them): /api, /apis, /apis/GROUP, and one APIResourceList per group
// version, all built from the kind registry.

type groupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

type apiGroup struct {
	Kind             string                     `json:"kind,omitempty"`
	APIVersion       string                     `json:"apiVersion,omitempty"`
	Name             string                     `json:"name"`
	Versions         []groupVersionForDiscovery `json:"versions"`
	PreferredVersion groupVersionForDiscovery   `json:"preferredVersion"`
}

type apiResource struct {
	Name         string   `json:"name"`
	SingularName string   `json:"singularName"`
	Namespaced   bool     `json:"namespaced"`
	Group        string   `json:"group,omitempty"`
	Version      string   `json:"version,omitempty"`
	Kind         string   `json:"kind"`
	Verbs        []string `json:"verbs"`
	ShortNames   []string `json:"shortNames,omitempty"`
	Categories   []string `json:"categories,omitempty"`
}

func (h *Handler) discovery(w http.ResponseWriter, r *http.Request, path string) {
	if (path == "/api" || path == "/apis") && wantsAggregated(r) {
		h.writeAggregated(w, path == "/api")
		return
	}
	switch {
	case path == "/api":
		writeJSON(w, http.StatusOK, map[string]any{
			"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}},
		})
	case path == "/apis":
		var groups []apiGroup
		for _, g := range h.reg.groups {
			groups = append(groups, h.group(g))
		}
		for _, g := range sortedKeys(virtualGroups) {
			v := virtualGroups[g].version
			gv := groupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v}
			groups = append(groups, apiGroup{Name: g, Versions: []groupVersionForDiscovery{gv}, PreferredVersion: gv})
		}
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
	case path == "/api/v1":
		h.resourceList(w, "v1")
	default:
		rest := strings.TrimPrefix(path, "/apis/")
		group, version, _ := strings.Cut(rest, "/")
		if vg, ok := virtualGroups[group]; ok && (version == vg.version || version == "") {
			gv := groupVersionForDiscovery{GroupVersion: group + "/" + vg.version, Version: vg.version}
			if version == "" {
				writeJSON(w, http.StatusOK, apiGroup{Kind: "APIGroup", APIVersion: "v1", Name: group, Versions: []groupVersionForDiscovery{gv}, PreferredVersion: gv})
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv.GroupVersion, "resources": vg.resources})
			return
		}
		if !h.hasGroup(group) {
			writeStatus(w, notFound("the server could not find the requested resource"))
			return
		}
		if version == "" {
			g := h.group(group)
			g.Kind, g.APIVersion = "APIGroup", "v1"
			writeJSON(w, http.StatusOK, g)
			return
		}
		if len(h.reg.inGroupVersion(group+"/"+version)) == 0 {
			writeStatus(w, notFound("the server could not find the requested resource"))
			return
		}
		h.resourceList(w, group+"/"+version)
	}
}

func (h *Handler) hasGroup(g string) bool {
	for _, x := range h.reg.groups {
		if x == g {
			return true
		}
	}
	return false
}

// group is a group's discovery entry; every group has one version.
func (h *Handler) group(name string) apiGroup {
	g := apiGroup{Name: name}
	seen := map[string]bool{}
	for _, r := range h.reg.all {
		if r.group == name && !seen[r.version] {
			seen[r.version] = true
			g.Versions = append(g.Versions, groupVersionForDiscovery{GroupVersion: r.groupVersion(), Version: r.version})
		}
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

func (h *Handler) resourceList(w http.ResponseWriter, gv string) {
	var out []apiResource
	for _, r := range h.reg.inGroupVersion(gv) {
		out = append(out, apiResource{
			Name: r.kind.Plural, SingularName: strings.ToLower(r.kind.Name), Namespaced: r.kind.Namespaced,
			Kind: r.kind.Name, Verbs: objectVerbs, ShortNames: r.kind.Short, Categories: r.kind.Categories,
		})
		subs := r.subresources()
		names := make([]string, 0, len(subs))
		for s := range subs {
			names = append(names, s)
		}
		sort.Strings(names)
		for _, s := range names {
			sr := apiResource{Name: r.kind.Plural + "/" + s, Namespaced: r.kind.Namespaced, Kind: r.kind.Name, Verbs: subs[s]}
			switch s {
			case "scale":
				sr.Group, sr.Version, sr.Kind = "autoscaling", "v1", "Scale"
			case "binding":
				sr.Kind = "Binding"
			case "eviction":
				sr.Group, sr.Version, sr.Kind = "policy", "v1", "Eviction"
			case "token":
				sr.Group, sr.Version, sr.Kind = "authentication.k8s.io", "v1", "TokenRequest"
			case "exec", "attach", "portforward":
				sr.Kind = "Pod" + map[string]string{"exec": "ExecOptions", "attach": "AttachOptions", "portforward": "PortForwardOptions"}[s]
			case "log":
				sr.Kind = "Pod"
			}
			out = append(out, sr)
		}
	}
	if gv == "v1" {
		out = append(out, componentStatusResource)
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func goVersion() string { return runtime.Version() }
func platform() string  { return runtime.GOOS + "/" + runtime.GOARCH }
