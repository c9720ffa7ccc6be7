package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd"
)

// ImportImage implements runtime.ImageService. The CRI has no import, so
// the archive goes to containerd's own API on the same socket, into the
// namespace the CRI plugin keeps its images in (k8s.io), unpacked for its
// snapshotter: the CRI sees it at once (crictl images). With a runtime
// other than containerd it fails, saying so.
func (r *Runtime) ImportImage(ctx context.Context, rd io.Reader) ([]runtime.ImageStatus, error) {
	c, err := r.importer.runtime(ctx)
	if err != nil {
		return nil, err
	}
	return c.ImportImage(ctx, rd)
}

// importer is a containerd client on the CRI endpoint's socket, made on
// first use.
type importer struct {
	address, namespace, snapshotter string

	mu sync.Mutex
	c  *containerd.Runtime
}

// errNotContainerd: image import needs containerd's API.
var errNotContainerd = errors.New("image import needs containerd's API on the CRI endpoint (the CRI has no import); this runtime does not serve it: load images with the runtime's own tools or pull them from a registry")

func (i *importer) runtime(ctx context.Context) (*containerd.Runtime, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c != nil {
		return i.c, nil
	}
	c, err := containerd.New(containerd.Config{Address: i.address, Namespace: i.namespace, Snapshotter: i.snapshotter}, nil)
	if err != nil {
		return nil, fmt.Errorf("import image: %w", err)
	}
	if _, err := c.Version(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("import image: %w: %w", errNotContainerd, err)
	}
	i.c = c
	return c, nil
}

// untag removes one name of an image that has others.
func (i *importer) untag(ctx context.Context, name string) error {
	c, err := i.runtime(ctx)
	if err != nil {
		return err
	}
	return c.RemoveImage(ctx, name)
}

func (i *importer) close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil {
		return nil
	}
	return i.c.Close()
}
