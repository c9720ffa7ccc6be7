package controllertest

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// statsServer is a fake kubelet's NodeAPI: only Stats, answering the
// usage ClusterOptions.Usage gives for the node's running pods. It is
// served over the same tunnel a real kubelet opens, so callers reach it
// through the apiserver's node relay as they reach a kubelet.
type statsServer struct {
	v1.UnimplementedNodeAPIServer
	cl   *Cluster
	node string
}

func (s *statsServer) Stats(_ context.Context, req *v1.StatsRequest) (*v1.StatsResponse, error) {
	resp := &v1.StatsResponse{NodeName: s.node, Time: timestamppb.Now(), Node: &v1.ResourceUsage{}}
	for _, p := range s.cl.pods.List() {
		if p.GetSpec().GetNodeName() != s.node || p.GetStatus().GetPhase() != "Running" {
			continue
		}
		cpu, mem := s.cl.opts.Usage(p)
		u := &v1.ResourceUsage{CpuMilli: cpu, MemoryBytes: mem}
		resp.Pods = append(resp.Pods, &v1.PodStats{Namespace: p.GetMetadata().GetNamespace(), Name: p.GetMetadata().GetName(), Usage: u})
		resp.Node.CpuMilli += cpu
		resp.Node.MemoryBytes += mem
	}
	return resp, nil
}

// serveStats opens node's tunnel until ctx ends.
func (cl *Cluster) serveStats(ctx context.Context, wg *sync.WaitGroup, node string) {
	srv := grpc.NewServer()
	v1.RegisterNodeAPIServer(srv, &statsServer{cl: cl, node: node})
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = tunnel.Serve(ctx, cl.c, node, srv, Logger())
		srv.Stop()
	}()
}
