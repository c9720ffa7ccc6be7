package tugctl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func get[T v1.Object](t *testing.T, c *client.Client, ns, name string) T {
	t.Helper()
	obj, err := client.For[T](c).Get(ctxT(t), ns, name)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return obj
}

func TestCreateGenerators(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()

	// create deployment: app=NAME everywhere, a container per image.
	if r := mustOK(t, e.run("create", "deployment", "web", "--image=nginx:1.25", "--image=registry.local/team/side-car:v2", "--replicas=3", "--port=80")); r.out != "deployment.apps/web created\n" {
		t.Errorf("create deployment: %q", r.out)
	}
	d := get[*v1.Deployment](t, e.c, "default", "web")
	cs := d.GetSpec().GetTemplate().GetSpec().GetContainers()
	if d.GetSpec().GetReplicas() != 3 || d.GetSpec().GetSelector().GetMatchLabels()["app"] != "web" || d.GetSpec().GetTemplate().GetMetadata().GetLabels()["app"] != "web" ||
		len(cs) != 2 || cs[0].Name != "nginx" || cs[1].Name != "side-car" || cs[0].Ports[0].ContainerPort != 80 {
		t.Errorf("deployment: %v", d)
	}
	mustOK(t, e.run("create", "deployment", "sleeper", "--image=busybox", "--", "sh", "-c", "sleep 1"))
	if c := get[*v1.Deployment](t, e.c, "default", "sleeper").GetSpec().GetTemplate().GetSpec().GetContainers()[0]; strings.Join(c.Command, " ") != "sh -c sleep 1" {
		t.Errorf("deployment command: %v", c.Command)
	}

	// --dry-run=client prints and stores nothing.
	r := mustOK(t, e.run("create", "deployment", "ghost", "--image=nginx", "--dry-run=client", "-o", "yaml"))
	if !strings.Contains(r.out, "kind: Deployment") || !strings.Contains(r.out, "name: ghost") || !strings.Contains(r.out, "image: nginx") {
		t.Errorf("dry-run -o yaml:\n%s", r.out)
	}
	if r := mustOK(t, e.run("create", "deployment", "ghost", "--image=nginx", "--dry-run=client")); r.out != "deployment.apps/ghost created (dry run)\n" {
		t.Errorf("dry-run: %q", r.out)
	}
	if _, err := client.For[*v1.Deployment](e.c).Get(ctxT(t), "default", "ghost"); !apierrors.IsNotFound(err) {
		t.Errorf("dry run stored the deployment: %v", err)
	}

	// create service clusterip|nodeport.
	mustOK(t, e.run("create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:https"))
	s := get[*v1.Service](t, e.c, "default", "web")
	if s.Spec.Type != "ClusterIP" || s.Spec.Selector["app"] != "web" || len(s.Spec.Ports) != 2 || s.Spec.Ports[0].Name != "80-8080" || s.Spec.Ports[0].TargetPort != "8080" || s.Spec.Ports[1].TargetPort != "https" || s.Spec.ClusterIp == "" {
		t.Errorf("clusterip service: %v", s.Spec)
	}
	mustOK(t, e.run("create", "service", "nodeport", "web-np", "--tcp=80"))
	if s := get[*v1.Service](t, e.c, "default", "web-np"); s.Spec.Type != "NodePort" || s.Spec.Ports[0].NodePort == 0 || s.Spec.Ports[0].TargetPort != "80" {
		t.Errorf("nodeport service: %v", s.Spec)
	}
	mustOK(t, e.run("create", "service", "loadbalancer", "web-lb", "--tcp=80:8080"))
	if s := get[*v1.Service](t, e.c, "default", "web-lb"); s.Spec.Type != "LoadBalancer" || s.Spec.Ports[0].NodePort == 0 || s.Spec.ExternalTrafficPolicy != "Cluster" {
		t.Errorf("loadbalancer service: %v", s.Spec)
	}
	mustOK(t, e.run("create", "service", "externalname", "db", "--external-name", "db.example.com"))
	if s := get[*v1.Service](t, e.c, "default", "db"); s.Spec.Type != "ExternalName" || s.Spec.ExternalName != "db.example.com" || s.Spec.ClusterIp != "" || len(s.Spec.Selector) != 0 {
		t.Errorf("externalname service: %v", s.Spec)
	}

	// create configmap and secret from literals, files, directories and env files.
	writeFile(t, dir, "app.conf", "listen 80;\n")
	writeFile(t, dir, "env", "# settings\nMODE=prod\n\nLEVEL=debug\n")
	sub := dir + "/conf.d"
	if err := mkdir(sub); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sub, "a.conf", "a")
	writeFile(t, sub, "b.conf", "b")
	mustOK(t, e.run("create", "configmap", "app", "--from-literal=user=web", "--from-file="+dir+"/app.conf", "--from-file=main="+dir+"/app.conf", "--from-file="+sub, "--from-env-file="+dir+"/env"))
	cm := get[*v1.ConfigMap](t, e.c, "default", "app")
	want := map[string]string{"user": "web", "app.conf": "listen 80;\n", "main": "listen 80;\n", "a.conf": "a", "b.conf": "b", "MODE": "prod", "LEVEL": "debug"}
	if len(cm.Data) != len(want) {
		t.Errorf("configmap data: %v", cm.Data)
	}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("configmap %s = %q, want %q", k, cm.Data[k], v)
		}
	}
	mustOK(t, e.run("create", "secret", "generic", "db", "--from-literal=password=s3cret", "--type=example.com/db"))
	if sec := get[*v1.Secret](t, e.c, "default", "db"); string(sec.Data["password"]) != "s3cret" || sec.Type != "example.com/db" {
		t.Errorf("generic secret: %v", sec)
	}
	cert, key := selfSigned(t)
	certFile, keyFile := writeFile(t, dir, "tls.crt", string(cert)), writeFile(t, dir, "tls.key", string(key))
	mustOK(t, e.run("create", "secret", "tls", "web-tls", "--cert="+certFile, "--key="+keyFile))
	if sec := get[*v1.Secret](t, e.c, "default", "web-tls"); sec.Type != "kubernetes.io/tls" || string(sec.Data["tls.crt"]) != string(cert) || string(sec.Data["tls.key"]) != string(key) {
		t.Errorf("tls secret: %v", sec.Type)
	}
	mustOK(t, e.run("create", "secret", "docker-registry", "pull", "--docker-server=reg.local:5000", "--docker-username=u", "--docker-password=p"))
	var dc struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	sec := get[*v1.Secret](t, e.c, "default", "pull")
	if err := json.Unmarshal(sec.Data[".dockerconfigjson"], &dc); err != nil || sec.Type != "kubernetes.io/dockerconfigjson" || dc.Auths["reg.local:5000"].Auth != "dTpw" {
		t.Errorf("docker-registry secret: %s %v", sec.Data[".dockerconfigjson"], err)
	}

	// expose: the deployment's selector and container port.
	if r := mustOK(t, e.run("expose", "deployment", "web", "--port=8080", "--target-port=80", "--name=web-front", "--type=NodePort")); r.out != "service/web-front created\n" {
		t.Errorf("expose: %q", r.out)
	}
	ex := get[*v1.Service](t, e.c, "default", "web-front")
	if ex.Spec.Selector["app"] != "web" || ex.Spec.Type != "NodePort" || ex.Spec.Ports[0].Port != 8080 || ex.Spec.Ports[0].TargetPort != "80" {
		t.Errorf("exposed service: %v", ex.Spec)
	}
	mustOK(t, e.run("expose", "deploy/sleeper", "--port=9000"))
	// run: a pod labelled run=NAME.
	if r := mustOK(t, e.run("run", "once", "--image=busybox", "--restart=Never", "--env=A=1", "--", "echo", "hi")); r.out != "pod/once created\n" {
		t.Errorf("run: %q", r.out)
	}
	p := get[*v1.Pod](t, e.c, "default", "once")
	if p.Metadata.Labels["run"] != "once" || p.Spec.RestartPolicy != "Never" || p.Spec.Containers[0].Name != "once" || strings.Join(p.Spec.Containers[0].Args, " ") != "echo hi" || p.Spec.Containers[0].Env[0].Value != "1" {
		t.Errorf("run pod: %v", p.Spec)
	}
	mustOK(t, e.run("run", "sh", "--image=busybox", "--command", "--", "sh", "-c", "sleep 1"))
	if c := get[*v1.Pod](t, e.c, "default", "sh").Spec.Containers[0]; strings.Join(c.Command, " ") != "sh -c sleep 1" || len(c.Args) != 0 {
		t.Errorf("run --command: %v %v", c.Command, c.Args)
	}
	if r := mustOK(t, e.run("run", "p", "--image=nginx", "-o", "jsonpath={.spec.containers[0].image}", "--dry-run=client")); r.out != "nginx" {
		t.Errorf("run -o jsonpath: %q", r.out)
	}

	// Mistakes name the flag and create nothing.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "deployment", "x"}, "--image: required"},
		{[]string{"create", "deployment", "x", "--image=a", "--replicas=-1"}, "--replicas -1"},
		{[]string{"create", "deployment", "web", "--image=a"}, `deployments.apps "web" already exists`},
		{[]string{"create", "service", "clusterip", "x", "--tcp=http:80"}, `--tcp "http:80": port "http" is not a port number`},
		{[]string{"create", "configmap", "x", "--from-literal=novalue"}, `--from-literal "novalue": want KEY=VALUE`},
		{[]string{"create", "configmap", "x", "--from-literal=a=1", "--from-literal=a=2"}, `cannot add key "a"`},
		{[]string{"create", "configmap", "x", "--from-file=/no/such"}, "--from-file /no/such"},
		{[]string{"create", "configmap", "x", "--from-literal=bad/key=1"}, `"bad/key" is not a valid key name`},
		{[]string{"create", "secret", "tls", "x", "--cert=" + certFile, "--key=" + certFile}, "not a certificate and its private key"},
		{[]string{"create", "deployment", "x", "--image=a", "--dry-run=maybe"}, `invalid argument "maybe" for "--dry-run" flag: want "none", "client" or "server"`},
		{[]string{"create", "deployment", "x", "--image=a", "-o", "wide"}, `--output "wide"`},
		{[]string{"expose", "deployment", "nope", "--port=80"}, "not found"},
		{[]string{"expose", "pod", "once"}, "couldn't find port via --port flag or introspection"},
		{[]string{"expose", "deployment", "web", "--port=80", "--type=Ingress"}, `--type "Ingress": want ClusterIP, NodePort or LoadBalancer`},
		{[]string{"create", "service", "externalname", "x"}, "--external-name: required"},
		{[]string{"run", "x"}, "--image: required"},
		{[]string{"run", "x", "--image=a", "--restart=Sometimes"}, `--restart "Sometimes"`},
		{[]string{"run", "x", "--image=a", "--env=NOEQ"}, `--env "NOEQ"`},
		{[]string{"run", "Bad_Name", "--image=a"}, "metadata.name"},
	} {
		mustFail(t, e.run(tc.args...), tc.want)
	}
	for _, n := range []string{"x", "Bad_Name"} {
		if _, err := client.For[*v1.Pod](e.c).Get(ctxT(t), "default", n); !apierrors.IsNotFound(err) {
			t.Errorf("a failed command created pod %s", n)
		}
	}
	if _, err := client.For[*v1.ConfigMap](e.c).Get(ctxT(t), "default", "x"); !apierrors.IsNotFound(err) {
		t.Errorf("a failed create configmap stored x")
	}
}

func TestCreateServiceAccount(t *testing.T) {
	e := newEnv(t)
	if r := mustOK(t, e.run("create", "serviceaccount", "builder", "--dry-run=client")); r.out != "serviceaccount/builder created (dry run)\n" {
		t.Errorf("dry run: %v", r)
	}
	if _, err := client.For[*v1.ServiceAccount](e.c).Get(ctxT(t), "default", "builder"); !apierrors.IsNotFound(err) {
		t.Fatalf("a dry run stored the account: %v", err)
	}
	if r := mustOK(t, e.run("create", "sa", "builder")); r.out != "serviceaccount/builder created\n" {
		t.Errorf("create sa: %v", r)
	}
	if sa := get[*v1.ServiceAccount](t, e.c, "default", "builder"); sa.Metadata.Namespace != "default" {
		t.Errorf("stored: %v", sa)
	}
	mustFail(t, e.run("create", "serviceaccount", "builder"), `serviceaccounts "builder" already exists`)
	mustFail(t, e.run("create", "serviceaccount", "Bad_Name"), "Bad_Name")
}
