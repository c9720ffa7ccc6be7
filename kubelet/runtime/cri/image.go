package cri

import (
	"context"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// normalizeRef turns "busybox" into "docker.io/library/busybox:latest".
func normalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %v: %w", ref, err, runtime.ErrInvalid)
	}
	return named.String(), nil
}

// EnsureImage implements runtime.ImageService: PullImage through the CRI
// ImageService with the registry credentials auth (nil for none), then
// the image's status. ErrImagePull wraps registry failures. Mirrors and
// plain-HTTP registries are the runtime's configuration (containerd's
// registry hosts folder), not the kubelet's.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, auth *runtime.RegistryAuth) (runtime.ImageStatus, error) {
	name, err := normalizeRef(ref)
	if err != nil {
		return runtime.ImageStatus{}, err
	}
	req := &cri.PullImageRequest{Image: &cri.ImageSpec{Image: name, UserSpecifiedImage: ref}}
	if auth != nil {
		req.Auth = &cri.AuthConfig{Username: auth.Username, Password: auth.Password}
	}
	if _, err := r.is.PullImage(ctx, req); err != nil {
		if ctx.Err() != nil {
			return runtime.ImageStatus{}, fmt.Errorf("pull %s: %w", name, ctx.Err())
		}
		return runtime.ImageStatus{}, fmt.Errorf("pull %s: %w: %s", name, runtime.ErrImagePull, describe(err))
	}
	return r.ImageStatus(ctx, name)
}

// ImageStatus implements runtime.ImageService.
func (r *Runtime) ImageStatus(ctx context.Context, ref string) (runtime.ImageStatus, error) {
	name, err := normalizeRef(ref)
	if err != nil {
		return runtime.ImageStatus{}, err
	}
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.is.ImageStatus(ctx, &cri.ImageStatusRequest{Image: &cri.ImageSpec{Image: name}})
	if err != nil {
		return runtime.ImageStatus{}, wrap(err, "image %s", name)
	}
	if resp.Image == nil {
		return runtime.ImageStatus{}, fmt.Errorf("image %s: %w", name, runtime.ErrImageNotPresent)
	}
	return imageStatus(resp.Image, name), nil
}

// imageStatus converts a CRI image, named by name if it has that tag
// (else by its first).
func imageStatus(img *cri.Image, name string) runtime.ImageStatus {
	st := runtime.ImageStatus{ID: img.Id, Size: int64(img.Size), Ref: name, User: imageUser(img)}
	if len(img.RepoTags) > 0 && !contains(img.RepoTags, name) {
		st.Ref = img.RepoTags[0]
	}
	for _, d := range img.RepoDigests {
		if _, dg, ok := strings.Cut(d, "@"); ok {
			st.Digest = dg
			break
		}
	}
	return st
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ListImages implements runtime.ImageService: one entry per tag (an
// untagged image by its ID).
func (r *Runtime) ListImages(ctx context.Context) ([]runtime.ImageStatus, error) {
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.is.ListImages(ctx, &cri.ListImagesRequest{})
	if err != nil {
		return nil, wrap(err, "list images")
	}
	var out []runtime.ImageStatus
	for _, img := range resp.Images {
		if len(img.RepoTags) == 0 {
			out = append(out, imageStatus(img, img.Id))
			continue
		}
		for _, tag := range img.RepoTags {
			out = append(out, imageStatus(img, tag))
		}
	}
	return out, nil
}

// RemoveImage implements runtime.ImageService. The CRI removes an image
// with all its tags, so a ref that is one tag of several loses only that
// tag (through containerd's image store, like ImportImage). Idempotent.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	name, err := normalizeRef(ref)
	if err != nil {
		return err
	}
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.is.ImageStatus(ctx, &cri.ImageStatusRequest{Image: &cri.ImageSpec{Image: name}})
	if err != nil {
		return wrap(err, "remove image %s", name)
	}
	if resp.Image == nil {
		return nil
	}
	if len(resp.Image.RepoTags) > 1 {
		return r.importer.untag(ctx, name)
	}
	if _, err := r.is.RemoveImage(ctx, &cri.RemoveImageRequest{Image: &cri.ImageSpec{Image: name}}); err != nil && !isNotFound(err) {
		return wrap(err, "remove image %s", name)
	}
	return nil
}
