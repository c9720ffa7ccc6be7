package kubeapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/apiserver/kubeapi/kubectltest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/manager"
)

// env is the package's one cluster: a real apiserver with TLS, client
// certificates, tokens and RBAC on a real embedded etcd, serving the
// Kubernetes API, with the controller-manager running in-process (so
// rollouts, cascading deletes and Available conditions happen), and
// kubeconfigs for an admin, a user bound to view, and a revoked token.
type env struct {
	srv   *apiservertest.Server
	dir   string
	admin string // kubeconfig paths
	view  string
	anon  string // a token the server does not know
	// http is an HTTP client presenting the admin certificate.
	http *http.Client
	url  string
}

const (
	viewerToken = "viewer-token-0123456789"
	scalerToken = "scaler-token-0123456789" // a user RBAC gives only deployments/scale
)

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(viewerToken+",viewer,viewer-uid,\n"+scalerToken+",scaler,scaler-uid,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.StartSecure(t, apiservertest.WithKubeAPI, func(c *apiserver.Config) { c.Auth.TokenFile = tokens })
	e := &env{srv: srv, dir: dir, url: "https://" + srv.KubeAddr()}
	pki := srv.PKIDir
	e.admin = e.kubeconfig(t, "admin", fmt.Sprintf("client-certificate: %s\nclient-key: %s", filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key")))
	e.view = e.kubeconfig(t, "viewer", "token: "+viewerToken)
	e.anon = e.kubeconfig(t, "revoked", "token: revoked-token-that-no-one-has")
	tlsCfg, err := client.TLSFromFiles(filepath.Join(pki, "ca.crt"), filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	e.http = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true}, Timeout: 30 * time.Second}
	e.startControllers(t)
	return e
}

func (e *env) kubeconfig(t *testing.T, user, creds string) string {
	t.Helper()
	p := filepath.Join(e.dir, user+".kubeconfig")
	kubectltest.Kubeconfig(t, p, e.srv.KubeAddr(), filepath.Join(e.srv.PKIDir, "ca.crt"), user, creds)
	return p
}

// startControllers runs the controller-manager with its own certificate.
func (e *env) startControllers(t *testing.T) {
	c := e.srv.ClientAs("controller-manager")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, manager.Config{Client: c, Identity: "kubeapi-test", Registry: prometheus.NewRegistry(),
			Logger: controllertest.Logger(), Controllers: []string{"replicaset", "deployment", "daemonset", "statefulset", "garbagecollector"}})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func kubectlPath(t *testing.T) string { return kubectltest.Path(t) }

// kubectl runs kubectl with a kubeconfig and returns its output; it fails
// the test when kubectl fails.
func (e *env) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.kubectlAs(t, e.admin, "", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlAs runs kubectl with kubeconfig cfg and stdin; it returns the
// combined output and the error.
func (e *env) kubectlAs(t *testing.T, cfg, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg, "HOME="+e.dir, "KUBECACHEDIR="+filepath.Join(e.dir, "cache"))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// eventually polls f until it returns nil.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, what, f)
}

// do sends a request to the Kubernetes API as the admin.
func (e *env) do(t *testing.T, method, path, contentType string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}
