package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func decodeFile(t *testing.T, name string) []Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(name, data)
	if err != nil {
		t.Fatalf("Decode(%s): %v", name, err)
	}
	return objs
}

// The Kubernetes docs' examples decode unchanged.
func TestDecodeDocsExamples(t *testing.T) {
	dep := decodeFile(t, "nginx-deployment.yaml")[0].Object.(*v1.Deployment)
	if dep.Metadata.Name != "nginx-deployment" || dep.Spec.GetReplicas() != 3 ||
		dep.Spec.Selector.MatchLabels["app"] != "nginx" || dep.Spec.Template.Metadata.Labels["app"] != "nginx" ||
		dep.Spec.Template.Spec.Containers[0].Image != "nginx:1.14.2" || dep.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort != 80 {
		t.Errorf("nginx deployment decoded wrong: %v", dep)
	}

	pod := decodeFile(t, "simple-pod.yaml")[0].Object.(*v1.Pod)
	want := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "nginx"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{
			Name: "nginx", Image: "nginx:1.14.2", Ports: []*v1.ContainerPort{{ContainerPort: 80}},
		}}},
	}
	if !proto.Equal(pod, want) {
		t.Errorf("pod = %v, want %v", pod, want)
	}

	svc := decodeFile(t, "nodeport-service.yaml")[0].Object.(*v1.Service)
	p := svc.Spec.Ports[0]
	if svc.Spec.Type != "NodePort" || svc.Spec.Selector["app.kubernetes.io/name"] != "MyApp" ||
		p.Port != 80 || p.TargetPort != "9376" || p.NodePort != 30007 {
		t.Errorf("service decoded wrong: %v", svc)
	}
	svc = decodeFile(t, "service.yaml")[0].Object.(*v1.Service)
	if svc.Spec.Ports[0].Protocol != "TCP" || svc.Spec.Ports[0].TargetPort != "9376" {
		t.Errorf("service decoded wrong: %v", svc)
	}
}

func TestDecodeGood(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		count int
		check func(t *testing.T, objs []Object)
	}{
		{
			name:  "a YAML flow mapping starting with {, and a second document",
			in:    "{apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, image: nginx, ports: [{containerPort: 80}]}]}}\n---\n{apiVersion: v1, kind: Namespace, metadata: {name: team}}\n",
			count: 2,
			check: func(t *testing.T, objs []Object) {
				p := objs[0].Object.(*v1.Pod)
				if p.Spec.Containers[0].Ports[0].ContainerPort != 80 || objs[1].Kind.Name != "Namespace" || objs[1].Source.Document != 2 {
					t.Errorf("flow mappings: %v, %v", p, objs[1])
				}
			},
		},
		{
			name: "pod-level resources, hostUsers and restart rules under Kubernetes' names",
			in: `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  hostUsers: false
  resources:
    limits: {cpu: 200m, memory: 64Mi}
  initContainers:
  - name: setup
    image: busybox
    restartPolicy: Never
    restartPolicyRules:
    - {action: Restart, exitCodes: {operator: NotIn, values: [0]}}
  containers:
  - name: c
    image: busybox
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
`,
			count: 1,
			check: func(t *testing.T, objs []Object) {
				s := objs[0].Object.(*v1.Pod).Spec
				if s.HostUsers == nil || s.GetHostUsers() || s.GetResources().GetLimits()["memory"] != "64Mi" ||
					s.Containers[0].RestartPolicy != "Never" || s.Containers[0].RestartPolicyRules[0].GetExitCodes().GetValues()[0] != 42 ||
					s.InitContainers[0].RestartPolicyRules[0].GetExitCodes().GetOperator() != "NotIn" {
					t.Errorf("spec = %v", s)
				}
				out, err := Marshal(objs[0].Object, YAML)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"hostUsers: false", "restartPolicyRules:", "exitCodes:", "operator: In", "resources:"} {
					if !strings.Contains(string(out), want) {
						t.Errorf("encoded back without %q:\n%s", want, out)
					}
				}
			},
		},
		{
			name: "multi-document with comments, leading separator and empty documents",
			in: `# a comment
---
apiVersion: v1
kind: Namespace
metadata:
  name: web
--- # second
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: web}
data:
  port: 8080
  debug: "true"
...
`,
			count: 2,
			check: func(t *testing.T, objs []Object) {
				cm := objs[1].Object.(*v1.ConfigMap)
				if cm.Data["port"] != "8080" || cm.Data["debug"] != "true" {
					t.Errorf("configmap data = %v", cm.Data)
				}
				if objs[1].Source.Document != 2 || objs[1].Kind.Name != "ConfigMap" {
					t.Errorf("source = %v kind = %s", objs[1].Source, objs[1].Kind.Name)
				}
			},
		},
		{
			name: "quantities and int-or-string fields given as numbers, nulls dropped, status {}",
			in: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  creationTimestamp: null
spec:
  replicas: "2"
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 25%}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, creationTimestamp: null}
    spec:
      containers:
      - name: web
        image: web:1
        resources:
          requests: {cpu: 1, memory: 128Mi}
          limits: {cpu: 0.5}
        ports: null
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 5
status: {}
`,
			count: 1,
			check: func(t *testing.T, objs []Object) {
				d := objs[0].Object.(*v1.Deployment)
				c := d.Spec.Template.Spec.Containers[0]
				if d.Spec.GetReplicas() != 2 || d.Spec.Strategy.RollingUpdate.MaxSurge != "1" || d.Spec.Strategy.RollingUpdate.MaxUnavailable != "25%" {
					t.Errorf("spec = %v", d.Spec)
				}
				if c.Resources.Requests["cpu"] != "1" || c.Resources.Requests["memory"] != "128Mi" || c.Resources.Limits["cpu"] != "0.5" {
					t.Errorf("resources = %v", c.Resources)
				}
				if c.ReadinessProbe.HttpGet.Port != "8080" || c.ReadinessProbe.PeriodSeconds != 5 {
					t.Errorf("probe = %v", c.ReadinessProbe)
				}
				if d.Metadata.CreationTimestamp != nil || d.Status == nil {
					t.Errorf("metadata = %v status = %v", d.Metadata, d.Status)
				}
			},
		},
		{
			name: "camelCase names that differ from the proto names",
			in: `apiVersion: v1
kind: Node
metadata: {name: n1, creationTimestamp: "2024-05-01T10:00:00Z"}
spec: {podCIDR: 10.244.1.0/24, providerID: x}
status:
  capacity: {cpu: 4, memory: 8Gi, pods: 110}
  nodeInfo: {machineID: m, bootID: b, kubeletVersion: v1}
  addresses: [{type: InternalIP, address: 10.0.0.1}]
`,
			count: 1,
			check: func(t *testing.T, objs []Object) {
				n := objs[0].Object.(*v1.Node)
				if n.Spec.PodCidr != "10.244.1.0/24" || n.Status.Capacity["pods"] != "110" || n.Status.NodeInfo.MachineId != "m" {
					t.Errorf("node = %v", n)
				}
				if n.Metadata.CreationTimestamp.AsTime().Hour() != 10 {
					t.Errorf("timestamp = %v", n.Metadata.CreationTimestamp)
				}
			},
		},
		{
			name: "secret with base64 data and stringData",
			in: `apiVersion: v1
kind: Secret
metadata: {name: s}
type: Opaque
data: {password: cGFzc3dvcmQ=}
stringData: {user: admin}
`,
			count: 1,
			check: func(t *testing.T, objs []Object) {
				s := objs[0].Object.(*v1.Secret)
				if string(s.Data["password"]) != "password" || s.StringData["user"] != "admin" {
					t.Errorf("secret = %v", s)
				}
			},
		},
		{
			name:  "a JSON stream of two objects",
			in:    `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"}}`,
			count: 2,
			check: func(t *testing.T, objs []Object) {
				if objs[1].Object.GetMetadata().Name != "b" || objs[1].Source.Document != 2 {
					t.Errorf("second = %v", objs[1])
				}
			},
		},
		{
			name:  "a JSON array",
			in:    `[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}}]`,
			count: 1,
		},
		{
			name: "a List",
			in: `apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: a}}
- {apiVersion: v1, kind: Namespace, metadata: {name: b}}
`,
			count: 2,
			check: func(t *testing.T, objs []Object) {
				if objs[1].Source.Item != 2 || objs[1].Source.Document != 1 {
					t.Errorf("source = %+v", objs[1].Source)
				}
			},
		},
		{
			name: "integers written as whole floats and strings",
			in: `apiVersion: v1
kind: Service
metadata: {name: s, resourceVersion: "42"}
spec:
  ports: [{port: 80.0, targetPort: http, nodePort: "30001"}]
`,
			count: 1,
			check: func(t *testing.T, objs []Object) {
				s := objs[0].Object.(*v1.Service)
				if s.Spec.Ports[0].Port != 80 || s.Spec.Ports[0].NodePort != 30001 || s.Spec.Ports[0].TargetPort != "http" || s.Metadata.ResourceVersion != 42 {
					t.Errorf("service = %v", s)
				}
			},
		},
		{name: "only comments", in: "# nothing\n---\n", count: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode("in.yaml", []byte(tc.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(objs) != tc.count {
				t.Fatalf("got %d objects, want %d", len(objs), tc.count)
			}
			if tc.check != nil {
				tc.check(t, objs)
			}
		})
	}
}

const podHeader = `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
`

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error, each naming file, document and field
	}{
		{
			name: "unknown field deep in the second document",
			in: `apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: web:1
        imagePullPolicyy: Always
`,
			want: []string{`web.yaml: document 2 (Deployment web): spec.template.spec.containers[0].imagePullPolicyy: unknown field (did you mean "imagePullPolicy"?)`},
		},
		{
			name: "snake_case proto name is not accepted",
			in:   podHeader + "  containers: [{name: c, image: i}]\n  restart_policy: Never\n",
			want: []string{`web.yaml: document 1 (Pod p): spec.restart_policy: unknown field (did you mean "restartPolicy"?)`},
		},
		{
			name: "several errors in one document are all reported",
			in:   podHeader + "  containers: [{name: c, image: i, foo: 1}]\n  bar: 2\n",
			want: []string{"document 1 (Pod p): spec.containers[0].foo: unknown field", "document 1 (Pod p): spec.bar: unknown field"},
		},
		{
			name: "integer field with a word",
			in:   "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec: {replicas: three}\n",
			want: []string{`web.yaml: document 1 (ReplicaSet r): spec.replicas: expected an integer, got the string "three"`},
		},
		{
			name: "integer field with a fraction",
			in:   podHeader + "  containers: [{name: c, image: i, ports: [{containerPort: 80.5}]}]\n",
			want: []string{"(Pod p): spec.containers[0].ports[0].containerPort: expected an integer, got 80.5"},
		},
		{
			name: "integer out of range",
			in:   podHeader + "  containers: [{name: c, image: i, ports: [{containerPort: 99999999999}]}]\n",
			want: []string{"(Pod p): spec.containers[0].ports[0].containerPort: 99999999999 is out of range"},
		},
		{
			name: "string field with an unquoted boolean",
			in:   podHeader + "  containers: [{name: c, image: yes}]\n",
			want: []string{`(Pod p): spec.containers[0].image: expected a string, got the boolean true (quote it`},
		},
		{
			name: "list expected",
			in:   podHeader + "  containers: {name: c}\n",
			want: []string{"(Pod p): spec.containers: expected a list, got a mapping"},
		},
		{
			name: "mapping expected",
			in:   podHeader + "  containers: [{name: c, image: i, resources: 1}]\n",
			want: []string{"(Pod p): spec.containers[0].resources: expected a mapping, got the number 1"},
		},
		{
			name: "bool expected",
			in:   podHeader + "  containers: [{name: c, image: i, tty: sometimes}]\n",
			want: []string{`(Pod p): spec.containers[0].tty: expected true or false, got the string "sometimes"`},
		},
		{
			name: "null in a list",
			in:   podHeader + "  containers: [null]\n",
			want: []string{"(Pod p): spec.containers[0]: null is not allowed in a list"},
		},
		{
			name: "bad base64",
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: '%%%'}\n",
			want: []string{`(Secret s): data.k: "%%%" is not valid base64`},
		},
		{
			name: "bad timestamp",
			in:   "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, creationTimestamp: yesterday}\n",
			want: []string{`(Namespace ns1): metadata.creationTimestamp: "yesterday" is not an RFC 3339 time`},
		},
		{
			name: "unknown kind",
			in:   "apiVersion: v1\nkind: Pdo\nmetadata: {name: x}\n",
			want: []string{`web.yaml: document 1 (Pdo x): kind: unknown kind "Pdo"`},
		},
		{
			name: "kind served by another apiVersion",
			in:   "apiVersion: v1\nkind: Deployment\nmetadata: {name: x}\n",
			want: []string{`web.yaml: document 1 (Deployment x): apiVersion: "v1" does not serve kind Deployment (use "apps/v1")`},
		},
		{
			name: "missing kind",
			in:   "apiVersion: v1\nmetadata: {name: x}\n",
			want: []string{"web.yaml: document 1 (x): kind: required"},
		},
		{
			name: "missing apiVersion",
			in:   "kind: Pod\nmetadata: {name: x}\n",
			want: []string{"web.yaml: document 1 (Pod x): apiVersion: required"},
		},
		{
			name: "a document that is not a mapping",
			in:   "- a\n- b\n",
			want: []string{"web.yaml: document 1: a document must be a mapping with apiVersion and kind, got a list"},
		},
		{
			name: "YAML syntax error reports the file's line",
			in:   "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: name: b\n",
			want: []string{"web.yaml: document 2: invalid YAML: line 7: mapping values are not allowed"},
		},
		{
			name: "duplicate keys",
			in:   "apiVersion: v1\nkind: Namespace\nkind: Pod\n",
			want: []string{`web.yaml: document 1: invalid YAML: line 3: key "kind" already set in map`},
		},
		{
			name: "JSON syntax error",
			in:   "{\"apiVersion\": \"v1\",\n \"kind\": }",
			want: []string{"web.yaml: document 1: invalid JSON: line 2:"},
		},
		{
			name: "bad List item",
			in:   "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}, spec: {x: 1}}\n",
			want: []string{"web.yaml: document 1 item 2 (Namespace b): spec.x: unknown field"},
		},
		{
			name: "errors in two documents are both reported",
			in:   "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, xx: 1}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b, yy: 1}\n",
			want: []string{"document 1 (Namespace a): metadata.xx: unknown field", "document 2 (Namespace b): metadata.yy: unknown field"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode("web.yaml", []byte(tc.in))
			if err == nil {
				t.Fatalf("Decode succeeded with %d objects, want an error", len(objs))
			}
			if objs != nil {
				t.Errorf("Decode returned objects with an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %v\ndoes not contain\n  %s", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "web.yaml: document ") {
					t.Errorf("error line %q does not name the file and document", line)
				}
			}
		})
	}
}

func TestDecodeErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n")
	for i := 0; i < 30; i++ {
		b.WriteString("  x" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": 1\n")
	}
	_, err := Decode("big.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "and 10 more errors") {
		t.Fatalf("err = %v, want the error list capped", err)
	}
}
