package informer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// recorder remembers, per object, every resource version a handler saw.
type recorder struct {
	mu      sync.Mutex
	seen    map[string][]int64
	deleted map[string]bool
}

func (r *recorder) handler() informer.Handler[*v1.ConfigMap] {
	add := func(c *v1.ConfigMap) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen[c.Metadata.Name] = append(r.seen[c.Metadata.Name], c.Metadata.ResourceVersion)
	}
	return informer.Handler[*v1.ConfigMap]{
		OnAdd:    add,
		OnUpdate: func(_, c *v1.ConfigMap) { add(c) },
		OnDelete: func(c *v1.ConfigMap) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.deleted[c.Metadata.Name] = true
		},
	}
}

// TestInformerAcrossApiserverRestart writes while the apiserver restarts
// under a running informer and checks that the informer ends with exactly
// the stored state, saw the final version of every object, and never saw the
// same version twice.
func TestInformerAcrossApiserverRestart(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cms := client.For[*v1.ConfigMap](s.Client)
	inf := informer.New(cms, informer.Options{})
	rec := &recorder{seen: map[string][]int64{}, deleted: map[string]bool{}}
	inf.AddHandler(rec.handler())
	go inf.Run(ctx)
	if !inf.WaitForSync(ctx) {
		t.Fatal("informer never synced")
	}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			name := fmt.Sprint("cm", i%15)
			_, err := cms.Mutate(ctx, "default", name, false, func(c *v1.ConfigMap) error {
				if c.Data == nil {
					c.Data = map[string]string{}
				}
				c.Data["n"] = fmt.Sprint(i)
				return nil
			})
			if err != nil {
				if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: name}, Data: map[string]string{"n": fmt.Sprint(i)}}); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
		}
	}
	write(0, 40)
	s.Restart()
	write(40, 80)
	if _, err := cms.Delete(ctx, "default", "cm3", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	write(80, 100)

	want, rv, err := cms.List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the informer caught up", func() error {
		if got := inf.ResourceVersion(); got < rv {
			return fmt.Errorf("informer at %d, store at %d", got, rv)
		}
		return nil
	})
	if len(inf.List()) != len(want) {
		t.Fatalf("informer has %d objects, store %d", len(inf.List()), len(want))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, c := range want {
		got, ok := inf.Get(v1.Key(c))
		if !ok || got.Metadata.ResourceVersion != c.Metadata.ResourceVersion {
			t.Errorf("%s: cache %v, store %d", c.Metadata.Name, got.GetMetadata().GetResourceVersion(), c.Metadata.ResourceVersion)
		}
		versions := rec.seen[c.Metadata.Name]
		if len(versions) == 0 || versions[len(versions)-1] != c.Metadata.ResourceVersion {
			t.Errorf("%s: handlers never saw the final version %d (saw %v)", c.Metadata.Name, c.Metadata.ResourceVersion, versions)
		}
		for i := 1; i < len(versions); i++ {
			if versions[i] <= versions[i-1] {
				t.Errorf("%s: version %d delivered after %d (duplicate or out of order)", c.Metadata.Name, versions[i], versions[i-1])
			}
		}
	}
	if !rec.deleted["cm3"] {
		t.Error("delete of cm3 was not delivered")
	}
	// With the watch cache's history window, every single change was
	// delivered (no collapsing): 100 writes over 15 objects, one re-created.
	total := 0
	for _, v := range rec.seen {
		total += len(v)
	}
	if total != 100 {
		t.Errorf("handlers saw %d changes, want 100 (one per write)", total)
	}
}

// The cache keeps no managedFields (unless asked), and a controller's
// update of a cached object keeps the stored ones.
func TestInformerTrimsManagedFields(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := client.For[*v1.ConfigMap](s.Client)
	if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "listed", Namespace: "default"}, Data: map[string]string{"a": "1"}}); err != nil {
		t.Fatal(err)
	}
	trimmed := informer.New(cms, informer.Options{})
	kept := informer.New(cms, informer.Options{KeepManagedFields: true})
	go func() { _ = trimmed.Run(ctx) }()
	go func() { _ = kept.Run(ctx) }()
	if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "watched", Namespace: "default"}, Data: map[string]string{"a": "1"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"listed", "watched"} {
		wait.Eventually(t, 30*time.Second, "both informers have "+name, func() error {
			a, ok1 := trimmed.Get("default/" + name)
			b, ok2 := kept.Get("default/" + name)
			if !ok1 || !ok2 {
				return fmt.Errorf("not cached yet")
			}
			if len(a.Metadata.ManagedFields) != 0 {
				t.Fatalf("%s cached with managedFields %v", name, a.Metadata.ManagedFields)
			}
			if len(b.Metadata.ManagedFields) == 0 {
				return fmt.Errorf("KeepManagedFields: %s has none", name)
			}
			return nil
		})
	}
	c, _ := trimmed.Get("default/watched")
	up := proto.Clone(c).(*v1.ConfigMap)
	up.Data["b"] = "2"
	if _, err := cms.Update(ctx, up); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "default", "watched")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Metadata.ManagedFields) == 0 {
		t.Errorf("an update of a trimmed cached object lost the stored managedFields")
	}
}
