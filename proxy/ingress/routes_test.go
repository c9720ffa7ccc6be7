package ingress

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// snapshot serves every Service name with one endpoint, all Ingresses of
// class tugboat.
func snapshot(ings ...*v1.Ingress) Snapshot {
	return Snapshot{Ingresses: ings,
		Classes: []*v1.IngressClass{{Metadata: &v1.ObjectMeta{Name: "tugboat", Annotations: map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}},
			Spec: &v1.IngressClassSpec{Controller: "tugboat.dev/ingress-controller"}}},
		Service: func(key string) (*v1.Service, bool) {
			return &v1.Service{Spec: &v1.ServiceSpec{Ports: []*v1.ServicePort{{Name: "http", Port: 80}}}}, true
		},
		EndpointSlices: func(key string) []*v1.EndpointSlice {
			return []*v1.EndpointSlice{{AddressType: "IPv4", Endpoints: []*v1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
				Ports: []*v1.EndpointSlicePort{{Name: proto.String("http"), Port: proto.Int32(8080)}}}}
		},
	}
}

// pathIngress has one host-less rule with paths "Type:/path" each going
// to a Service named after it.
func pathIngress(paths ...string) *v1.Ingress {
	var hp []*v1.HTTPIngressPath
	for _, p := range paths {
		typ, path, _ := strings.Cut(p, ":")
		hp = append(hp, &v1.HTTPIngressPath{Path: path, PathType: proto.String(typ),
			Backend: &v1.IngressBackend{Service: &v1.IngressServiceBackend{Name: p, Port: &v1.ServiceBackendPort{Number: 80}}}})
	}
	return &v1.Ingress{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "i"},
		Spec: &v1.IngressSpec{Rules: []*v1.IngressRule{{Http: &v1.HTTPIngressRuleValue{Paths: hp}}}}}
}

// The Kubernetes documentation's table of path matches
// (concepts/services-networking/ingress, "Examples").
func TestPathMatching(t *testing.T) {
	for _, c := range []struct {
		paths []string
		req   string
		want  string // the matching path, "" for none
	}{
		{[]string{"Prefix:/"}, "/anything/at/all", "Prefix:/"},
		{[]string{"Exact:/foo"}, "/foo", "Exact:/foo"},
		{[]string{"Exact:/foo"}, "/bar", ""},
		{[]string{"Exact:/foo"}, "/foo/", ""},
		{[]string{"Exact:/foo/"}, "/foo", ""},
		{[]string{"Prefix:/foo"}, "/foo", "Prefix:/foo"},
		{[]string{"Prefix:/foo"}, "/foo/", "Prefix:/foo"},
		{[]string{"Prefix:/foo/"}, "/foo", "Prefix:/foo/"},
		{[]string{"Prefix:/foo/"}, "/foo/", "Prefix:/foo/"},
		{[]string{"Prefix:/aaa/bb"}, "/aaa/bbb", ""},
		{[]string{"Prefix:/aaa/bbb"}, "/aaa/bbb", "Prefix:/aaa/bbb"},
		{[]string{"Prefix:/aaa/bbb/"}, "/aaa/bbb", "Prefix:/aaa/bbb/"},
		{[]string{"Prefix:/aaa/bbb"}, "/aaa/bbb/", "Prefix:/aaa/bbb"},
		{[]string{"Prefix:/aaa/bbb"}, "/aaa/bbb/ccc", "Prefix:/aaa/bbb"},
		{[]string{"Prefix:/aaa/bbb"}, "/aaa/bbbxyz", ""},
		{[]string{"Prefix:/", "Prefix:/aaa"}, "/aaa/ccc", "Prefix:/aaa"},
		{[]string{"Prefix:/", "Prefix:/aaa", "Prefix:/aaa/bbb"}, "/aaa/bbb", "Prefix:/aaa/bbb"},
		{[]string{"Prefix:/", "Prefix:/aaa", "Prefix:/aaa/bbb"}, "/ccc", "Prefix:/"},
		{[]string{"Prefix:/aaa"}, "/ccc", ""},
		{[]string{"Prefix:/foo", "Exact:/foo"}, "/foo", "Exact:/foo"},
		{[]string{"Exact:/foo", "Prefix:/foo/bar"}, "/foo/bar/baz", "Prefix:/foo/bar"},
		{[]string{"ImplementationSpecific:/app"}, "/app/x", "ImplementationSpecific:/app"},
	} {
		t.Run(fmt.Sprintf("%v %s", c.paths, c.req), func(t *testing.T) {
			table, problems := Build(snapshot(pathIngress(c.paths...)))
			if len(problems) != 0 {
				t.Fatalf("problems %v", problems)
			}
			got := ""
			if b := table.Match("h", c.req); b != nil {
				got = strings.TrimSuffix(b.service, ":80")
			}
			if got != c.want {
				t.Errorf("matched %q, want %q", got, c.want)
			}
		})
	}
}

// Class selection: tugboat's classes by name, annotation or default.
func TestServed(t *testing.T) {
	own := &v1.IngressClass{Metadata: &v1.ObjectMeta{Name: "tugboat"}, Spec: &v1.IngressClassSpec{Controller: "tugboat.dev/ingress-controller"}}
	def := proto.Clone(own).(*v1.IngressClass)
	def.Metadata.Annotations = map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}
	other := &v1.IngressClass{Metadata: &v1.ObjectMeta{Name: "nginx"}, Spec: &v1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	ing := func(class *string, annotation string) *v1.Ingress {
		i := &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "i"}, Spec: &v1.IngressSpec{IngressClassName: class}}
		if annotation != "" {
			i.Metadata.Annotations = map[string]string{"kubernetes.io/ingress.class": annotation}
		}
		return i
	}
	for _, c := range []struct {
		name    string
		ing     *v1.Ingress
		classes []*v1.IngressClass
		want    bool
	}{
		{"named", ing(proto.String("tugboat"), ""), []*v1.IngressClass{own, other}, true},
		{"other class", ing(proto.String("nginx"), ""), []*v1.IngressClass{own, other}, false},
		{"unknown class", ing(proto.String("gone"), ""), []*v1.IngressClass{def}, false},
		{"unset, tugboat default", ing(nil, ""), []*v1.IngressClass{def, other}, true},
		{"unset, no default", ing(nil, ""), []*v1.IngressClass{own, other}, false},
		{"annotation", ing(nil, "tugboat"), []*v1.IngressClass{own}, true},
		{"annotation of another", ing(nil, "nginx"), []*v1.IngressClass{def, other}, false},
	} {
		if got := Served(c.ing, c.classes); got != c.want {
			t.Errorf("%s: served %v, want %v", c.name, got, c.want)
		}
	}
}

// hasElements walks the path in place; it answers as comparing the
// split elements does.
func TestHasElements(t *testing.T) {
	paths := []string{"/", "", "/foo", "/foo/", "/foo//bar", "//foo/bar/", "/foobar", "/foo/bar/baz", "/fo", "/foo/ba"}
	for _, prefix := range []string{"/", "/foo", "/foo/", "/foo/bar", "/foo//bar/", "/bar"} {
		pe := elements(prefix)
		for _, p := range paths {
			re := elements(p)
			want := len(pe) <= len(re) && slices.Equal(pe, re[:len(pe)])
			if got := hasElements(p, pe); got != want {
				t.Errorf("hasElements(%q, elements(%q)) = %v, want %v", p, prefix, got, want)
			}
		}
	}
}
