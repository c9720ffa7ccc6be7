package apiserver

import (
	"context"
	"errors"
	"io"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// nodeRelay serves NodeAPI to users by relaying each call over the tunnel
// of the kubelet that runs the pod (or of the named node).
type nodeRelay struct {
	v1.UnimplementedNodeAPIServer
	s *Server
}

// podNode finds the node a pod runs on.
func (r *nodeRelay) podNode(ctx context.Context, verb, sub, ns, name string) (v1.NodeAPIClient, error) {
	podKind, _ := kinds.Lookup("Pod")
	if name == "" {
		return nil, apierrors.Invalid("pod", "required")
	}
	if err := r.s.authorize(ctx, verb, podKind, sub, namespaceOf(podKind, ns), name, ""); err != nil {
		return nil, err
	}
	obj, err := r.s.store.Get(ctx, podKind, namespaceOf(podKind, ns), name)
	if err != nil {
		return nil, err
	}
	node := obj.(*v1.Pod).GetSpec().GetNodeName()
	if node == "" {
		return nil, apierrors.New(apierrors.ErrInvalid, "pod %s/%s is not scheduled to a node yet: no logs or exec until it is (see tugctl describe pod %s)", namespaceOf(podKind, ns), name, name)
	}
	return r.s.tunnels.Node(node)
}

func (r *nodeRelay) named(ctx context.Context, verb, sub, node string) (v1.NodeAPIClient, error) {
	if node == "" {
		return nil, apierrors.Invalid("nodeName", "required")
	}
	nodeKind, _ := kinds.Lookup("Node")
	if err := r.s.authorize(ctx, verb, nodeKind, sub, "", node, ""); err != nil {
		return nil, err
	}
	return r.s.tunnels.Node(node)
}

func (r *nodeRelay) Logs(req *v1.LogsRequest, stream v1.NodeAPI_LogsServer) error {
	ctx := stream.Context()
	nc, err := r.podNode(ctx, "get", "log", req.Namespace, req.Pod)
	if err != nil {
		return err
	}
	req.Namespace = namespaceOf(&kinds.Kind{Namespaced: true}, req.Namespace)
	up, err := nc.Logs(ctx, req)
	if err != nil {
		return err
	}
	for {
		chunk, err := up.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(chunk); err != nil {
			return err
		}
	}
}

func (r *nodeRelay) Exec(stream v1.NodeAPI_ExecServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if first.Start == nil {
		return apierrors.Invalid("start", "the first exec message must carry ExecStart")
	}
	if len(first.Start.Command) == 0 {
		return apierrors.Invalid("start.command", "required")
	}
	first.Start.Namespace = namespaceOf(&kinds.Kind{Namespaced: true}, first.Start.Namespace)
	nc, err := r.podNode(ctx, "create", "exec", first.Start.Namespace, first.Start.Pod)
	if err != nil {
		return err
	}
	up, err := nc.Exec(ctx)
	if err != nil {
		return err
	}
	if err := up.Send(first); err != nil {
		return err
	}
	go func() {
		for {
			in, err := stream.Recv()
			if err != nil {
				_ = up.CloseSend()
				return
			}
			if err := up.Send(in); err != nil {
				return
			}
		}
	}()
	for {
		out, err := up.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(out); err != nil {
			return err
		}
	}
}

func (r *nodeRelay) ImportImage(stream v1.NodeAPI_ImportImageServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	nc, err := r.named(ctx, "create", "images", first.NodeName)
	if err != nil {
		return err
	}
	up, err := nc.ImportImage(ctx)
	if err != nil {
		return err
	}
	if err := up.Send(first); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		for {
			in, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				errc <- up.CloseSend()
				return
			}
			if err != nil {
				errc <- err
				cancel()
				return
			}
			if err := up.Send(in); err != nil {
				errc <- err
				return
			}
		}
	}()
	for {
		p, err := up.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(p); err != nil {
			return err
		}
	}
}

func (r *nodeRelay) ListImages(ctx context.Context, req *v1.ListImagesRequest) (*v1.ListImagesResponse, error) {
	nc, err := r.named(ctx, "get", "images", req.NodeName)
	if err != nil {
		return nil, err
	}
	return nc.ListImages(ctx, req)
}

func (r *nodeRelay) Stats(ctx context.Context, req *v1.StatsRequest) (*v1.StatsResponse, error) {
	nc, err := r.named(ctx, "get", "stats", req.NodeName)
	if err != nil {
		return nil, err
	}
	return nc.Stats(ctx, req)
}

func (r *nodeRelay) CheckService(ctx context.Context, req *v1.CheckServiceRequest) (*v1.CheckServiceResponse, error) {
	nc, err := r.named(ctx, "get", "servicecheck", req.NodeName)
	if err != nil {
		return nil, err
	}
	return nc.CheckService(ctx, req)
}
