package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

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

func (r *Runtime) snapshotterName() string {
	if r.cfg.Snapshotter != "" {
		return r.cfg.Snapshotter
	}
	return defaults.DefaultSnapshotter
}

func (r *Runtime) snapshotter() snapshots.Snapshotter {
	return r.client.SnapshotService(r.snapshotterName())
}

// readyImage returns the image ref, unpacked; ErrImageNotPresent if it is
// not on the node.
func (r *Runtime) readyImage(ctx context.Context, ref string) (client.Image, error) {
	name, err := normalizeRef(ref)
	if err != nil {
		return nil, err
	}
	img, err := r.client.GetImage(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("image %s: %w", name, runtime.ErrImageNotPresent)
	}
	if err != nil {
		return nil, wrap(err, "image %s", name)
	}
	unpacked, err := img.IsUnpacked(ctx, r.snapshotterName())
	if err != nil {
		return nil, wrap(err, "image %s", name)
	}
	if !unpacked {
		if err := img.Unpack(ctx, r.snapshotterName()); err != nil {
			return nil, wrap(err, "image %s: unpack", name)
		}
	}
	return img, nil
}

// EnsureImage implements runtime.ImageService. auth, if set, answers the
// registry's basic or token authentication challenge (containerd's docker
// authorizer), for whichever host serves the image, as containerd's CRI
// plugin presents a pull's credentials with no server address.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, auth *runtime.RegistryAuth) (runtime.ImageStatus, error) {
	ctx = r.ns(ctx)
	name, err := normalizeRef(ref)
	if err != nil {
		return runtime.ImageStatus{}, err
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: r.registryHosts(ctx, auth)})
	img, err := r.client.Pull(ctx, name,
		client.WithPullUnpack,
		client.WithPullSnapshotter(r.snapshotterName()),
		client.WithResolver(resolver),
	)
	if err != nil {
		if ctx.Err() != nil {
			return runtime.ImageStatus{}, fmt.Errorf("pull %s: %w", name, ctx.Err())
		}
		return runtime.ImageStatus{}, fmt.Errorf("pull %s: %w: %w", name, runtime.ErrImagePull, err)
	}
	return r.imageStatus(ctx, img)
}

// registryHosts resolves registry hosts, with auth's credentials if set: plain HTTP for the configured lab
// registries, containerd's defaults (HTTPS; HTTP fallback for localhost)
// for the rest, with hosts.toml from RegistryConfigDir if set.
func (r *Runtime) registryHosts(ctx context.Context, auth *runtime.RegistryAuth) docker.RegistryHosts {
	var hostDir func(string) (string, error)
	if r.cfg.RegistryConfigDir != "" {
		hostDir = config.HostDirFromRoot(r.cfg.RegistryConfigDir)
	}
	var creds func(string) (string, string, error)
	if auth != nil {
		creds = func(string) (string, string, error) { return auth.Username, auth.Password, nil }
	}
	plain := config.ConfigureHosts(ctx, config.HostOptions{DefaultScheme: "http", HostDir: hostDir, Credentials: creds})
	secure := config.ConfigureHosts(ctx, config.HostOptions{HostDir: hostDir, Credentials: creds})
	return func(host string) ([]docker.RegistryHost, error) {
		if slices.Contains(r.cfg.PlainHTTPRegistries, host) {
			return plain(host)
		}
		return secure(host)
	}
}

// ImportImage implements runtime.ImageService.
func (r *Runtime) ImportImage(ctx context.Context, rd io.Reader) ([]runtime.ImageStatus, error) {
	ctx = r.ns(ctx)
	imgs, err := r.client.Import(ctx, rd, client.WithImageRefTranslator(fullRefOnly))
	if err != nil {
		return nil, fmt.Errorf("import image: %w", err)
	}
	if len(imgs) == 0 {
		return nil, fmt.Errorf("import image: the archive names no image (save it with `docker save NAME:TAG`, or annotate the OCI index with io.containerd.image.name): %w", runtime.ErrInvalid)
	}
	out := make([]runtime.ImageStatus, 0, len(imgs))
	for _, i := range imgs {
		img := client.NewImage(r.client, i)
		if err := img.Unpack(ctx, r.snapshotterName()); err != nil {
			return nil, wrap(err, "import image %s: unpack", i.Name)
		}
		st, err := r.imageStatus(ctx, img)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// fullRefOnly names an imported OCI image by its ref.name annotation only if
// that is a full reference ("tugboat.local/echo:latest"), not a bare tag.
func fullRefOnly(refName string) string {
	if !strings.ContainsAny(refName, "/:") {
		return ""
	}
	name, err := normalizeRef(refName)
	if err != nil {
		return ""
	}
	return name
}

// ImageStatus implements runtime.ImageService.
func (r *Runtime) ImageStatus(ctx context.Context, ref string) (runtime.ImageStatus, error) {
	ctx = r.ns(ctx)
	name, err := normalizeRef(ref)
	if err != nil {
		return runtime.ImageStatus{}, err
	}
	img, err := r.client.GetImage(ctx, name)
	if errdefs.IsNotFound(err) {
		return runtime.ImageStatus{}, fmt.Errorf("image %s: %w", name, runtime.ErrImageNotPresent)
	}
	if err != nil {
		return runtime.ImageStatus{}, wrap(err, "image %s", name)
	}
	return r.imageStatus(ctx, img)
}

// ListImages implements runtime.ImageService. Images whose content for this
// platform is missing are left out.
func (r *Runtime) ListImages(ctx context.Context) ([]runtime.ImageStatus, error) {
	ctx = r.ns(ctx)
	imgs, err := r.client.ListImages(ctx)
	if err != nil {
		return nil, wrap(err, "list images")
	}
	out := make([]runtime.ImageStatus, 0, len(imgs))
	for _, img := range imgs {
		st, err := r.imageStatus(ctx, img)
		if err != nil {
			r.logger.Debug("skipping image", "image", img.Name(), "err", err)
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// RemoveImage implements runtime.ImageService.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	ctx = r.ns(ctx)
	name, err := normalizeRef(ref)
	if err != nil {
		return err
	}
	if err := r.client.ImageService().Delete(ctx, name, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
		return wrap(err, "remove image %s", name)
	}
	return nil
}

func (r *Runtime) imageStatus(ctx context.Context, img client.Image) (runtime.ImageStatus, error) {
	cfg, err := img.Config(ctx)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return runtime.ImageStatus{}, fmt.Errorf("image %s: content missing: %w", img.Name(), runtime.ErrImageNotPresent)
		}
		return runtime.ImageStatus{}, wrap(err, "image %s", img.Name())
	}
	size, err := img.Size(ctx)
	if err != nil {
		return runtime.ImageStatus{}, wrap(err, "image %s", img.Name())
	}
	spec, err := img.Spec(ctx)
	if err != nil {
		return runtime.ImageStatus{}, wrap(err, "image %s config", img.Name())
	}
	return runtime.ImageStatus{
		Ref:    img.Name(),
		ID:     cfg.Digest.String(),
		Digest: img.Target().Digest.String(),
		Size:   size,
		User:   spec.Config.User,
	}, nil
}
