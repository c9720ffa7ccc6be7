package kubeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// nginx is the Kubernetes docs' Deployment and Service (the image swapped
// for a local one).
const nginx = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: tugboat.local/echo:latest
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: my-service
spec:
  selector:
    app.kubernetes.io/name: MyApp
  ports:
    - protocol: TCP
      port: 80
      targetPort: 9376
`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func testKubectlApplyGet(t *testing.T, e *env) {
	f := write(t, t.TempDir(), "nginx.yaml", nginx)
	out := e.kubectl(t, "apply", "-f", f)
	if !strings.Contains(out, "deployment.apps/nginx-deployment created") || !strings.Contains(out, "service/my-service created") {
		t.Fatalf("apply: %s", out)
	}
	d := e.deployment(t, "nginx-deployment")
	if d.Spec.GetReplicas() != 3 || d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort != 80 {
		t.Fatalf("stored deployment: %v", d.Spec)
	}
	svc, err := client.For[*v1.Service](e.srv.Client).Get(context.Background(), "default", "my-service")
	if err != nil || svc.Spec.ClusterIp == "" || svc.Spec.Ports[0].TargetPort != "9376" {
		t.Fatalf("stored service: %v %v", svc, err)
	}
	// A second apply of the same file changes nothing.
	if out := e.kubectl(t, "apply", "-f", f); !strings.Contains(out, "unchanged") {
		t.Fatalf("re-apply: %s", out)
	}

	out = e.kubectl(t, "get", "deployments")
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "READY") || !strings.Contains(out, "nginx-deployment") {
		t.Fatalf("get deployments:\n%s", out)
	}
	out = e.kubectl(t, "get", "deploy", "nginx-deployment", "-o", "wide")
	for _, want := range []string{"CONTAINERS", "IMAGES", "SELECTOR", "tugboat.local/echo:latest", "app=nginx"} {
		if !strings.Contains(out, want) {
			t.Fatalf("get -o wide lacks %q:\n%s", want, out)
		}
	}
	out = e.kubectl(t, "get", "svc", "my-service", "-o", "yaml")
	if !strings.Contains(out, "targetPort: 9376") || !strings.Contains(out, "clusterIP: "+svc.Spec.ClusterIp) {
		t.Fatalf("get -o yaml (targetPort prints as a number):\n%s", out)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(e.kubectl(t, "get", "deploy", "nginx-deployment", "-o", "json")), &obj); err != nil {
		t.Fatalf("get -o json: %v", err)
	}
	if md := obj["metadata"].(map[string]any); md["uid"] != d.Metadata.Uid || md["resourceVersion"] == nil || fmt.Sprintf("%T", md["resourceVersion"]) != "string" || md["generation"] == nil || md["creationTimestamp"] == nil {
		t.Fatalf("metadata does not round-trip: %v", md)
	}
	if out := e.kubectl(t, "get", "deploy", "nginx-deployment", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != "tugboat.local/echo:latest" {
		t.Fatalf("jsonpath: %q", out)
	}
	out = e.kubectl(t, "get", "deploy", "-o", "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas")
	if !strings.Contains(out, "nginx-deployment   3") {
		t.Fatalf("custom-columns:\n%s", out)
	}
	out = e.kubectl(t, "get", "pods", "-l", "app=nginx", "-o", "wide")
	if !strings.Contains(out, "STATUS") || !strings.Contains(out, "NODE") || !strings.Contains(out, "nginx-deployment-") {
		t.Fatalf("get pods -o wide (the ReplicaSet's pods):\n%s", out)
	}
	out = e.kubectl(t, "describe", "deployment", "nginx-deployment")
	for _, want := range []string{"Name:", "nginx-deployment", "Replicas:", "3 desired", "NewReplicaSet:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	if out := e.kubectl(t, "get", "all"); !strings.Contains(out, "deployment.apps/nginx-deployment") || !strings.Contains(out, "service/my-service") {
		t.Fatalf("get all:\n%s", out)
	}
}

func testKubectlChange(t *testing.T, e *env) {
	e.kubectl(t, "label", "deploy", "nginx-deployment", "tier=web")
	e.kubectl(t, "annotate", "deploy", "nginx-deployment", "owner=team-a")
	d := e.deployment(t, "nginx-deployment")
	if d.Metadata.Labels["tier"] != "web" || d.Metadata.Annotations["owner"] != "team-a" {
		t.Fatalf("label/annotate: %v %v", d.Metadata.Labels, d.Metadata.Annotations)
	}
	e.kubectl(t, "label", "deploy", "nginx-deployment", "tier-")
	if _, ok := e.deployment(t, "nginx-deployment").Metadata.Labels["tier"]; ok {
		t.Fatal("label tier- left the label")
	}

	e.kubectl(t, "patch", "deploy", "nginx-deployment", "--type=merge", "-p", `{"spec":{"minReadySeconds":2}}`)
	e.kubectl(t, "patch", "deploy", "nginx-deployment", "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":2}]`)
	// A strategic merge patch merges containers by name: the port stays.
	e.kubectl(t, "patch", "deploy", "nginx-deployment", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"A","value":"1"}]}]}}}}`)
	d = e.deployment(t, "nginx-deployment")
	c := d.Spec.Template.Spec.Containers
	if d.Spec.MinReadySeconds != 2 || d.Spec.GetReplicas() != 2 || len(c) != 1 || len(c[0].Ports) != 1 || len(c[0].Env) != 1 || c[0].Env[0].Value != "1" {
		t.Fatalf("after the three patches: %v", d.Spec)
	}

	e.kubectl(t, "scale", "deploy", "nginx-deployment", "--replicas=4")
	if n := e.deployment(t, "nginx-deployment").Spec.GetReplicas(); n != 4 {
		t.Fatalf("scale: replicas %d", n)
	}
	e.kubectl(t, "set", "image", "deploy/nginx-deployment", "nginx=tugboat.local/busybox:latest")
	if img := e.deployment(t, "nginx-deployment").Spec.Template.Spec.Containers[0].Image; img != "tugboat.local/busybox:latest" {
		t.Fatalf("set image: %s", img)
	}
	// dry runs change nothing.
	e.kubectl(t, "scale", "deploy", "nginx-deployment", "--replicas=7", "--dry-run=server")
	e.kubectl(t, "label", "deploy", "nginx-deployment", "dry=run", "--dry-run=server")
	if d := e.deployment(t, "nginx-deployment"); d.Spec.GetReplicas() != 4 || d.Metadata.Labels["dry"] != "" {
		t.Fatalf("a server dry run changed the deployment: replicas %d labels %v", d.Spec.GetReplicas(), d.Metadata.Labels)
	}
}

func testKubectlEdit(t *testing.T, e *env) {
	dir := t.TempDir()
	editor := write(t, dir, "editor.sh", "#!/bin/sh\nsed -i 's/replicas: 4/replicas: 5/' \"$1\"\n")
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EDITOR", editor)
	t.Setenv("KUBE_EDITOR", editor)
	e.kubectl(t, "edit", "deploy", "nginx-deployment")
	if n := e.deployment(t, "nginx-deployment").Spec.GetReplicas(); n != 5 {
		t.Fatalf("edit: replicas %d, want 5", n)
	}
}

func testKubectlRollout(t *testing.T, e *env) {
	e.kubectl(t, "create", "deployment", "roll", "--image=tugboat.local/echo:latest", "--replicas=0")
	out := e.kubectl(t, "rollout", "status", "deploy/roll", "--timeout=30s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %s", out)
	}
	e.kubectl(t, "wait", "--for=condition=Available", "deploy/roll", "--timeout=30s")
	e.kubectl(t, "set", "image", "deploy/roll", "echo=tugboat.local/busybox:latest")
	e.kubectl(t, "rollout", "status", "deploy/roll", "--timeout=30s")
	eventually(t, "two revisions", func() error {
		out := e.kubectl(t, "rollout", "history", "deploy/roll")
		if !strings.Contains(out, "REVISION") || !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
			return fmt.Errorf("history:\n%s", out)
		}
		return nil
	})
	e.kubectl(t, "rollout", "undo", "deploy/roll")
	eventually(t, "the undo", func() error {
		if img := e.deployment(t, "roll").Spec.Template.Spec.Containers[0].Image; img != "tugboat.local/echo:latest" {
			return fmt.Errorf("image after undo: %s", img)
		}
		return nil
	})
	e.kubectl(t, "rollout", "restart", "deploy/roll")
	if a := e.deployment(t, "roll").Spec.Template.Metadata.Annotations["kubectl.kubernetes.io/restartedAt"]; a == "" {
		t.Fatal("rollout restart set no restartedAt annotation")
	}

	// A DaemonSet's revisions are ControllerRevisions whose data is the
	// patch kubectl applies (Kubernetes' shape): history --revision shows
	// an old template, undo puts it back.
	dir := t.TempDir()
	e.kubectl(t, "apply", "-f", write(t, dir, "ds.yaml", `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "tugboat.local/echo:latest"}]
`))
	eventually(t, "the first revision", func() error {
		if out := e.kubectl(t, "get", "controllerrevisions", "-l", "app=agent", "-o", "name"); strings.Count(out, "\n") != 1 {
			return fmt.Errorf("revisions:\n%s", out)
		}
		return nil
	})
	e.kubectl(t, "set", "image", "ds/agent", "agent=tugboat.local/busybox:latest")
	eventually(t, "two daemon set revisions", func() error {
		out := e.kubectl(t, "rollout", "history", "ds/agent")
		if !strings.Contains(out, "daemonset.apps/agent") || !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
			return fmt.Errorf("history:\n%s", out)
		}
		return nil
	})
	if out := e.kubectl(t, "rollout", "history", "ds/agent", "--revision=1"); !strings.Contains(out, "tugboat.local/echo:latest") {
		t.Fatalf("history --revision=1:\n%s", out)
	}
	out = e.kubectl(t, "get", "controllerrevisions", "-l", "app=agent", "-o", "jsonpath={.items[*].data.spec.template.spec.containers[0].image}")
	if !strings.Contains(out, "tugboat.local/echo:latest") || !strings.Contains(out, "tugboat.local/busybox:latest") {
		t.Fatalf("revisions' data: %s", out)
	}
	e.kubectl(t, "rollout", "undo", "ds/agent", "--to-revision=1")
	eventually(t, "the daemon set's revision 1 renumbered 3", func() error {
		if h := e.kubectl(t, "rollout", "history", "ds/agent"); !strings.Contains(h, "\n3 ") || strings.Contains(h, "\n1 ") {
			return fmt.Errorf("history:\n%s", h)
		}
		return nil
	})
	if out := e.kubectl(t, "rollout", "undo", "ds/agent", "--to-revision=3"); !strings.Contains(out, "daemonset.apps/agent skipped rollback (current template already matches revision 3)") {
		t.Fatalf("daemon set undo to the current revision: %s", out)
	}
	ds, err := client.For[*v1.DaemonSet](e.srv.Client).Get(context.Background(), "default", "agent")
	if err != nil || ds.Spec.Template.Spec.Containers[0].Image != "tugboat.local/echo:latest" {
		t.Fatalf("daemon set after undo: %v %v", ds.GetSpec().GetTemplate(), err)
	}

	// A StatefulSet's revisions: -o yaml prints Kubernetes' fields (data,
	// revision, nothing else), history and undo work, and the revision
	// rolled back to becomes the newest (1 -> 3).
	e.kubectl(t, "apply", "-f", write(t, dir, "sts.yaml", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 0
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "tugboat.local/echo:latest", ports: [{containerPort: 5432}]}]
`))
	eventually(t, "the stateful set's first revision", func() error {
		if out := e.kubectl(t, "get", "controllerrevisions", "-l", "app=db", "-o", "name"); strings.Count(out, "\n") != 1 {
			return fmt.Errorf("revisions:\n%s", out)
		}
		return nil
	})
	name := strings.TrimSpace(strings.TrimPrefix(e.kubectl(t, "get", "controllerrevisions", "-l", "app=db", "-o", "name"), "controllerrevision.apps/"))
	yml := e.kubectl(t, "get", "controllerrevision", name, "-o", "yaml")
	for _, want := range []string{"apiVersion: apps/v1\n", "kind: ControllerRevision\n", "data:\n  spec:\n    template:\n", "      $patch: replace\n",
		"containerPort: 5432", "revision: 1\n", "kind: StatefulSet\n    name: db\n"} {
		if !strings.Contains(yml, want) {
			t.Fatalf("get controllerrevision -o yaml lacks %q:\n%s", want, yml)
		}
	}
	var rev map[string]any
	if err := json.Unmarshal([]byte(e.kubectl(t, "get", "controllerrevision", name, "-o", "json")), &rev); err != nil {
		t.Fatal(err)
	}
	for k := range rev {
		if k != "apiVersion" && k != "kind" && k != "metadata" && k != "data" && k != "revision" {
			t.Fatalf("controllerrevision has field %q, which Kubernetes' has not: %v", k, rev)
		}
	}
	e.kubectl(t, "set", "image", "sts/db", "db=tugboat.local/busybox:latest")
	eventually(t, "two stateful set revisions", func() error {
		out := e.kubectl(t, "rollout", "history", "sts/db")
		if !strings.Contains(out, "statefulset.apps/db") || !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
			return fmt.Errorf("history:\n%s", out)
		}
		return nil
	})
	if out := e.kubectl(t, "rollout", "history", "sts/db", "--revision=1"); !strings.Contains(out, "tugboat.local/echo:latest") || !strings.Contains(out, "5432/TCP") {
		t.Fatalf("history --revision=1:\n%s", out)
	}
	if out := e.kubectl(t, "rollout", "undo", "sts/db"); !strings.Contains(out, "statefulset.apps/db rolled back") {
		t.Fatalf("undo: %s", out)
	}
	sts, err := client.For[*v1.StatefulSet](e.srv.Client).Get(context.Background(), "default", "db")
	if err != nil || sts.Spec.Template.Spec.Containers[0].Image != "tugboat.local/echo:latest" {
		t.Fatalf("stateful set after undo: %v %v", sts.GetSpec().GetTemplate(), err)
	}
	eventually(t, "revision 1 renumbered 3", func() error {
		out := e.kubectl(t, "get", "controllerrevision", name, "-o", "jsonpath={.revision}")
		if out != "3" {
			return fmt.Errorf("revision of %s: %q", name, out)
		}
		if h := e.kubectl(t, "rollout", "history", "sts/db"); !strings.Contains(h, "\n2 ") || !strings.Contains(h, "\n3 ") || strings.Contains(h, "\n1 ") {
			return fmt.Errorf("history:\n%s", h)
		}
		return nil
	})
	// Undo to the current revision: kubectl compares the revision's data
	// byte for byte with the patch it makes from the live object through
	// k8s.io/api's Go types, and skips as it does against Kubernetes
	// (kubectlRevisionData): nothing changes, no revision is added.
	gen := e.kubectl(t, "get", "sts", "db", "-o", "jsonpath={.metadata.generation}")
	if out := e.kubectl(t, "rollout", "undo", "sts/db", "--to-revision=3"); !strings.Contains(out, "statefulset.apps/db skipped rollback (current template already matches revision 3)") {
		t.Fatalf("undo to the current revision: %s", out)
	}
	if after := e.kubectl(t, "get", "sts", "db", "-o", "jsonpath={.metadata.generation}"); after != gen {
		t.Fatalf("undo to the current revision changed the stateful set: generation %s -> %s", gen, after)
	}
	if out := e.kubectl(t, "get", "controllerrevisions", "-l", "app=db", "-o", "name"); strings.Count(out, "\n") != 2 {
		t.Fatalf("undo to the current revision made a revision:\n%s", out)
	}
	if out := e.kubectl(t, "get", "controllerrevision", name, "-o", "jsonpath={.revision}"); out != "3" {
		t.Fatalf("revision of %s after undo to itself: %q", name, out)
	}
	// A ControllerRevision written by hand: any JSON object as data, by
	// apply (client- and server-side); explain describes data.
	e.kubectl(t, "apply", "-f", write(t, dir, "rev.yaml", `apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: by-hand}
data: {anything: [1, "two", {three: true}]}
revision: 7
`))
	e.kubectl(t, "apply", "--server-side", "-f", write(t, dir, "rev2.yaml", `apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: by-hand-ssa}
data: {spec: {template: {metadata: {labels: {a: b}}}}}
revision: 1
`))
	if out := e.kubectl(t, "get", "controllerrevision", "by-hand", "-o", "jsonpath={.data.anything[2].three} {.revision}"); out != "true 7" {
		t.Fatalf("a revision applied by hand: %q", out)
	}
	if out := e.kubectl(t, "get", "controllerrevision", "by-hand-ssa", "-o", "jsonpath={.data.spec.template.metadata.labels.a}"); out != "b" {
		t.Fatalf("a revision applied server-side: %q", out)
	}
	if out := e.kubectl(t, "explain", "controllerrevision.data"); !strings.Contains(out, "FIELD: data") && !strings.Contains(out, "FIELD:    data") {
		t.Fatalf("explain controllerrevision.data:\n%s", out)
	}
	// data is immutable, as in Kubernetes.
	out, err = e.kubectlAs(t, e.admin, "", "patch", "controllerrevision", name, "--type=merge", "-p", `{"data":{"spec":{"template":{"spec":{"containers":[{"name":"db","image":"x"}]}}}}}`)
	if err == nil || !strings.Contains(out, "data: field is immutable") {
		t.Fatalf("patching data: %v %s", err, out)
	}
}

func testKubectlCreate(t *testing.T, e *env) {
	ctx := context.Background()
	e.kubectl(t, "create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=pass=s3cret")
	sec, err := client.For[*v1.Secret](e.srv.Client).Get(ctx, "default", "creds")
	if err != nil || string(sec.Data["pass"]) != "s3cret" || string(sec.Data["user"]) != "admin" {
		t.Fatalf("create secret generic: %v %v", sec, err)
	}
	e.kubectl(t, "create", "configmap", "settings", "--from-literal=mode=fast")
	cm, err := client.For[*v1.ConfigMap](e.srv.Client).Get(ctx, "default", "settings")
	if err != nil || cm.Data["mode"] != "fast" {
		t.Fatalf("create configmap: %v %v", cm, err)
	}
	e.kubectl(t, "expose", "deployment", "nginx-deployment", "--port=8080", "--target-port=80", "--name=nginx-svc")
	svc, err := client.For[*v1.Service](e.srv.Client).Get(ctx, "default", "nginx-svc")
	if err != nil || svc.Spec.Selector["app"] != "nginx" || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort != "80" {
		t.Fatalf("expose: %v %v", svc, err)
	}
	e.kubectl(t, "run", "solo", "--image=tugboat.local/busybox:latest", "--restart=Never", "--", "sleep", "3600")
	pod, err := client.For[*v1.Pod](e.srv.Client).Get(ctx, "default", "solo")
	if err != nil || pod.Spec.Containers[0].Image != "tugboat.local/busybox:latest" || strings.Join(pod.Spec.Containers[0].Args, " ") != "sleep 3600" || pod.Spec.RestartPolicy != "Never" {
		t.Fatalf("run: %v %v", pod, err)
	}
}

func testKubectlDiffKustomize(t *testing.T, e *env) {
	dir := t.TempDir()
	f := write(t, dir, "nginx.yaml", strings.Replace(nginx, "replicas: 3", "replicas: 6", 1))
	out, err := e.kubectlAs(t, e.admin, "", "diff", "-f", f)
	if err == nil || !strings.Contains(out, "-  replicas: 5") || !strings.Contains(out, "+  replicas: 6") {
		t.Fatalf("diff (exit 1 and the replicas change expected): %v\n%s", err, out)
	}
	if n := e.deployment(t, "nginx-deployment").Spec.GetReplicas(); n != 5 {
		t.Fatalf("diff changed the deployment: replicas %d", n)
	}
	write(t, dir, "kust/kustomization.yaml", "namePrefix: kust-\ncommonLabels:\n  made-by: kustomize\nresources:\n- cm.yaml\n")
	write(t, dir, "kust/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata:\n  k: v\n")
	e.kubectl(t, "apply", "-k", filepath.Join(dir, "kust"))
	cm, err := client.For[*v1.ConfigMap](e.srv.Client).Get(context.Background(), "default", "kust-conf")
	if err != nil || cm.Metadata.Labels["made-by"] != "kustomize" || cm.Data["k"] != "v" {
		t.Fatalf("apply -k: %v %v", cm, err)
	}
}

func testKubectlDeleteCascade(t *testing.T, e *env) {
	ctx := context.Background()
	rs := client.For[*v1.ReplicaSet](e.srv.Client)
	owned := func(deploy string) []*v1.ReplicaSet {
		items, _, err := rs.List(ctx, client.ListOptions{Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		var out []*v1.ReplicaSet
		for _, r := range items {
			if strings.HasPrefix(r.Metadata.Name, deploy+"-") {
				out = append(out, r)
			}
		}
		return out
	}
	for _, policy := range []string{"orphan", "background", "foreground"} {
		name := "cascade-" + policy
		e.kubectl(t, "create", "deployment", name, "--image=tugboat.local/echo:latest", "--replicas=0")
		eventually(t, "the ReplicaSet of "+name, func() error {
			if len(owned(name)) == 0 {
				return fmt.Errorf("no ReplicaSet yet")
			}
			return nil
		})
		e.kubectl(t, "delete", "deployment", name, "--cascade="+policy, "--wait=true")
		if _, err := client.For[*v1.Deployment](e.srv.Client).Get(ctx, "default", name); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: deployment still there: %v", policy, err)
		}
		eventually(t, "the ReplicaSets of "+name+" after delete --cascade="+policy, func() error {
			left := owned(name)
			switch {
			case policy == "orphan" && (len(left) != 1 || len(left[0].Metadata.OwnerReferences) != 0):
				return fmt.Errorf("orphan: want the ReplicaSet kept without owner, have %v", left)
			case policy != "orphan" && len(left) != 0:
				return fmt.Errorf("%s: ReplicaSets left: %d", policy, len(left))
			}
			return nil
		})
	}
}

func testKubectlDiscovery(t *testing.T, e *env) {
	out := e.kubectl(t, "api-resources")
	for _, want := range []string{"deployments", "deploy", "apps/v1", "pods", "po", "clusterroles", "leases"} {
		if !strings.Contains(out, want) {
			t.Fatalf("api-resources lacks %q:\n%s", want, out)
		}
	}
	out = e.kubectl(t, "explain", "pod.spec.containers")
	if !strings.Contains(out, "FIELD: containers <[]Container>") || !strings.Contains(out, "image") || !strings.Contains(out, "volumeMounts") {
		t.Fatalf("explain:\n%s", out)
	}
	out = e.kubectl(t, "explain", "pod.spec.nodeName")
	if !strings.Contains(out, "Set only by Bind") {
		t.Fatalf("explain has no description from the .proto comment:\n%s", out)
	}
	if out := e.kubectl(t, "version", "-o", "json"); !strings.Contains(out, "serverVersion") {
		t.Fatalf("version: %s", out)
	}
}

func testKubectlAuth(t *testing.T, e *env) {
	e.kubectl(t, "create", "clusterrolebinding", "viewer-view", "--clusterrole=view", "--user=viewer")
	eventually(t, "the viewer's binding to reach the authorizer", func() error {
		out, err := e.kubectlAs(t, e.view, "", "get", "deployments")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if out := e.kubectl(t, "auth", "can-i", "delete", "deployments"); strings.TrimSpace(out) != "yes" {
		t.Fatalf("admin can-i delete: %q", out)
	}
	if out, _ := e.kubectlAs(t, e.view, "", "auth", "can-i", "delete", "deployments"); !strings.HasPrefix(out, "no") || !strings.Contains(out, `"viewer"`) {
		t.Fatalf("viewer can-i delete: %q", out)
	}
	out, err := e.kubectlAs(t, e.view, "", "delete", "deployment", "nginx-deployment")
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, `"viewer"`) || !strings.Contains(out, "delete") || !strings.Contains(out, "deployments") {
		t.Fatalf("viewer delete: want 403 naming user, verb and resource: %v\n%s", err, out)
	}
	e.deployment(t, "nginx-deployment") // still there
	// kubectl prints the server's words: Kubernetes' own.
	for _, c := range []struct {
		cfg  string
		args []string
		want string
	}{
		{e.view, []string{"delete", "deployment", "nginx-deployment"}, `Error from server (Forbidden): deployments.apps "nginx-deployment" is forbidden: User "viewer" cannot delete resource "deployments" in API group "apps" in the namespace "default"`},
		{e.admin, []string{"get", "deployment", "nope"}, `Error from server (NotFound): deployments.apps "nope" not found`},
		{e.admin, []string{"delete", "configmap", "nope"}, `Error from server (NotFound): configmaps "nope" not found`},
		{e.admin, []string{"create", "namespace", "default"}, `Error from server (AlreadyExists): namespaces "default" already exists`},
		// Impersonation: the admin (system:masters) may act as the
		// viewer, and is then refused what the viewer may not do; the
		// viewer may not act as anyone.
		{e.admin, []string{"--as=viewer", "delete", "deployment", "nginx-deployment"}, `User "viewer" cannot delete resource "deployments"`},
		{e.view, []string{"--as=admin", "get", "pods"}, `Error from server (Forbidden): users "admin" is forbidden: User "viewer" cannot impersonate resource "users" in API group "" at the cluster scope`},
	} {
		out, err := e.kubectlAs(t, c.cfg, "", c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("kubectl %s: %v, want %q in:\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
	}
	e.deployment(t, "nginx-deployment") // still there
	if out := e.kubectl(t, "--as=viewer", "get", "deployment", "nginx-deployment", "-o", "name"); strings.TrimSpace(out) != "deployment.apps/nginx-deployment" {
		t.Errorf("the admin as the viewer reading: %q", out)
	}
	if out, _ := e.kubectlAs(t, e.admin, "", "--as=viewer", "auth", "can-i", "delete", "deployments"); !strings.HasPrefix(out, "no") {
		t.Errorf("can-i --as=viewer delete: %q", out)
	}
	if out := e.kubectl(t, "--as=viewer", "--as-group=view-team", "auth", "whoami"); !strings.Contains(out, "viewer") || !strings.Contains(out, "view-team") {
		t.Errorf("whoami --as=viewer --as-group=view-team:\n%s", out)
	}
	out, err = e.kubectlAs(t, e.anon, "", "get", "pods")
	if err == nil || !strings.Contains(out, "You must be logged in to the server") {
		t.Fatalf("a revoked token: want 401: %v\n%s", err, out)
	}
	// No credentials at all (kubectl would prompt for a password here).
	tlsCfg, err := client.TLSFromFiles(filepath.Join(e.srv.PKIDir, "ca.crt"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}).Get(e.url + "/api/v1/namespaces/default/pods")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if st := parseStatus(t, string(body)); resp.StatusCode != 401 || st.Reason != "Unauthorized" {
		t.Fatalf("no credentials: want 401 Unauthorized, got %d:\n%s", resp.StatusCode, body)
	}
	if out := e.kubectl(t, "auth", "whoami"); !strings.Contains(out, "admin") {
		t.Fatalf("whoami: %s", out)
	}
}
