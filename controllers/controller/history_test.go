package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
)

func TestCanonicalTemplate(t *testing.T) {
	plain := &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "a"}},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "i"}}}}
	if controller.CanonicalTemplate(plain) != plain {
		t.Error("a canonical template was copied")
	}
	// What kubectl rollout undo sends back: resources: {} on every
	// container, metadata: {} on a template without labels.
	undone := &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "i", Resources: &v1.ResourceRequirements{}}},
			InitContainers: []*v1.Container{{Name: "init", Image: "i", Resources: &v1.ResourceRequirements{}}}}}
	c := controller.CanonicalTemplate(undone)
	if c.Metadata != nil || c.Spec.Containers[0].Resources != nil || c.Spec.InitContainers[0].Resources != nil {
		t.Errorf("canonical template %v", c)
	}
	if undone.Metadata == nil || undone.Spec.Containers[0].Resources == nil {
		t.Error("CanonicalTemplate changed its argument")
	}
	limited := &v1.PodTemplateSpec{Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c",
		Resources: &v1.ResourceRequirements{Limits: map[string]string{"cpu": "1"}}}}}}
	if controller.CanonicalTemplate(limited).Spec.Containers[0].Resources == nil {
		t.Error("resources with limits dropped")
	}
}

// staticRevisions is a Source of the revisions the test listed last.
type staticRevisions struct {
	controller.Source[*v1.ControllerRevision]
	revs []*v1.ControllerRevision
}

func (s *staticRevisions) ByIndex(string, string) []*v1.ControllerRevision { return s.revs }

// TestHistoryCurrent: a template gets a revision named by its canonical
// hash; the same template sent back with resources: {} (kubectl rollout
// undo) finds that revision; a revision stored under the hash of the
// template as it was (before canonical hashing) keeps being used.
func TestHistoryCurrent(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	api := client.For[*v1.ControllerRevision](srv.Client)
	src := &staticRevisions{}
	h := controller.History{API: api, Source: src, Kind: "DaemonSet"}
	owner := &v1.DaemonSet{Metadata: &v1.ObjectMeta{Name: "agent", Namespace: "default", Uid: "u1"}}
	list := func() {
		t.Helper()
		l, _, err := api.List(ctx, client.ListOptions{Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		src.revs = l
	}
	tmpl := func(image string, res *v1.ResourceRequirements) *v1.PodTemplateSpec {
		return &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: image, Resources: res}}}}
	}
	h1, err := h.Current(ctx, owner, tmpl("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	list()
	if _, err := h.Current(ctx, owner, tmpl("b", nil)); err != nil {
		t.Fatal(err)
	}
	list()
	back, err := h.Current(ctx, owner, tmpl("a", &v1.ResourceRequirements{}))
	if err != nil || back != h1 {
		t.Fatalf("template a sent back with resources {}: hash %s %v, want revision %s", back, err, h1)
	}
	wait.Eventually(t, 10*time.Second, "revision "+h1+" renumbered 3", func() error {
		r, err := api.Get(ctx, "default", "agent-"+h1)
		if err != nil {
			return err
		}
		if r.GetRevision() != 3 {
			return fmt.Errorf("revision %d", r.GetRevision())
		}
		return nil
	})
	list()
	if len(src.revs) != 2 {
		t.Fatalf("%d revisions, want 2 (no new one for the rolled-back template)", len(src.revs))
	}

	// A revision named by the hash of a template as stored (resources {}),
	// as a Tugboat before canonical hashing made it: still this template's.
	legacyTmpl := tmpl("c", &v1.ResourceRequirements{})
	legacy := controller.TemplateHash(legacyTmpl)
	if _, err := api.Create(ctx, &v1.ControllerRevision{Metadata: &v1.ObjectMeta{Name: "agent-" + legacy, Namespace: "default"},
		Revision: 4, Data: src.revs[0].Data}); err != nil {
		t.Fatal(err)
	}
	list()
	if got, err := h.Current(ctx, owner, legacyTmpl); err != nil || got != legacy {
		t.Errorf("a template with a revision under its old hash: %s %v, want %s", got, err, legacy)
	}
}
