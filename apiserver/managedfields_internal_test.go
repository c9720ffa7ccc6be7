package apiserver

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The default manager is the user agent's prefix, as Kubernetes'
// prefixFromUserAgent, cut at grpc-go's " grpc-go/1.x" too; an explicit
// fieldManager wins and is validated as Kubernetes does.
func TestFieldOwner(t *testing.T) {
	withUA := func(ua string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs("user-agent", ua))
	}
	for _, tc := range []struct {
		ctx          context.Context
		fieldManager string
		want, err    string
	}{
		{withUA("kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), "", "kubectl", ""},
		{withUA("kubelet/node-1 grpc-go/1.80.0"), "", "kubelet", ""},
		{withUA("tugboat-controller-manager grpc-go/1.80.0"), "", "tugboat-controller-manager", ""},
		{withUA("Go-http-client/2.0"), "", "Go-http-client", ""},
		{withUA("a\x07b/1"), "", "ab", ""},
		{withUA(strings.Repeat("x", 200)), "", strings.Repeat("x", 128), ""},
		{withUA("kubectl/v1.32.0"), "kubectl-label", "kubectl-label", ""},
		{context.Background(), "", "unknown", ""},
		{context.Background(), strings.Repeat("m", 129), "", "fieldManager: Too long: may not be more than 128 bytes"},
		{context.Background(), "a\x07b", "", `fieldManager: Invalid value: "a\ab": invalid character U+0007 (at position 1)`},
	} {
		o, err := ownerOf(tc.ctx, tc.fieldManager, "status")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ownerOf(%q): err %v, want %q", tc.fieldManager, err, tc.err)
			}
			continue
		}
		if err != nil || o.manager != tc.want || o.subresource != "status" {
			t.Errorf("ownerOf(%q) = %+v, %v; want manager %q", tc.fieldManager, o, err, tc.want)
		}
	}
}

func mfPod() *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "tugboat.local/busybox:latest", Command: []string{"sleep", "3600"},
			Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "10m"}}}}}}
}

// A create gives its manager the fields it set; a later update by another
// manager moves the changed field to it and leaves the rest; a no-op
// update keeps the entries as they were (time included); a status write
// is an entry of its own that owns only status.
func TestRecordUpdate(t *testing.T) {
	s := &Server{}
	k, _ := kinds.Lookup("Pod")
	p := mfPod()
	if err := s.recordUpdateErr(k, fieldOwner{manager: "creator"}, nil, p); err != nil {
		t.Fatal(err)
	}
	mf := p.Metadata.ManagedFields
	if len(mf) != 1 || mf[0].Manager != "creator" || mf[0].Operation != "Update" || mf[0].ApiVersion != "v1" || mf[0].FieldsType != "FieldsV1" {
		t.Fatalf("after create: %v", mf)
	}
	next := proto.Clone(p).(*v1.Pod)
	next.Metadata.Labels["app"] = "api"
	if err := s.recordUpdateErr(k, fieldOwner{manager: "labeler"}, p, next); err != nil {
		t.Fatal(err)
	}
	byManager := map[string]map[string]any{}
	for _, e := range next.Metadata.ManagedFields {
		byManager[e.Manager] = e.FieldsV1.AsMap()
	}
	labelsOf := func(m map[string]any) map[string]any {
		md, _ := m["f:metadata"].(map[string]any)
		l, _ := md["f:labels"].(map[string]any)
		return l
	}
	if _, ok := labelsOf(byManager["labeler"])["f:app"]; !ok {
		t.Errorf("labeler does not own metadata.labels.app: %v", byManager)
	}
	if _, ok := labelsOf(byManager["creator"])["f:app"]; ok {
		t.Errorf("creator still owns metadata.labels.app: %v", byManager)
	}
	if _, ok := byManager["creator"]["f:spec"]; !ok {
		t.Errorf("creator lost spec: %v", byManager)
	}
	again := proto.Clone(next).(*v1.Pod)
	if err := s.recordUpdateErr(k, fieldOwner{manager: "noop"}, next, again); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(again, next) {
		t.Errorf("a no-op update changed managedFields:\n%v\n%v", next.Metadata.ManagedFields, again.Metadata.ManagedFields)
	}
	st := proto.Clone(next).(*v1.Pod)
	st.Status = &v1.PodStatus{Phase: "Running"}
	if err := s.recordUpdateErr(k, fieldOwner{manager: "kubelet", subresource: "status"}, next, st); err != nil {
		t.Fatal(err)
	}
	var kubelet *v1.ManagedFieldsEntry
	for _, e := range st.Metadata.ManagedFields {
		if e.Manager == "kubelet" {
			kubelet = e
		}
	}
	if kubelet == nil || kubelet.Subresource != "status" {
		t.Fatalf("status write: %v", st.Metadata.ManagedFields)
	}
	if m := kubelet.FieldsV1.AsMap(); len(m) != 1 || m["f:status"] == nil {
		t.Errorf("the status entry owns %v, want status only", m)
	}
}

// BenchmarkRecordUpdate is the field manager's cost per write of a pod:
// a create and an update of one label.
func BenchmarkRecordUpdate(b *testing.B) {
	s := &Server{}
	k, _ := kinds.Lookup("Pod")
	base := mfPod()
	if err := s.recordUpdateErr(k, fieldOwner{manager: "creator"}, nil, base); err != nil {
		b.Fatal(err)
	}
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			p := mfPod()
			if err := s.recordUpdateErr(k, fieldOwner{manager: "creator"}, nil, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			next := proto.Clone(base).(*v1.Pod)
			next.Metadata.Labels["app"] = "api"
			if err := s.recordUpdateErr(k, fieldOwner{manager: "labeler"}, base, next); err != nil {
				b.Fatal(err)
			}
		}
	})
}
