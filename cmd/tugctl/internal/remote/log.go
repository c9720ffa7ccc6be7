package remote

import (
	"context"
	"errors"
	"io"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// CopyLog writes the container log req asks for to w, as the pod's
// kubelet sends it. Cancelling ctx (a follower's ^C) ends it without an
// error.
func CopyLog(ctx context.Context, c *client.Client, req *v1.LogsRequest, w io.Writer) error {
	stream, err := v1.NewNodeAPIClient(c.Conn()).Logs(ctx, req)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return apierrors.FromGRPC(err)
		}
		if _, err := w.Write(chunk.Data); err != nil {
			return err
		}
	}
}
