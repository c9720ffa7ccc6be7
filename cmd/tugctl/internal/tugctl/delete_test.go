package tugctl

import (
	"slices"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

func TestDelete(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](e.c)
	for _, n := range []string{"a", "b", "c", "d"} {
		lbl := map[string]string{"app": "x"}
		if n == "a" {
			lbl = nil
		}
		mustCreate(t, e.c, testPod(n, lbl))
	}
	// By name: an unbound pod goes at once.
	if r := mustOK(t, e.run("delete", "pod", "a")); r.out != "pod \"a\" deleted\n" {
		t.Errorf("delete printed %q", r.out)
	}
	if _, err := pods.Get(ctx, "default", "a"); !apierrors.IsNotFound(err) {
		t.Errorf("pod a still there: %v", err)
	}
	// By selector.
	r := mustOK(t, e.run("delete", "po", "-l", "app=x", "--grace-period=0"))
	if r.out != "pod \"b\" deleted\npod \"c\" deleted\npod \"d\" deleted\n" {
		t.Errorf("delete -l printed %q", r.out)
	}
	// Missing objects fail, unless ignored.
	mustFail(t, e.run("delete", "pod", "nope"), `pods "nope" not found`)
	mustOK(t, e.run("delete", "pod/nope", "--ignore-not-found"))
	mustFail(t, e.run("delete", "pods"), "name the objects to delete, or select them with -l SELECTOR or --all")
	mustFail(t, e.run("delete", "pods", "x", "--cascade=sideways"), `--cascade "sideways"`)

	// By manifest.
	f := docsFile(t, "simple-pod.yaml")
	mustOK(t, e.run("apply", "-f", f))
	if r := mustOK(t, e.run("delete", "-f", f)); r.out != "pod \"nginx\" deleted\n" {
		t.Errorf("delete -f printed %q", r.out)
	}

	// A pod bound to a node waits for its kubelet: --wait=false returns at
	// once, a short --timeout says what it is waiting for, and a kubelet
	// finishing the delete ends the wait.
	mustCreate(t, e.c, testPod("bound", nil))
	if _, err := e.c.Bind(ctx, "default", "bound", "node1", 0); err != nil {
		t.Fatal(err)
	}
	mustOK(t, e.run("delete", "pod", "bound", "--wait=false"))
	p, err := pods.Get(ctx, "default", "bound")
	if err != nil || p.Metadata.DeletionTimestamp == nil {
		t.Fatalf("bound pod after delete --wait=false: %v %v", p, err)
	}
	mustFail(t, e.run("delete", "pod", "bound", "--timeout=3s"), `timed out after 3s waiting for pod "bound" to be deleted (waiting for the kubelet on node1`)
	b := e.start("delete", "pod", "bound")
	wait.Eventually(t, 10*time.Second, "delete to print", outputHas(b.out, `pod "bound" deleted`))
	if _, err := pods.Delete(ctx, "default", "bound", client.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err) // what the kubelet does once the containers stopped
	}
	if code := b.wait(t, 10*time.Second); code != 0 {
		t.Errorf("delete exited %d after the pod went: %s", code, b.err.String())
	}
}

func TestDeleteCascade(t *testing.T) {
	e := newEnv(t)
	mustCreate(t, e.c, testDeployment("web", 1, "web:1"))
	mustOK(t, e.run("delete", "deploy/web", "--cascade=orphan", "--wait=false"))
	d, err := client.For[*v1.Deployment](e.c).Get(ctxT(t), "default", "web")
	if err != nil || !slices.Contains(d.Metadata.Finalizers, "orphan") {
		t.Fatalf("deployment after orphan delete: %v %v", d, err)
	}
	mustFail(t, e.run("delete", "deploy/web", "--cascade=orphan", "--timeout=3s"), "waiting for finalizers orphan")
}
