package apiserver_test

import (
	"bytes"
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// echoEnd is a kubelet's end whose exec runs "cat" (stdin back on stdout,
// a line on stderr, exit 0) or "fail" (exit 3).
type echoEnd struct {
	v1.UnimplementedNodeAPIServer
}

func (echoEnd) Exec(s v1.NodeAPI_ExecServer) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	if first.GetStart().GetCommand()[0] == "fail" {
		return s.Send(&v1.ExecOutput{Exited: true, ExitCode: 3})
	}
	for {
		in, err := s.Recv()
		if err != nil {
			return err
		}
		if len(in.Stdin) > 0 {
			if err := s.Send(&v1.ExecOutput{Stdout: in.Stdin}); err != nil {
				return err
			}
		}
		if in.StdinEof {
			if err := s.Send(&v1.ExecOutput{Stderr: []byte("done\n")}); err != nil {
				return err
			}
			return s.Send(&v1.ExecOutput{Exited: true})
		}
	}
}

// Attach writes a line and ends with the process's exit 3.
func (echoEnd) Attach(s v1.NodeAPI_AttachServer) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	if err := s.Send(&v1.ExecOutput{Stdout: []byte("bye\n")}); err != nil {
		return err
	}
	return s.Send(&v1.ExecOutput{Exited: true, ExitCode: 3})
}

// TestKubeExecSPDY: client-go's SPDY executor (the remote command protocol
// of kubectl before 1.30 and of many tools) runs a command through the
// Kubernetes door: stdin reaches it, stdout and stderr come back, and a
// non-zero exit comes back as client-go's exit error with the code.
func TestKubeExecSPDY(t *testing.T) {
	s := apiservertest.StartSecure(t, apiservertest.WithKubeAPI)
	ctx := ctxT(t)
	heartbeat(t, s.ClientAs("node-n1"), "n1")
	srv := grpc.NewServer()
	v1.RegisterNodeAPIServer(srv, echoEnd{})
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go tunnel.Serve(tctx, s.ClientAs("node-n1"), "n1", srv, nil)
	if _, err := client.For[*v1.Pod](s.Client).Create(ctx, newPod("web", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Bind(ctx, "default", "web", "n1", 0); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: "https://" + s.KubeAddr(), TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(s.PKIDir, "ca.crt"),
		CertFile: filepath.Join(s.PKIDir, "admin.crt"), KeyFile: filepath.Join(s.PKIDir, "admin.key")}}
	run := func(command, stdin string) (string, string, error) {
		u := "https://" + s.KubeAddr() + "/api/v1/namespaces/default/pods/web/exec?container=c&command=" + command + "&stdin=true&stdout=true&stderr=true"
		ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", mustURL(t, u))
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		err = ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut})
		return out.String(), errOut.String(), err
	}
	var out, errOut string
	wait.Eventually(t, 30*time.Second, "the node's tunnel", func() error {
		var err error
		out, errOut, err = run("cat", "hello\n")
		return err
	})
	if out != "hello\n" || errOut != "done\n" {
		t.Errorf("cat over SPDY: stdout %q, stderr %q", out, errOut)
	}
	_, _, err := run("fail", "")
	if ee, ok := err.(utilexec.ExitError); !ok || ee.ExitStatus() != 3 {
		t.Errorf("fail over SPDY: %v (%T), want exit status 3", err, err)
	}

	// An attach whose process exits 3 ends in Success, as the kubelet's
	// streaming server reports every attach that ended (so kubectl attach
	// exits 0), over SPDY and over WebSocket.
	u := mustURL(t, "https://"+s.KubeAddr()+"/api/v1/namespaces/default/pods/web/attach?container=c&stdout=true&stderr=true")
	spdyEx, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	wsEx, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		t.Fatal(err)
	}
	for name, ex := range map[string]remotecommand.Executor{"SPDY": spdyEx, "WebSocket": wsEx} {
		var out, errOut bytes.Buffer
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
		cancel()
		if err != nil || out.String() != "bye\n" {
			t.Errorf("attach over %s to a process that exits 3: %v, stdout %q; want no error and its output", name, err, out.String())
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
