package apiserver

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"

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

// podNode finds the node a pod runs on and returns its client and name.
func (r *nodeRelay) podNode(ctx context.Context, verb, sub, ns, name string) (v1.NodeAPIClient, string, error) {
	podKind, _ := kinds.Lookup("Pod")
	if name == "" {
		return nil, "", apierrors.Invalid("pod", "required")
	}
	if err := r.s.authorize(ctx, verb, podKind, sub, namespaceOf(podKind, ns), name, ""); err != nil {
		return nil, "", err
	}
	obj, err := r.s.store.Get(ctx, podKind, namespaceOf(podKind, ns), name)
	if err != nil {
		return nil, "", err
	}
	node := obj.(*v1.Pod).GetSpec().GetNodeName()
	if node == "" {
		return nil, "", apierrors.New(apierrors.ErrInvalid, "pod %s/%s is not scheduled to a node yet: no logs, exec, attach or port-forward until it is (see tugctl describe pod %s)", namespaceOf(podKind, ns), name, name)
	}
	nc, err := r.s.tunnels.Node(node)
	return nc, node, err
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

// session is the audit of one relayed session: started logs the line of
// a session that reached its kubelet, end the one with its result.
type session struct {
	s   *Server
	ctx context.Context
	e   auditEntry
}

func (r *nodeRelay) session(ctx context.Context, e auditEntry) *session {
	return &session{s: r.s, ctx: ctx, e: e}
}

func (ss *session) started(node string) {
	ss.e.Node = node
	e := ss.e
	e.Stage = stageStarted
	ss.s.auditEvent(ss.ctx, e)
}

func (ss *session) end(err error) {
	e := ss.e
	e.Stage = stageComplete
	ss.s.auditEvent(ss.ctx, e.withResult(err))
}

func (r *nodeRelay) Logs(req *v1.LogsRequest, stream v1.NodeAPI_LogsServer) (err error) {
	ctx := stream.Context()
	req.Namespace = namespaceOf(&kinds.Kind{Namespaced: true}, req.Namespace)
	ss := r.session(ctx, auditEntry{Verb: "get", Kind: "Pod", Namespace: req.Namespace, Name: req.Pod, Subresource: "log", Container: req.Container})
	defer func() { ss.end(err) }()
	nc, node, err := r.podNode(ctx, "get", "log", req.Namespace, req.Pod)
	if err != nil {
		return err
	}
	up, err := nc.Logs(ctx, req)
	if err != nil {
		return err
	}
	ss.started(node)
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
	return r.execLike(stream, "exec", true, func(ctx context.Context, nc v1.NodeAPIClient) (v1.NodeAPI_ExecClient, error) { return nc.Exec(ctx) })
}

// Attach relays NodeAPI.Attach as Exec is relayed, authorized as create
// on pods/attach.
func (r *nodeRelay) Attach(stream v1.NodeAPI_AttachServer) error {
	return r.execLike(stream, "attach", false, func(ctx context.Context, nc v1.NodeAPIClient) (v1.NodeAPI_AttachClient, error) { return nc.Attach(ctx) })
}

// execLike relays exec and attach: the first message names the pod (and,
// for exec, the command), the rest flows both ways.
func (r *nodeRelay) execLike(stream grpc.BidiStreamingServer[v1.ExecInput, v1.ExecOutput], sub string, command bool,
	open func(context.Context, v1.NodeAPIClient) (grpc.BidiStreamingClient[v1.ExecInput, v1.ExecOutput], error)) (err error) {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	ss := r.session(stream.Context(), auditEntry{Verb: "create", Kind: "Pod", Subresource: sub})
	defer func() { ss.end(err) }()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if first.Start == nil {
		return apierrors.Invalid("start", "the first %s message must carry ExecStart", sub)
	}
	first.Start.Namespace = namespaceOf(&kinds.Kind{Namespaced: true}, first.Start.Namespace)
	ss.e.Namespace, ss.e.Name, ss.e.Container, ss.e.Command = first.Start.Namespace, first.Start.Pod, first.Start.Container, first.Start.Command
	switch {
	case command && len(first.Start.Command) == 0:
		return apierrors.Invalid("start.command", "required")
	case !command && len(first.Start.Command) > 0:
		return apierrors.Invalid("start.command", "attach connects to the container's own process: no command")
	}
	nc, node, err := r.podNode(ctx, "create", sub, first.Start.Namespace, first.Start.Pod)
	if err != nil {
		return err
	}
	up, err := open(ctx, nc)
	if err != nil {
		return err
	}
	ss.started(node)
	return pipe(ctx, cancel, stream, up, first)
}

// PortForward relays one forwarded connection to the pod's node,
// authorized as create on pods/portforward.
func (r *nodeRelay) PortForward(stream v1.NodeAPI_PortForwardServer) (err error) {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	ss := r.session(stream.Context(), auditEntry{Verb: "create", Kind: "Pod", Subresource: "portforward"})
	defer func() { ss.end(err) }()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	st := first.GetStart()
	if st == nil {
		return apierrors.Invalid("start", "the first port-forward frame must carry PortForwardStart")
	}
	st.Namespace = namespaceOf(&kinds.Kind{Namespaced: true}, st.Namespace)
	ss.e.Namespace, ss.e.Name, ss.e.Port = st.Namespace, st.Pod, st.Port
	if st.Port < 1 || st.Port > 65535 {
		return apierrors.Invalid("start.port", "%d is not a TCP port (1-65535)", st.Port)
	}
	nc, node, err := r.podNode(ctx, "create", "portforward", st.Namespace, st.Pod)
	if err != nil {
		return err
	}
	up, err := nc.PortForward(ctx)
	if err != nil {
		return err
	}
	ss.started(node)
	return pipe(ctx, cancel, stream, up, first)
}

func (r *nodeRelay) ImportImage(stream v1.NodeAPI_ImportImageServer) (err error) {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	ss := r.session(stream.Context(), auditEntry{Verb: "create", Kind: "Node", Subresource: "images"})
	defer func() { ss.end(err) }()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	ss.e.Name = first.NodeName
	nc, err := r.named(ctx, "create", "images", first.NodeName)
	if err != nil {
		return err
	}
	up, err := nc.ImportImage(ctx)
	if err != nil {
		return err
	}
	ss.started(first.NodeName)
	return pipe(ctx, cancel, stream, up, first)
}

// pipe relays a bidirectional stream between the user (down) and the
// kubelet (up), first being the user's first message, already read: the
// user's messages go up until the user closes its side (then up is
// closed for sending too) or fails (then the call is cancelled, so the
// kubelet stops what it runs for the user); the kubelet's go down until it
// ends the stream, whose status is the relay's.
func pipe[In, Out any](ctx context.Context, cancel context.CancelFunc, down grpc.BidiStreamingServer[In, Out], up grpc.BidiStreamingClient[In, Out], first *In) error {
	if err := up.Send(first); err != nil {
		return err
	}
	go func() {
		for {
			in, err := down.Recv()
			if errors.Is(err, io.EOF) {
				_ = up.CloseSend()
				return
			}
			if err != nil {
				cancel()
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
			if ctx.Err() != nil && down.Context().Err() != nil {
				return down.Context().Err()
			}
			return err
		}
		if err := down.Send(out); err != nil {
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
