package volume_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/volume"
)

type pvOpt func(*v1.PersistentVolume)

func pv(name, size string, opts ...pvOpt) *v1.PersistentVolume {
	p := &v1.PersistentVolume{Metadata: &v1.ObjectMeta{Name: name},
		Spec: &v1.PersistentVolumeSpec{Capacity: map[string]string{"storage": size}, AccessModes: []string{"ReadWriteOnce"},
			HostPath: &v1.HostPathVolumeSource{Path: "/srv/" + name}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func class(c string) pvOpt { return func(p *v1.PersistentVolume) { p.Spec.StorageClassName = c } }
func onZone(zone string) pvOpt {
	return func(p *v1.PersistentVolume) {
		p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{
			MatchExpressions: []*v1.LabelSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{zone}}}}}}}
	}
}

type bindEnv struct {
	ctx  context.Context
	c    *client.Client
	pvs  *client.Typed[*v1.PersistentVolume]
	pvcs *client.Typed[*v1.PersistentVolumeClaim]
}

func startVolumeController(t *testing.T) *bindEnv {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 2*time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	vc, err := volume.New(d, volume.Config{LocalPathDir: "/data/lp", HelperImage: "helper:1"})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, vc)
	return &bindEnv{ctx: ctx, c: s.Client, pvs: client.For[*v1.PersistentVolume](s.Client), pvcs: client.For[*v1.PersistentVolumeClaim](s.Client)}
}

func (e *bindEnv) create(t *testing.T, obj v1.Object) {
	t.Helper()
	var err error
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		_, err = e.pvs.Create(e.ctx, o)
	case *v1.PersistentVolumeClaim:
		_, err = e.pvcs.Create(e.ctx, o)
	case *v1.StorageClass:
		_, err = client.For[*v1.StorageClass](e.c).Create(e.ctx, o)
	case *v1.Node:
		_, err = client.For[*v1.Node](e.c).Create(e.ctx, o)
	case *v1.Pod:
		_, err = client.For[*v1.Pod](e.c).Create(e.ctx, o)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// event waits for an Event on the named object with reason and message.
func (e *bindEnv) event(t *testing.T, ns, name, reason, message string) {
	t.Helper()
	wait.Eventually(t, 20*time.Second, reason+" on "+name, func() error {
		evs, _, err := client.For[*v1.Event](e.c).List(e.ctx, client.ListOptions{Namespace: ns})
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range evs {
			if ev.GetInvolvedObject().GetName() != name {
				continue
			}
			if ev.Reason == reason && ev.Message == message {
				return nil
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return fmt.Errorf("events of %s: %s", name, strings.Join(seen, " | "))
	})
}

func (e *bindEnv) boundTo(t *testing.T, claim, volumeName string) {
	t.Helper()
	wait.Eventually(t, 20*time.Second, claim+" bound to "+volumeName, func() error {
		c, err := e.pvcs.Get(e.ctx, "default", claim)
		if err != nil {
			return err
		}
		if c.GetSpec().GetVolumeName() != volumeName || c.GetStatus().GetPhase() != "Bound" {
			return fmt.Errorf("volumeName %q, phase %q", c.GetSpec().GetVolumeName(), c.GetStatus().GetPhase())
		}
		return nil
	})
}

func newClaim(name, size string, class *string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: class,
			Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": size}}}}
}

// The binder checks capacity: a 10Gi claim without class stays Pending
// beside a 1Gi volume, with Kubernetes' event, and takes the smallest
// volume large enough once there is one; a claim naming a too small
// volume is refused with Kubernetes' reason.
func TestClaimCapacity(t *testing.T) {
	e := startVolumeController(t)
	none := ""
	e.create(t, pv("one-gi", "1Gi"))
	e.create(t, newClaim("big", "10Gi", &none))
	e.event(t, "default", "big", "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
	if c, _ := e.pvcs.Get(e.ctx, "default", "big"); c.GetSpec().GetVolumeName() != "" || c.GetStatus().GetPhase() != "Pending" {
		t.Fatalf("the 10Gi claim: %v %v", c.GetSpec(), c.GetStatus())
	}
	e.create(t, pv("twelve-gi", "12Gi"))
	e.create(t, pv("twenty-gi", "20Gi"))
	e.boundTo(t, "big", "twelve-gi")
	if v, _ := e.pvs.Get(e.ctx, "", "one-gi"); v.GetSpec().GetClaimRef() != nil {
		t.Fatalf("the 1Gi volume was claimed: %v", v.GetSpec().GetClaimRef())
	}

	asks := newClaim("asks", "10Gi", &none)
	asks.Spec.VolumeName = "one-gi"
	e.create(t, asks)
	e.event(t, "default", "asks", "FailedBinding", `Cannot bind to requested volume "one-gi": requested PV is too small`)
	if v, _ := e.pvs.Get(e.ctx, "", "one-gi"); v.GetSpec().GetClaimRef() != nil {
		t.Fatalf("the 1Gi volume was given to a 10Gi claim: %v", v.GetSpec().GetClaimRef())
	}
	fits := newClaim("fits", "1Gi", &none)
	fits.Spec.VolumeName = "one-gi"
	e.create(t, fits)
	e.boundTo(t, "fits", "one-gi")
}

// A WaitForFirstConsumer claim says which pod it waits for; once the
// scheduler selects a node, it binds to the volume whose node affinity
// admits the node's labels. A selected node that is gone is dropped.
func TestWaitForFirstConsumer(t *testing.T) {
	e := startVolumeController(t)
	manual, local := "manual", "local-path"
	e.create(t, &v1.StorageClass{Metadata: &v1.ObjectMeta{Name: manual}, Provisioner: validation.NoProvisioner, VolumeBindingMode: proto.String("WaitForFirstConsumer")})
	e.create(t, newClaim("data", "1Gi", &manual))
	e.event(t, "default", "data", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
	e.create(t, &v1.Pod{Metadata: &v1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: &v1.PodSpec{
		Containers: []*v1.Container{{Name: "app", Image: "app:1"}},
		Volumes:    []*v1.Volume{{Name: "data", PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}})
	e.event(t, "default", "data", "WaitForPodScheduled", "waiting for pod app to be scheduled")

	e.create(t, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1", Labels: map[string]string{"topology.kubernetes.io/zone": "a"}}})
	e.create(t, pv("zone-b", "1Gi", class(manual), onZone("b")))
	e.create(t, pv("zone-a", "5Gi", class(manual), onZone("a")))
	if _, err := e.pvcs.Mutate(e.ctx, "default", "data", false, func(c *v1.PersistentVolumeClaim) error {
		c.Metadata.Annotations = map[string]string{volume.SelectedNodeAnnotation: "n1"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.boundTo(t, "data", "zone-a")

	ghost := newClaim("ghost", "1Gi", &local)
	ghost.Metadata.Annotations = map[string]string{volume.SelectedNodeAnnotation: "gone-node"}
	e.create(t, ghost)
	e.event(t, "default", "ghost", "ProvisioningFailed", `failed to get target node: node "gone-node" not found; the node selection is removed so that the scheduler selects another`)
	wait.Eventually(t, 20*time.Second, "the selection dropped", func() error {
		c, err := e.pvcs.Get(e.ctx, "default", "ghost")
		if err != nil {
			return err
		}
		if _, ok := c.GetMetadata().GetAnnotations()[volume.SelectedNodeAnnotation]; ok || c.GetSpec().GetVolumeName() != "" {
			return fmt.Errorf("claim %v %v", c.GetMetadata().GetAnnotations(), c.GetSpec())
		}
		return nil
	})
	if _, err := e.pvs.Get(e.ctx, "", "pvc-"+mustClaim(t, e, "ghost").GetMetadata().GetUid()); err == nil {
		t.Fatal("a volume was provisioned on a node that is gone")
	}
}

func mustClaim(t *testing.T, e *bindEnv, name string) *v1.PersistentVolumeClaim {
	t.Helper()
	c, err := e.pvcs.Get(e.ctx, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
