package apiserver_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// A ControllerRevision stored before data existed (its pod template in
// field 2) is read with the template in data, on get, list and watch; an
// update stores the new shape, without field 2.
func TestControllerRevisionStoredBeforeData(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	revs := client.For[*v1.ControllerRevision](s.Client)
	template := &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "agent", Image: "agent:1",
			Ports: []*v1.ContainerPort{{ContainerPort: 8080}}}}}}
	head, err := proto.Marshal(&v1.ControllerRevision{Metadata: &v1.ObjectMeta{Name: "agent-1", Namespace: "default", Uid: "u1",
		Labels: map[string]string{"app": "agent"}}, Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := proto.Marshal(template)
	legacy := protowire.AppendBytes(protowire.AppendTag(head, 2, protowire.BytesType), tb)

	w, err := revs.Watch(ctx, client.WatchOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := s.Etcd().Put(ctx, "/registry/controllerrevisions/default/agent-1", string(legacy)); err != nil {
		t.Fatal(err)
	}
	wantTemplate := func(what string, r *v1.ControllerRevision) {
		t.Helper()
		got, err := manifest.RevisionTemplate(r.GetData())
		if err != nil {
			t.Fatalf("%s: %v (data %v)", what, err, r.GetData())
		}
		if !proto.Equal(got, template) {
			t.Fatalf("%s: template %v, want %v", what, got, template)
		}
		if p := r.GetData().GetFields()["spec"].GetStructValue().GetFields()["template"].GetStructValue().GetFields()["$patch"].GetStringValue(); p != "replace" {
			t.Fatalf("%s: data is not the replace patch: %v", what, r.GetData())
		}
	}
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Object.GetMetadata().GetName() == "agent-1" {
			wantTemplate("watched", ev.Object)
			break
		}
	}
	got, err := revs.Get(ctx, "default", "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	wantTemplate("get", got)
	items, _, err := revs.List(ctx, client.ListOptions{Namespace: "default"})
	if err != nil || len(items) != 1 {
		t.Fatalf("list: %v %v", items, err)
	}
	wantTemplate("listed", items[0])

	// A rollback renumbers it: the write stores data, not field 2.
	if _, err := revs.Mutate(ctx, "default", "agent-1", false, func(r *v1.ControllerRevision) error { r.Revision = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Etcd().Get(ctx, "/registry/controllerrevisions/default/agent-1")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw: %v", err)
	}
	var stored v1.ControllerRevision
	if err := proto.Unmarshal(raw.Kvs[0].Value, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.ProtoReflect().GetUnknown()) != 0 || stored.Revision != 3 {
		t.Fatalf("after an update the value still has fields data replaced (or lost the revision): %v", &stored)
	}
	wantTemplate("stored after the update", &stored)
}
