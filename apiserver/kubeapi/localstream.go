package kubeapi

import (
	"context"
	"io"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// localStream is a gRPC server stream served in-process: the HTTP door
// calls a streaming handler (Objects.Watch, NodeAPI.Logs, NodeAPI.Exec)
// directly, with send and recv standing in for the wire.
type localStream[In, Out any] struct {
	ctx  context.Context
	send func(*Out) error
	recv func() (*In, error)
}

func (s *localStream[In, Out]) Send(m *Out) error { return s.send(m) }

func (s *localStream[In, Out]) Recv() (*In, error) {
	if s.recv == nil {
		return nil, io.EOF
	}
	return s.recv()
}

func (s *localStream[In, Out]) Context() context.Context     { return s.ctx }
func (s *localStream[In, Out]) SetHeader(metadata.MD) error  { return nil }
func (s *localStream[In, Out]) SendHeader(metadata.MD) error { return nil }
func (s *localStream[In, Out]) SetTrailer(metadata.MD)       {}

func (s *localStream[In, Out]) SendMsg(m any) error { return s.send(m.(*Out)) }

func (s *localStream[In, Out]) RecvMsg(m any) error {
	in, err := s.Recv()
	if err != nil {
		return err
	}
	proto.Merge(m.(proto.Message), any(in).(proto.Message))
	return nil
}
