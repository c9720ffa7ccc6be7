package server

import (
	"context"
	"errors"
	"io"
	"sort"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// progressEvery bounds how often ImportImage reports progress.
const progressEvery = 250 * time.Millisecond

// ImportImage implements NodeAPI.ImportImage: the uploaded tarball (OCI
// layout or docker-archive) streams straight into the runtime's import,
// with progress messages as it arrives; the last message names the images.
// Pods waiting for an image are woken afterwards.
func (s *Server) ImportImage(stream v1.NodeAPI_ImportImageServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if n := first.NodeName; n != "" && n != s.cfg.NodeName {
		return errorf(apierrors.ErrInvalid, "nodeName %q: this is node %s", n, s.cfg.NodeName)
	}
	pr, pw := io.Pipe()
	type result struct {
		imgs []runtime.ImageStatus
		err  error
	}
	done := make(chan result, 1)
	go func() {
		imgs, err := s.cfg.Runtime.ImportImage(ctx, pr)
		pr.CloseWithError(err) // unblock the writer if the import stopped early
		done <- result{imgs, err}
	}()

	var received int64
	last := time.Now()
	write := func(b []byte) error {
		if len(b) == 0 {
			return nil
		}
		if _, err := pw.Write(b); err != nil {
			return err
		}
		received += int64(len(b))
		if time.Since(last) >= progressEvery {
			last = time.Now()
			return stream.Send(&v1.ImportProgress{BytesReceived: received})
		}
		return nil
	}
	upErr := write(first.Data)
	for upErr == nil {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			upErr = err
			break
		}
		upErr = write(in.Data)
	}
	if upErr != nil {
		pw.CloseWithError(upErr)
	} else {
		pw.Close()
	}
	res := <-done
	if res.err != nil {
		if upErr != nil && ctx.Err() != nil {
			return grpcErr(ctx.Err())
		}
		return errorf(apierrors.ErrInvalid, "importing the image on node %s: %v", s.cfg.NodeName, res.err)
	}
	names := make([]string, 0, len(res.imgs))
	for _, i := range res.imgs {
		names = append(names, i.Ref)
	}
	s.log.Info("images imported", "images", names, "bytes", received)
	if s.cfg.OnImport != nil {
		s.cfg.OnImport()
	}
	return stream.Send(&v1.ImportProgress{BytesReceived: received, Images: names, Done: true})
}

// ListImages implements NodeAPI.ListImages.
func (s *Server) ListImages(ctx context.Context, req *v1.ListImagesRequest) (*v1.ListImagesResponse, error) {
	imgs, err := s.cfg.Runtime.ListImages(ctx)
	if err != nil {
		return nil, errorf(apierrors.ErrUnavailable, "listing images on node %s: %v", s.cfg.NodeName, err)
	}
	byID := map[string]*v1.ImageInfo{}
	var out []*v1.ImageInfo
	for _, i := range imgs {
		info := byID[i.ID]
		if info == nil {
			info = &v1.ImageInfo{Id: i.ID, SizeBytes: i.Size}
			byID[i.ID] = info
			out = append(out, info)
		}
		info.Names = append(info.Names, i.Ref)
	}
	for _, i := range out {
		sort.Strings(i.Names)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Names[0] < out[b].Names[0] })
	return &v1.ListImagesResponse{NodeName: s.cfg.NodeName, Images: out}, nil
}
