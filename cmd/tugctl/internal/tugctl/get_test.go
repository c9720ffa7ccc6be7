package tugctl

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/deploy"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
)

func testPod(name string, lbl map[string]string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Labels: lbl},
		Spec:     &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1"}}},
	}
}

func setPodStatus(t *testing.T, c *client.Client, name string, st *v1.PodStatus) {
	t.Helper()
	if _, err := client.For[*v1.Pod](c).Mutate(ctxT(t), "default", name, true, func(p *v1.Pod) error {
		p.Status = st
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestGetPodTables(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	mustCreate(t, e.c, testPod("web", map[string]string{"app": "web"}))
	mustCreate(t, e.c, testPod("crash", map[string]string{"app": "db"}))
	mustCreate(t, e.c, testPod("going", nil))
	setPodStatus(t, e.c, "web", &v1.PodStatus{
		Phase: "Running", PodIp: "10.244.1.5",
		Conditions:        []*v1.Condition{{Type: "Ready", Status: "True"}},
		ContainerStatuses: []*v1.ContainerStatus{{Name: "c", Ready: true, State: &v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
	})
	setPodStatus(t, e.c, "crash", &v1.PodStatus{
		Phase: "Running",
		ContainerStatuses: []*v1.ContainerStatus{{
			Name: "c", RestartCount: 4,
			State:     &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastState: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: timestamppb.New(time.Now().Add(-90 * time.Second))}},
		}},
	})
	if _, err := e.c.Bind(ctx, "default", "web", "node1", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Bind(ctx, "default", "going", "node1", 0); err != nil {
		t.Fatal(err)
	}
	// A bound pod's delete is graceful: it shows as Terminating.
	if _, err := client.For[*v1.Pod](e.c).Delete(ctx, "default", "going", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	r := mustOK(t, e.run("get", "pods"))
	if h := fieldsOf(r.out)[0]; strings.Join(h, " ") != "NAME READY STATUS RESTARTS AGE" {
		t.Errorf("header = %v", h)
	}
	if got := row(t, r.out, "web"); got[1] != "1/1" || got[2] != "Running" || got[3] != "0" {
		t.Errorf("web row = %v", got)
	}
	if got := row(t, r.out, "crash"); got[1] != "0/1" || got[2] != "CrashLoopBackOff" || got[3] != "4" || got[4] != "(90s" {
		t.Errorf("crash row = %v", got)
	}
	if got := row(t, r.out, "going"); got[2] != "Terminating" {
		t.Errorf("going row = %v", got)
	}
	r = mustOK(t, e.run("get", "po", "web", "-o", "wide"))
	if got := row(t, r.out, "web"); len(got) != 7 || got[5] != "10.244.1.5" || got[6] != "node1" {
		t.Errorf("wide row = %v\n%s", got, r.out)
	}
	if h := fieldsOf(r.out)[0]; strings.Join(h, " ") != "NAME READY STATUS RESTARTS AGE IP NODE" {
		t.Errorf("wide header = %v", h)
	}
	// Selectors, names and output forms.
	if r := mustOK(t, e.run("get", "pods", "-l", "app=db", "-o", "name")); r.out != "pod/crash\n" {
		t.Errorf("-l -o name printed %q", r.out)
	}
	if r := mustOK(t, e.run("get", "pods", "--field-selector", "spec.nodeName=node1", "-o", "name")); r.out != "pod/going\npod/web\n" {
		t.Errorf("--field-selector printed %q", r.out)
	}
	if r := mustOK(t, e.run("get", "pod/web", "pods/crash", "-o", "name")); r.out != "pod/web\npod/crash\n" {
		t.Errorf("KIND/NAME printed %q", r.out)
	}
	r = mustOK(t, e.run("get", "pods", "-A", "--show-labels"))
	if got := row(t, r.out, "default"); got[1] != "crash" || got[len(got)-1] != "app=db" {
		t.Errorf("-A row = %v\n%s", got, r.out)
	}
	// Missing objects are reported and make the exit status 1.
	r = e.run("get", "pods", "web", "nope")
	mustFail(t, r, `Error from server (NotFound): pods "nope" not found`)
	if !strings.Contains(r.out, "web") {
		t.Errorf("the found pod was not printed: %v", r)
	}
	r = mustOK(t, e.run("get", "pods", "-l", "app=none"))
	if r.err != "No resources found in default namespace.\n" {
		t.Errorf("empty list stderr = %q", r.err)
	}
	mustFail(t, e.run("get", "pdos"), `the server doesn't have a resource type "pdos"`)
	mustFail(t, e.run("get", "pods", "-o", "xml"), `--output "xml"`)
	mustFail(t, e.run("get", "pods", "--field-selector", "spec.nope=1"), "spec.nope")
}

func TestGetOtherTables(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	mustCreate(t, e.c, &v1.Node{
		Metadata: &v1.ObjectMeta{Name: "node1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		Spec:     &v1.NodeSpec{Unschedulable: true},
	})
	mustCreate(t, e.c, &v1.Node{Metadata: &v1.ObjectMeta{Name: "node2"}})
	if _, err := client.For[*v1.Node](e.c).Mutate(ctx, "", "node1", true, func(n *v1.Node) error {
		n.Status = &v1.NodeStatus{
			Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}},
			NodeInfo:   &v1.NodeSystemInfo{KubeletVersion: "v0.1.0"},
			Addresses:  []*v1.NodeAddress{{Type: "InternalIP", Address: "10.0.0.1"}},
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := mustOK(t, e.run("get", "no"))
	if h := strings.Join(fieldsOf(r.out)[0], " "); h != "NAME STATUS ROLES AGE VERSION" {
		t.Errorf("nodes header = %s", h)
	}
	if got := row(t, r.out, "node1"); got[1] != "Ready,SchedulingDisabled" || got[2] != "control-plane" || got[4] != "v0.1.0" {
		t.Errorf("node1 row = %v", got)
	}
	if got := row(t, r.out, "node2"); got[1] != "Unknown" || got[2] != "<none>" {
		t.Errorf("node2 row = %v", got)
	}
	if got := row(t, mustOK(t, e.run("get", "nodes", "-o", "wide")).out, "node1"); got[5] != "10.0.0.1" {
		t.Errorf("node1 wide row = %v", got)
	}

	mustOK(t, e.run("apply", "-f", docsFile(t, "nodeport-service.yaml")))
	r = mustOK(t, e.run("get", "svc"))
	if h := strings.Join(fieldsOf(r.out)[0], " "); h != "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE" {
		t.Errorf("services header = %s", h)
	}
	if got := row(t, r.out, "my-service"); got[1] != "NodePort" || got[3] != "<none>" || got[4] != "80:30007/TCP" {
		t.Errorf("service row = %v", got)
	}
	if got := row(t, mustOK(t, e.run("get", "services", "-o", "wide")).out, "my-service"); got[6] != "app.kubernetes.io/name=MyApp" {
		t.Errorf("service wide row = %v", got)
	}

	mustCreate(t, e.c, &v1.Endpoints{
		Metadata: &v1.ObjectMeta{Name: "my-service", Namespace: "default"},
		Subsets: []*v1.EndpointSubset{{
			Addresses: []*v1.EndpointAddress{{Ip: "10.244.0.1"}, {Ip: "10.244.0.2"}, {Ip: "10.244.0.3"}, {Ip: "10.244.0.4"}},
			Ports:     []*v1.EndpointPort{{Port: 9376}},
		}},
	})
	r = mustOK(t, e.run("get", "ep"))
	if !strings.Contains(r.out, "10.244.0.1:9376,10.244.0.2:9376,10.244.0.3:9376 + 1 more...") {
		t.Errorf("endpoints table:\n%s", r.out)
	}

	mustCreate(t, e.c, &v1.Event{
		Metadata:       &v1.ObjectMeta{Name: "ev1", Namespace: "default"},
		InvolvedObject: &v1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default"},
		Reason:         "BackOff", Message: "Back-off restarting failed container", Type: "Warning",
		LastTimestamp: timestamppb.New(time.Now().Add(-5 * time.Second)),
	})
	r = mustOK(t, e.run("get", "events"))
	if h := strings.Join(fieldsOf(r.out)[0], " "); h != "LAST SEEN TYPE REASON OBJECT MESSAGE" {
		t.Errorf("events header = %s", h)
	}
	if !strings.Contains(r.out, "Warning   BackOff   pod/web   Back-off restarting failed container") {
		t.Errorf("events table:\n%s", r.out)
	}

	mustCreate(t, e.c, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"a": "1", "b": "2"}})
	mustCreate(t, e.c, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "sec", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v")}})
	if got := row(t, mustOK(t, e.run("get", "cm")).out, "cfg"); got[1] != "2" {
		t.Errorf("configmap row = %v", got)
	}
	if got := row(t, mustOK(t, e.run("get", "secrets")).out, "sec"); got[1] != "Opaque" || got[2] != "1" {
		t.Errorf("secret row = %v", got)
	}
	if got := row(t, mustOK(t, e.run("get", "ns")).out, "default"); got[1] != "Active" {
		t.Errorf("namespace row = %v", got)
	}
	// Several kinds at once print kind/name.
	r = mustOK(t, e.run("get", "cm,secrets"))
	if !strings.Contains(r.out, "configmap/cfg") || !strings.Contains(r.out, "secret/sec") {
		t.Errorf("cm,secrets:\n%s", r.out)
	}
}

func TestGetDeploymentAndReplicaSetTables(t *testing.T) {
	e := newEnv(t)
	d := mustCreate(t, e.c, testDeployment("web", 3, "web:1"))
	rs := mustCreate(t, e.c, testReplicaSet(d, "web-abc", "abc", 1, 3, "web:1"))
	setDeploymentStatus(t, e.c, "web", func(st *v1.DeploymentStatus) {
		st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas = 3, 3, 2, 2
	})
	if _, err := client.For[*v1.ReplicaSet](e.c).Mutate(ctxT(t), "default", rs.Metadata.Name, true, func(r *v1.ReplicaSet) error {
		r.Status = &v1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := mustOK(t, e.run("get", "deploy"))
	if h := strings.Join(fieldsOf(r.out)[0], " "); h != "NAME READY UP-TO-DATE AVAILABLE AGE" {
		t.Errorf("deployments header = %s", h)
	}
	if got := row(t, r.out, "web"); got[1] != "2/3" || got[2] != "3" || got[3] != "2" {
		t.Errorf("deployment row = %v", got)
	}
	r = mustOK(t, e.run("get", "rs", "-o", "wide"))
	if h := strings.Join(fieldsOf(r.out)[0], " "); h != "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR" {
		t.Errorf("replicasets header = %s", h)
	}
	if got := row(t, r.out, "web-abc"); got[1] != "3" || got[2] != "3" || got[3] != "2" || got[6] != "web:1" || got[7] != "app=web,pod-template-hash=abc" {
		t.Errorf("replicaset row = %v", got)
	}
}

// get -w prints the table, then a row for each change.
func TestGetWatch(t *testing.T) {
	e := newEnv(t)
	mustCreate(t, e.c, testPod("first", nil))
	b := e.start("get", "pods", "-w")
	wait.Eventually(t, 10*time.Second, "the initial table", outputHas(b.out, "first"))
	mustCreate(t, e.c, testPod("second", nil))
	setPodStatus(t, e.c, "second", &v1.PodStatus{Phase: "Running"})
	wait.Eventually(t, 10*time.Second, "rows for the new pod", outputHas(b.out, "second   0/1     Running"))
	if _, err := client.For[*v1.Pod](e.c).Delete(ctxT(t), "default", "first", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "a row for the deleted pod", func() error {
		if out := b.out.String(); strings.Count(out, "first") != 2 {
			return fmt.Errorf("output so far: %q", out)
		}
		return nil
	})
	b.cancel()
	if code := b.wait(t, 10*time.Second); code != 0 {
		t.Errorf("get -w exited %d after cancel", code)
	}
	lines := strings.Split(strings.TrimSpace(b.out.String()), "\n")
	if !strings.HasPrefix(lines[0], "NAME ") || strings.Count(b.out.String(), "NAME") != 1 {
		t.Errorf("watch output should have one header:\n%s", b.out.String())
	}

	// -o yaml watch prints documents.
	y := e.start("get", "pods", "-w", "-o", "yaml")
	wait.Eventually(t, 10*time.Second, "the initial list", outputHas(y.out, "name: second"))
	mustCreate(t, e.c, testPod("third", nil))
	wait.Eventually(t, 10*time.Second, "the new pod's document", outputHas(y.out, "---\napiVersion: v1\nkind: Pod"))
}

func testDeployment(name string, replicas int32, image string) *v1.Deployment {
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.DeploymentSpec{
			Replicas: proto.Int32(replicas),
			Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:     &v1.PodSpec{Containers: []*v1.Container{{Name: name, Image: image}}},
			},
		},
	}
}

// testReplicaSet is what the deployment controller makes: d's template
// with image, the hash label, owned by d, annotated with its revision.
func testReplicaSet(d *v1.Deployment, name, hash string, rev int, replicas int32, image string) *v1.ReplicaSet {
	tmpl := proto.Clone(d.Spec.Template).(*v1.PodTemplateSpec)
	tmpl.Metadata.Labels[revision.PodTemplateHashLabel] = hash
	tmpl.Spec.Containers[0].Image = image
	sel := proto.Clone(d.Spec.Selector).(*v1.LabelSelector)
	sel.MatchLabels[revision.PodTemplateHashLabel] = hash
	return &v1.ReplicaSet{
		Metadata: &v1.ObjectMeta{
			Name: name, Namespace: "default", Labels: tmpl.Metadata.Labels,
			Annotations:     map[string]string{revision.Annotation: itoaRev(rev), deploy.ChangeCauseAnnotation: "image " + image},
			OwnerReferences: []*v1.OwnerReference{{ApiVersion: "apps/v1", Kind: "Deployment", Name: d.Metadata.Name, Uid: d.Metadata.Uid, Controller: true}},
		},
		Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(replicas), Selector: sel, Template: tmpl},
	}
}

func itoaRev(n int) string { return strconv.Itoa(n) }

func setDeploymentStatus(t *testing.T, c *client.Client, name string, fn func(*v1.DeploymentStatus)) {
	t.Helper()
	if _, err := client.For[*v1.Deployment](c).Mutate(ctxT(t), "default", name, true, func(d *v1.Deployment) error {
		if d.Status == nil {
			d.Status = &v1.DeploymentStatus{}
		}
		d.Status.ObservedGeneration = d.Metadata.Generation
		fn(d.Status)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// -o yaml|json leaves metadata.managedFields out unless
// --show-managed-fields, as kubectl; the entries are there: the test
// client's create and tugctl label's Update.
func TestGetManagedFields(t *testing.T) {
	e := newEnv(t)
	mustCreate(t, e.c, testPod("web", map[string]string{"app": "web"}))
	mustOK(t, e.run("label", "pod", "web", "tier=front"))
	p, err := client.For[*v1.Pod](e.c).Get(ctxT(t), "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]string{}
	for _, m := range p.Metadata.ManagedFields {
		managers[m.Manager] = m.Operation
	}
	if len(managers) != 2 {
		t.Fatalf("managedFields after create and label: %v", p.Metadata.ManagedFields)
	}
	for _, args := range [][]string{{"-o", "yaml"}, {"-o", "json"}, {"-o", "jsonpath={.metadata.managedFields}"}} {
		r := mustOK(t, e.run(append([]string{"get", "pod", "web"}, args...)...))
		if strings.Contains(r.out, "managedFields") || strings.Contains(r.out, "operation") {
			t.Errorf("get %v shows managedFields:\n%s", args, r.out)
		}
	}
	r := mustOK(t, e.run("get", "pod", "web", "-o", "yaml", "--show-managed-fields"))
	for m := range managers {
		if !strings.Contains(r.out, "manager: "+m) {
			t.Errorf("get -o yaml --show-managed-fields lacks manager %s:\n%s", m, r.out)
		}
	}
	if !strings.Contains(r.out, "operation: Update") || !strings.Contains(r.out, "f:tier: {}") {
		t.Errorf("get -o yaml --show-managed-fields:\n%s", r.out)
	}
}
