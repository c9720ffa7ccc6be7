package volume_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/volume"
)

// A released local-path volume (reclaim policy Delete) gets a helper pod
// on its node that removes its folder; the volume goes once the helper
// succeeded, and is left Failed with the helper's exit when it failed.
func TestLocalPathVolumeFolderRemovedOnDelete(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	vc, err := volume.New(d, volume.Config{LocalPathDir: "/data/lp", HelperImage: "helper:1"})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, vc)
	pvs, pods := client.For[*v1.PersistentVolume](s.Client), client.For[*v1.Pod](s.Client)
	if _, err := client.For[*v1.Node](s.Client).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	released := func(name string) {
		t.Helper()
		_, err := pvs.Create(ctx, &v1.PersistentVolume{
			Metadata: &v1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": validation.LocalPathProvisioner}},
			Spec: &v1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
				PersistentVolumeReclaimPolicy: "Delete", StorageClassName: "local-path", Local: &v1.LocalVolumeSource{Path: "/data/lp/" + name},
				NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{
					MatchFields: []*v1.LabelSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{"n1"}}}}}}},
				// A claim that is gone: the volume is released.
				ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "gone", Uid: "uid-" + name}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	helper := func(pv string) *v1.Pod {
		t.Helper()
		var p *v1.Pod
		wait.Eventually(t, 20*time.Second, "helper pod of "+pv, func() error {
			var err error
			p, err = pods.Get(ctx, "kube-system", "helper-"+pv)
			return err
		})
		return p
	}
	finish := func(p *v1.Pod, phase string, exit int32) {
		t.Helper()
		next := proto.Clone(p).(*v1.Pod)
		next.Status = &v1.PodStatus{Phase: phase, ContainerStatuses: []*v1.ContainerStatus{{Name: "helper",
			State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exit, Reason: map[bool]string{true: "Completed", false: "Error"}[exit == 0]}}}}}
		if _, err := pods.UpdateStatus(ctx, next); err != nil {
			t.Fatal(err)
		}
	}

	released("pvc-ok")
	p := helper("pvc-ok")
	sp := p.GetSpec()
	if sp.GetNodeName() != "n1" || sp.GetVolumes()[0].GetHostPath().GetPath() != "/data/lp" || sp.GetContainers()[0].GetImage() != "helper:1" ||
		fmt.Sprint(sp.GetContainers()[0].GetCommand()) != "[rm -rf /data/pvc-ok]" || sp.GetRestartPolicy() != "Never" || p.GetMetadata().GetLabels()[volume.HelperLabel] != "pvc-ok" {
		t.Fatalf("helper pod: %v", p)
	}
	if _, err := pvs.Get(ctx, "", "pvc-ok"); err != nil {
		t.Fatalf("the volume went before its folder: %v", err)
	}
	finish(p, "Succeeded", 0)
	wait.Eventually(t, 20*time.Second, "pvc-ok and its helper deleted", func() error {
		_, err := pvs.Get(ctx, "", "pvc-ok")
		_, perr := pods.Get(ctx, "kube-system", "helper-pvc-ok")
		if !apierrors.IsNotFound(err) || !apierrors.IsNotFound(perr) {
			return fmt.Errorf("volume: %v, helper: %v", err, perr)
		}
		return nil
	})

	released("pvc-bad")
	finish(helper("pvc-bad"), "Failed", 1)
	wait.Eventually(t, 20*time.Second, "pvc-bad Failed", func() error {
		pv, err := pvs.Get(ctx, "", "pvc-bad")
		if err != nil {
			return err
		}
		if pv.GetStatus().GetPhase() != "Failed" || pv.GetStatus().GetMessage() == "" {
			return fmt.Errorf("status %v", pv.GetStatus())
		}
		return nil
	})
	t.Logf("failed volume's message: %s", mustGet(t, pvs, "pvc-bad").GetStatus().GetMessage())
}

func mustGet(t *testing.T, api *client.Typed[*v1.PersistentVolume], name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := api.Get(t.Context(), "", name)
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// A released local-path volume whose node is gone gets no helper (it
// would stay Pending): the volume is Failed with reason NodeNotFound and
// an event; a helper made before the node went is deleted; when the node
// registers again a helper removes the folder and the volume goes.
func TestLocalPathVolumeNodeGone(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	vc, err := volume.New(d, volume.Config{LocalPathDir: "/data/lp", HelperImage: "helper:1"})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, vc)
	pvs, pods, nodes := client.For[*v1.PersistentVolume](s.Client), client.For[*v1.Pod](s.Client), client.For[*v1.Node](s.Client)
	released := func(name, node string) {
		t.Helper()
		_, err := pvs.Create(ctx, &v1.PersistentVolume{
			Metadata: &v1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": validation.LocalPathProvisioner}},
			Spec: &v1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
				PersistentVolumeReclaimPolicy: "Delete", StorageClassName: "local-path", Local: &v1.LocalVolumeSource{Path: "/data/lp/" + name},
				NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{
					MatchFields: []*v1.LabelSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{node}}}}}}},
				ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "gone", Uid: "uid-" + name}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	nodeGone := func(name, node string) {
		t.Helper()
		want := fmt.Sprintf("node %q not found: the folder /data/lp/%s was not removed; the volume is reclaimed once the node is back", node, name)
		wait.Eventually(t, 20*time.Second, name+" Failed: node gone", func() error {
			pv, err := pvs.Get(ctx, "", name)
			if err != nil {
				return err
			}
			if st := pv.GetStatus(); st.GetPhase() != "Failed" || st.GetReason() != volume.NodeNotFoundReason || st.GetMessage() != want {
				return fmt.Errorf("status %v", st)
			}
			if _, err := pods.Get(ctx, "kube-system", "helper-"+name); !apierrors.IsNotFound(err) {
				return fmt.Errorf("helper pod: %v", err)
			}
			evs, _, err := client.For[*v1.Event](s.Client).List(ctx, client.ListOptions{Namespace: "default"})
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if ev.GetInvolvedObject().GetName() == name && ev.Reason == "VolumeFailedDelete" && ev.Type == "Warning" && ev.Message == want {
					return nil
				}
			}
			return fmt.Errorf("no VolumeFailedDelete event on %s", name)
		})
	}

	// Never there.
	released("pvc-lost", "n9")
	nodeGone("pvc-lost", "n9")

	// There when the helper is made, then gone: the Pending helper goes.
	if _, err := nodes.Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n2"}}); err != nil {
		t.Fatal(err)
	}
	released("pvc-late", "n2")
	wait.Eventually(t, 20*time.Second, "helper of pvc-late", func() error {
		_, err := pods.Get(ctx, "kube-system", "helper-pvc-late")
		return err
	})
	if _, err := nodes.Delete(ctx, "", "n2", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeGone("pvc-late", "n2")

	// n9 registers: the volume is reclaimed after all.
	if _, err := nodes.Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n9"}}); err != nil {
		t.Fatal(err)
	}
	var helper *v1.Pod
	wait.Eventually(t, 20*time.Second, "a helper of pvc-lost once n9 is back", func() error {
		var err error
		helper, err = pods.Get(ctx, "kube-system", "helper-pvc-lost")
		return err
	})
	if helper.GetSpec().GetNodeName() != "n9" {
		t.Fatalf("helper on %q", helper.GetSpec().GetNodeName())
	}
	next := proto.Clone(helper).(*v1.Pod)
	next.Status = &v1.PodStatus{Phase: "Succeeded"}
	if _, err := pods.UpdateStatus(ctx, next); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "pvc-lost deleted", func() error {
		if _, err := pvs.Get(ctx, "", "pvc-lost"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("volume: %v", err)
		}
		return nil
	})
	// pvc-late's node is still gone: it stays Failed.
	if st := mustGet(t, pvs, "pvc-late").GetStatus(); st.GetReason() != volume.NodeNotFoundReason {
		t.Fatalf("pvc-late: %v", st)
	}
}
