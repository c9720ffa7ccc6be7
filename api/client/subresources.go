package client

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// CreateSubresource posts body to subresource sub of the object kind
// ns/name (Objects.Create with CreateRequest.subresource) and decodes the
// answer into out.
func (c *Client) CreateSubresource(ctx context.Context, kind, ns, name, sub string, body, out proto.Message, dryRun bool) error {
	a, err := anypb.New(body)
	if err != nil {
		return err
	}
	res, err := c.objects.Create(ctx, &v1.CreateRequest{Object: a, Kind: kind, Namespace: ns, Name: name, Subresource: sub, DryRun: dryRun})
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	return res.UnmarshalTo(out)
}

// CreateToken asks for a token of service account ns/name (the
// serviceaccounts/token subresource); the answer's status.token is it.
func (c *Client) CreateToken(ctx context.Context, ns, name string, tr *v1.TokenRequest) (*v1.TokenRequest, error) {
	if tr == nil {
		tr = &v1.TokenRequest{}
	}
	out := &v1.TokenRequest{}
	if err := c.CreateSubresource(ctx, "ServiceAccount", ns, name, "token", tr, out, false); err != nil {
		return nil, err
	}
	return out, nil
}

// Resize writes pod's containers' resources through the pods/resize
// subresource (Objects.Update with subresource "resize"): only their cpu
// and memory requests and limits are taken; the answer is the pod as
// stored.
func (c *Client) Resize(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	a, err := anypb.New(pod)
	if err != nil {
		return nil, err
	}
	res, err := c.objects.Update(ctx, &v1.UpdateRequest{Object: a, Subresource: "resize"})
	if err != nil {
		return nil, apierrors.FromGRPC(err)
	}
	out := &v1.Pod{}
	return out, res.UnmarshalTo(out)
}

// GetEphemeralContainers reads pod ns/name through its
// ephemeralcontainers subresource (authorized as get on
// pods/ephemeralcontainers).
func (c *Client) GetEphemeralContainers(ctx context.Context, ns, name string) (*v1.Pod, error) {
	res, err := c.objects.Get(ctx, &v1.GetRequest{Kind: "Pod", Namespace: ns, Name: name, Subresource: "ephemeralcontainers"})
	if err != nil {
		return nil, apierrors.FromGRPC(err)
	}
	out := &v1.Pod{}
	return out, res.UnmarshalTo(out)
}

// UpdateEphemeralContainers writes pod's spec.ephemeralContainers (and
// nothing else of it) through the ephemeralcontainers subresource:
// existing ephemeral containers must be kept as they are, so the list only
// grows. pod's resource version, if set, is a precondition.
func (c *Client) UpdateEphemeralContainers(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	a, err := anypb.New(pod)
	if err != nil {
		return nil, err
	}
	res, err := c.objects.Update(ctx, &v1.UpdateRequest{Object: a, Subresource: "ephemeralcontainers"})
	if err != nil {
		return nil, apierrors.FromGRPC(err)
	}
	out := &v1.Pod{}
	return out, res.UnmarshalTo(out)
}
