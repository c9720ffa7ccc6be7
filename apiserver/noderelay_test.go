package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// nodeEnd is the kubelet's end of the tunnel in this test: it answers
// NodeAPI calls so the relay through the apiserver can be checked.
type nodeEnd struct {
	v1.UnimplementedNodeAPIServer
}

func (nodeEnd) Logs(req *v1.LogsRequest, s v1.NodeAPI_LogsServer) error {
	for i := 0; i < 3; i++ {
		if err := s.Send(&v1.LogsChunk{Data: []byte(req.Pod + " line\n")}); err != nil {
			return err
		}
	}
	return nil
}

func (nodeEnd) Exec(s v1.NodeAPI_ExecServer) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	var in []byte
	for {
		m, err := s.Recv()
		if err != nil || m.StdinEof {
			break
		}
		in = append(in, m.Stdin...)
	}
	out := strings.Join(first.Start.Command, " ") + ":" + string(in)
	if err := s.Send(&v1.ExecOutput{Stdout: []byte(out)}); err != nil {
		return err
	}
	return s.Send(&v1.ExecOutput{Exited: true, ExitCode: 3})
}

func TestLogsAndExecThroughTunnel(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	srv := grpc.NewServer()
	v1.RegisterNodeAPIServer(srv, nodeEnd{})
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go tunnel.Serve(tctx, s.Client, "n1", srv, nil)
	wait.Eventually(t, 30*time.Second, "the tunnel of n1", func() error {
		if nodes := s.Tunnels().Nodes(); len(nodes) != 1 {
			return fmt.Errorf("tunnels from %v", nodes)
		}
		return nil
	})

	pods := client.For[*v1.Pod](s.Client)
	if _, err := pods.Create(ctx, newPod("web", nil)); err != nil {
		t.Fatal(err)
	}
	api := v1.NewNodeAPIClient(s.Client.Conn())
	// Unscheduled pod: a clear error.
	ls, err := api.Logs(ctx, &v1.LogsRequest{Pod: "web"})
	if err == nil {
		_, err = ls.Recv()
	}
	if !strings.Contains(apierrors.FromGRPC(err).Error(), "not scheduled") {
		t.Fatalf("want 'not scheduled', got %v", err)
	}
	if _, err := s.Client.Bind(ctx, "default", "web", "n1", 0); err != nil {
		t.Fatal(err)
	}
	ls, err = api.Logs(ctx, &v1.LogsRequest{Pod: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readLogs(t, ls); got != "web line\nweb line\nweb line\n" {
		t.Fatalf("logs: %q", got)
	}
	ex, err := api.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = ex.Send(&v1.ExecInput{Start: &v1.ExecStart{Pod: "web", Command: []string{"cat"}, Stdin: true}})
	_ = ex.Send(&v1.ExecInput{Stdin: []byte("hi")})
	_ = ex.Send(&v1.ExecInput{StdinEof: true})
	var out string
	code := int32(-1)
	for {
		m, err := ex.Recv()
		if err != nil {
			break
		}
		out += string(m.Stdout)
		if m.Exited {
			code = m.ExitCode
		}
	}
	if out != "cat:hi" || code != 3 {
		t.Fatalf("exec: %q code %d", out, code)
	}
	// A node with no tunnel: Unavailable naming the node.
	_, err = api.ListImages(ctx, &v1.ListImagesRequest{NodeName: "n2"})
	if !errors.Is(apierrors.FromGRPC(err), apierrors.ErrUnavailable) || !strings.Contains(err.Error(), "n2") {
		t.Fatalf("want Unavailable naming n2, got %v", err)
	}
}
