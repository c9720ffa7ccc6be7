package tugctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// runWithEnv runs a tugctl command line with exactly these environment
// variables.
func runWithEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &cli.Options{Streams: cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Getenv: func(k string) string { return env[k] }}
	code := Execute(ctxT(t), o, args)
	return result{out.String(), errOut.String(), code}
}

// One kubeconfig serves both CLIs: kubectl talks to the cluster's server
// (the Kubernetes door), tugctl to the gRPC address in its tugboat.io/grpc
// extension, both with the same CA and client certificate — given as
// files or inline.
func TestKubeconfigAgainstAServer(t *testing.T) {
	srv := apiservertest.StartSecure(t, apiservertest.WithKubeAPI)
	dir := t.TempDir()
	pki := srv.PKIDir
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(pki, name))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	files := writeFile(t, dir, "files.kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tugboat
  cluster:
    server: https://%s
    certificate-authority: %s
    extensions:
    - name: tugboat.io/grpc
      extension: {server: "%s"}
users:
- name: admin
  user: {client-certificate: %s, client-key: %s}
contexts:
- name: tugboat
  context: {cluster: tugboat, user: admin, namespace: kube-system}
current-context: tugboat
`, srv.KubeAddr(), filepath.Join(pki, "ca.crt"), srv.Addr(), filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key")))
	inline := writeFile(t, dir, "inline.kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tugboat
  cluster:
    server: https://%s
    certificate-authority-data: %s
    extensions:
    - name: tugboat.io/grpc
      extension: {server: "%s"}
users:
- name: admin
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: tugboat
  context: {cluster: tugboat, user: admin}
current-context: tugboat
`, srv.KubeAddr(), read("ca.crt"), srv.Addr(), read("admin.crt"), read("admin.key")))
	env := map[string]string{"HOME": dir}
	for _, args := range [][]string{{"--kubeconfig", files, "get", "leases"}, {"--config", inline, "get", "namespaces"}} {
		r := mustOK(t, runWithEnv(t, env, args...))
		if args[len(args)-1] == "namespaces" && !strings.Contains(r.out, "kube-system") {
			t.Errorf("tugctl %v:\n%s", args, r.out)
		}
	}
	env["KUBECONFIG"] = inline
	if r := mustOK(t, runWithEnv(t, env, "create", "namespace", "via-kubeconfig")); r.out != "namespace/via-kubeconfig created\n" {
		t.Errorf("create through KUBECONFIG: %v", r)
	}
	// kubectl reads the same file (and tugctl's edits keep it readable).
	mustOK(t, runWithEnv(t, env, "config", "set-context", "--current", "--namespace", "via-kubeconfig"))
	if p, err := exec.LookPath("kubectl"); err == nil {
		cmd := exec.CommandContext(context.Background(), p, "get", "ns", "via-kubeconfig", "-o", "name")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+inline, "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "namespace/via-kubeconfig\n" {
			t.Errorf("kubectl with the kubeconfig tugctl edited: %v\n%s", err, out)
		}
		cmd = exec.CommandContext(context.Background(), p, "config", "view", "--minify", "-o", "jsonpath={.contexts[0].context.namespace}")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+inline, "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "via-kubeconfig" {
			t.Errorf("kubectl config view: %v %s", err, out)
		}
	}
	// The error for a bad certificate names what it read.
	bad := writeFile(t, dir, "bad.kubeconfig", strings.Replace(mustRead(t, inline), "client-key-data: ", "client-key-data: AAAA", 1))
	mustFail(t, runWithEnv(t, map[string]string{"HOME": dir}, "--kubeconfig", bad, "get", "ns"), "client certificate")
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tugctl config over a KUBECONFIG list edits each entry in the file it
// came from and new ones in the first file, as kubectl config does:
// set-context, use-context, rename-context, delete-context, set-cluster
// (the gRPC address as the tugboat.io/grpc extension), current-context,
// get-contexts, view (secrets redacted).
func TestConfigCommandsOnKubeconfigs(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.kubeconfig", `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://one:6444", certificate-authority: ca.crt}
users:
- name: u
  user: {token: secret-token-abc}
contexts:
- name: first
  context: {cluster: one, user: u}
current-context: first
`)
	b := writeFile(t, dir, "b.kubeconfig", `apiVersion: v1
kind: Config
contexts:
- name: second
  context: {cluster: one, user: u, namespace: team}
`)
	env := map[string]string{"HOME": dir, "KUBECONFIG": a + string(os.PathListSeparator) + b}
	run := func(args ...string) result { t.Helper(); return runWithEnv(t, env, args...) }
	if r := mustOK(t, run("config", "current-context")); r.out != "first\n" {
		t.Errorf("current-context: %q", r.out)
	}
	r := mustOK(t, run("config", "get-contexts"))
	if strings.Join(row(t, r.out, "*"), " ") != "* first one u" || strings.Join(row(t, r.out, "second"), " ") != "second one u team" {
		t.Errorf("get-contexts:\n%s", r.out)
	}
	mustOK(t, run("config", "set-context", "second", "--namespace", "team2"))
	mustOK(t, run("config", "use-context", "second"))
	mustOK(t, run("config", "set-context", "third", "--cluster", "one"))
	if r := mustOK(t, run("config", "rename-context", "second", "renamed")); r.out != "Context \"second\" renamed to \"renamed\".\n" {
		t.Errorf("rename-context: %q", r.out)
	}
	if r := mustOK(t, run("config", "set-cluster", "one", "--server", "one.grpc:7443")); r.out != "Cluster \"one\" set.\n" {
		t.Errorf("set-cluster: %q", r.out)
	}
	if r := mustOK(t, run("config", "delete-context", "first")); r.out != "deleted context first from the KUBECONFIG files "+a+", "+b+"\n" {
		t.Errorf("delete-context: %q", r.out)
	}
	fa, fb := mustRead(t, a), mustRead(t, b)
	// a: current-context (kubectl writes it to the first file), the new
	// context, the cluster with its extension; first is gone.
	for _, want := range []string{"current-context: renamed", "name: third", "tugboat.io/grpc", "server: one.grpc:7443", "certificate-authority: ca.crt", "token: secret-token-abc"} {
		if !strings.Contains(fa, want) {
			t.Errorf("a.kubeconfig lacks %q:\n%s", want, fa)
		}
	}
	if strings.Contains(fa, "name: first") {
		t.Errorf("a.kubeconfig still has the deleted context:\n%s", fa)
	}
	if !strings.Contains(fb, "namespace: team2") || strings.Contains(fb, "name: second") && !strings.Contains(fb, "renamed") {
		t.Errorf("b.kubeconfig:\n%s", fb)
	}
	s, err := (&cli.Options{Getenv: func(k string) string { return env[k] }}).Settings()
	if err != nil || s.Server != "one.grpc:7443" || s.Namespace != "team2" || s.Context != "renamed" || s.Token != "secret-token-abc" || s.CAFile != filepath.Join(dir, "ca.crt") {
		t.Errorf("settings after the edits: %+v %v", s, err)
	}
	r = mustOK(t, run("config", "view"))
	if strings.Contains(r.out, "secret-token-abc") || !strings.Contains(r.out, "token: REDACTED") {
		t.Errorf("view shows the token:\n%s", r.out)
	}
	if r := mustOK(t, run("config", "get-clusters")); r.out != "NAME\none\n" {
		t.Errorf("get-clusters: %q", r.out)
	}
	if r := mustOK(t, run("config", "get-users")); r.out != "NAME\nu\n" {
		t.Errorf("get-users: %q", r.out)
	}
	// --minify keeps the current context and what it uses; --flatten
	// embeds the CA file.
	r = mustOK(t, run("config", "view", "--minify"))
	if !strings.Contains(r.out, "name: renamed") || strings.Contains(r.out, "name: third") {
		t.Errorf("view --minify:\n%s", r.out)
	}
	writeFile(t, dir, "ca.crt", "CADATA")
	r = mustOK(t, run("config", "view", "--minify", "--flatten"))
	if !strings.Contains(r.out, "certificate-authority-data: Q0FEQVRB") || !strings.Contains(r.out, "token: secret-token-abc") {
		t.Errorf("view --flatten:\n%s", r.out)
	}
	mustFail(t, run("config", "rename-context", "nope", "x"), `cannot rename the context "nope", it's not in the KUBECONFIG files`)
	mustFail(t, run("config", "rename-context", "renamed", "third"), `the context "third" already exists`)
	mustFail(t, run("config", "delete-context", "nope"), "cannot delete context nope, not in")
	mustFail(t, run("config", "use-context", "nope"), `context "nope": no such context in the KUBECONFIG files`)
	// The deleted current context warns and unsets current-context.
	r = mustOK(t, run("config", "delete-context", "renamed"))
	if !strings.Contains(r.err, "this removed your active context") {
		t.Errorf("delete of the current context: %v", r)
	}
	mustFail(t, run("config", "current-context"), "current-context is not set")
	mustFail(t, run("config", "view", "--minify"), "--minify: current-context is not set")
}

// tugctl's own form keeps its form through rename and delete, and refuses
// what it cannot hold.
func TestOwnConfigRenameDelete(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".tugboat"), 0o755)
	p := writeFile(t, filepath.Join(home, ".tugboat"), "config", "clusters:\n- {name: c, server: c:1}\ncontexts:\n- {name: a, cluster: c}\n- {name: b, cluster: c}\ncurrent-context: a\n")
	mustOK(t, runConfig(t, home, "config", "rename-context", "a", "z"))
	mustOK(t, runConfig(t, home, "config", "delete-context", "b"))
	if got := mustRead(t, p); got != "clusters:\n- name: c\n  server: c:1\ncontexts:\n- cluster: c\n  name: z\ncurrent-context: z\n" {
		t.Errorf("config after rename and delete:\n%s", got)
	}
	mustFail(t, runConfig(t, home, "config", "set-cluster", "c", "--server", "https://c:6444"), "cannot be kept in tugctl's config form")
	if got := mustRead(t, p); strings.Contains(got, "https") {
		t.Errorf("a refused edit was written:\n%s", got)
	}
}
