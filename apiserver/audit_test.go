package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// auditEnd is a kubelet's end that ends every session at once.
type auditEnd struct {
	v1.UnimplementedNodeAPIServer
}

func (auditEnd) Logs(_ *v1.LogsRequest, s v1.NodeAPI_LogsServer) error {
	return s.Send(&v1.LogsChunk{Data: []byte("log\n")})
}

func (auditEnd) Exec(s v1.NodeAPI_ExecServer) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	return s.Send(&v1.ExecOutput{Exited: true})
}

func (auditEnd) Attach(s v1.NodeAPI_AttachServer) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	return s.Send(&v1.ExecOutput{Exited: true})
}

func (auditEnd) PortForward(s v1.NodeAPI_PortForwardServer) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	return nil
}

type auditLine map[string]any

func (l auditLine) is(want map[string]string) bool {
	for k, v := range want {
		if fmt.Sprint(l[k]) != v {
			return false
		}
	}
	return true
}

// waitAudit waits until the audit log has a line with every field of want.
func waitAudit(t *testing.T, path string, want map[string]string) auditLine {
	t.Helper()
	var found auditLine
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("an audit line %v", want), func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l auditLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.is(want) {
				found = l
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	return found
}

// TestAuditRecordsWhoWhatWhereResult: unauthenticated mutating attempts
// (both doors), joins naming the node and token, the logs, exec, attach
// and port-forward sessions with pod, node, source and result, and tunnel
// connects.
func TestAuditRecordsWhoWhatWhereResult(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := apiservertest.StartSecure(t, apiservertest.WithKubeAPI, withTokens(t, "vic"), func(c *apiserver.Config) { c.Auth.AuditLogPath = path })
	ctx := ctxT(t)

	// No credentials, a write: refused and recorded with its address.
	if _, err := client.For[*v1.Pod](s.ClientAs("")).Create(ctx, newPod("anon", nil)); err == nil {
		t.Fatal("anonymous create accepted")
	}
	l := waitAudit(t, path, map[string]string{"verb": "Create", "name": "anon", "code": "Unauthenticated", "user": ""})
	if src, _ := l["source"].(string); !strings.HasPrefix(src, "127.0.0.1:") {
		t.Errorf("the line names no source address: %v", l)
	}
	// A bad token, on the Kubernetes HTTP door.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: mustTLS(t, s, "")}}
	req, _ := http.NewRequest("POST", "https://"+s.KubeAddr()+"/api/v1/namespaces/default/configmaps", strings.NewReader(`{"metadata":{"name":"x"}}`))
	req.Header.Set("Authorization", "Bearer abcdef.0123456789abcdef")
	if resp, err := hc.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HTTP with a bad token: %v %v", resp, err)
	}
	waitAudit(t, path, map[string]string{"verb": "POST", "name": "/api/v1/namespaces/default/configmaps", "code": "Unauthenticated"})

	// Joins name the node and the token's id (never its secret).
	tok := joinToken(t, s, "")
	id, secret, _ := strings.Cut(tok, ".")
	heartbeat(t, s.ClientAs("node-n1"), "n1")
	_, _ = join(t, s, tok, "n1")
	waitAudit(t, path, map[string]string{"verb": "JoinNode", "node": "n1", "token": id, "code": "AlreadyExists"})
	if _, err := join(t, s, tok, "n5"); err != nil {
		t.Fatal(err)
	}
	waitAudit(t, path, map[string]string{"verb": "JoinNode", "node": "n5", "token": id, "code": "OK"})
	if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
		t.Error("the audit log holds a token's secret")
	}

	// Tunnel connects: accepted, and a second one refused.
	srv := grpc.NewServer()
	v1.RegisterNodeAPIServer(srv, auditEnd{})
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go tunnel.Serve(tctx, s.ClientAs("node-n1"), "n1", srv, nil)
	waitAudit(t, path, map[string]string{"verb": "connect", "subresource": "tunnel", "node": "n1", "user": "system:node:n1", "stage": "ResponseStarted"})
	st, _ := v1.NewNodeTunnelClient(s.ClientAs("node-n1").Conn()).Connect(ctx)
	_ = st.Send(&v1.TunnelFrame{NodeName: "n1"})
	_, _ = st.Recv()
	waitAudit(t, path, map[string]string{"verb": "connect", "subresource": "tunnel", "node": "n1", "code": "AlreadyExists"})

	// Sessions: logs, exec, attach, port-forward, each with pod, node and result.
	if _, err := client.For[*v1.Pod](s.Client).Create(ctx, newPod("web", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Bind(ctx, "default", "web", "n1", 0); err != nil {
		t.Fatal(err)
	}
	api := v1.NewNodeAPIClient(s.Client.Conn())
	ls, err := api.Logs(ctx, &v1.LogsRequest{Pod: "web", Container: "c"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := ls.Recv(); err != nil {
			break
		}
	}
	ex, _ := api.Exec(ctx)
	_ = ex.Send(&v1.ExecInput{Start: &v1.ExecStart{Pod: "web", Command: []string{"cat", "/etc/shadow"}}})
	drain(ex)
	at, _ := api.Attach(ctx)
	_ = at.Send(&v1.ExecInput{Start: &v1.ExecStart{Pod: "web"}})
	drain(at)
	pf, _ := api.PortForward(ctx)
	_ = pf.Send(&v1.PortForwardFrame{Start: &v1.PortForwardStart{Pod: "web", Port: 8080}})
	_ = pf.CloseSend()
	for {
		if _, err := pf.Recv(); err != nil {
			break
		}
	}
	for _, want := range []map[string]string{
		{"verb": "get", "subresource": "log", "name": "web", "namespace": "default", "node": "n1", "container": "c", "user": "admin", "stage": "ResponseComplete", "code": "OK"},
		{"verb": "create", "subresource": "exec", "name": "web", "node": "n1", "command": "[cat /etc/shadow]", "stage": "ResponseStarted"},
		{"verb": "create", "subresource": "exec", "name": "web", "node": "n1", "stage": "ResponseComplete", "code": "OK"},
		{"verb": "create", "subresource": "attach", "name": "web", "node": "n1", "stage": "ResponseComplete"},
		{"verb": "create", "subresource": "portforward", "name": "web", "node": "n1", "port": "8080", "stage": "ResponseComplete"},
	} {
		l := waitAudit(t, path, want)
		if src, _ := l["source"].(string); !strings.HasPrefix(src, "127.0.0.1:") {
			t.Errorf("no source in %v", l)
		}
	}
	// A refused exec is recorded with who and why.
	vic := v1.NewNodeAPIClient(tokenClient(t, s, "vic").Conn())
	vex, _ := vic.Exec(ctx)
	_ = vex.Send(&v1.ExecInput{Start: &v1.ExecStart{Pod: "web", Command: []string{"sh"}}})
	drain(vex)
	waitAudit(t, path, map[string]string{"verb": "create", "subresource": "exec", "user": "vic", "code": "PermissionDenied"})
	// The HTTP door's logs are the same session.
	hreq, _ := http.NewRequest("GET", "https://"+s.KubeAddr()+"/api/v1/namespaces/default/pods/web/log", nil)
	hreq.Header.Set("Authorization", "Bearer vic-token")
	if resp, err := hc.Do(hreq); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	waitAudit(t, path, map[string]string{"verb": "get", "subresource": "log", "user": "vic", "code": "PermissionDenied"})
}

func drain[In, Out any](s grpc.BidiStreamingClient[In, Out]) {
	for {
		if _, err := s.Recv(); err != nil {
			return
		}
	}
}
