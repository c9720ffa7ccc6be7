package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"

	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// archive is an OCI image layout read from a tar (what hack/mkimage and
// `docker save` of recent dockers write), held in memory: the archives
// pushed here are the project's small example images.
type archive struct {
	files map[string][]byte
}

func readArchive(r io.Reader) (*archive, error) {
	a := &archive{files: map[string][]byte{}}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return a, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		a.files[path.Clean(h.Name)] = b
	}
}

func (a *archive) blob(d ocispec.Descriptor) ([]byte, error) {
	b, ok := a.files[path.Join("blobs", d.Digest.Algorithm().String(), d.Digest.Encoded())]
	if !ok {
		return nil, fmt.Errorf("blob %s: not in the archive", d.Digest)
	}
	if d.Digest.Algorithm().FromBytes(b) != d.Digest {
		return nil, fmt.Errorf("blob %s: content does not match its digest", d.Digest)
	}
	return b, nil
}

// pushedImage is a manifest of the archive and where it goes.
type pushedImage struct {
	Repo, Tag string
	Manifest  ocispec.Descriptor
}

// images lists the archive's named manifests. The repository is the
// image name's path without its registry host, so tugboat.local/echo:latest
// becomes echo:latest — what containerd asks a mirror for.
func (a *archive) images() ([]pushedImage, error) {
	raw, ok := a.files["index.json"]
	if !ok {
		return nil, errors.New("no index.json: not an OCI image archive")
	}
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	var out []pushedImage
	for i, m := range idx.Manifests {
		name := m.Annotations["io.containerd.image.name"]
		if name == "" {
			name = m.Annotations[ocispec.AnnotationRefName]
		}
		if name == "" {
			return nil, fmt.Errorf("index.json: manifests[%d]: no image name annotation", i)
		}
		ref, err := reference.ParseNormalizedNamed(name)
		if err != nil {
			return nil, fmt.Errorf("index.json: manifests[%d]: image name %q: %w", i, name, err)
		}
		tagged, ok := reference.TagNameOnly(ref).(reference.Tagged)
		if !ok {
			return nil, fmt.Errorf("index.json: manifests[%d]: image name %q: no tag", i, name)
		}
		out = append(out, pushedImage{Repo: reference.Path(ref), Tag: tagged.Tag(), Manifest: m})
	}
	return out, nil
}

// pusher speaks the distribution API (the part a push needs) to one
// registry.
type pusher struct {
	base   string // http://host:port
	client *http.Client
}

// pushArchive pushes every named image of the archive file; it returns
// "repo:tag" of each.
func (p *pusher) pushArchive(ctx context.Context, file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := readArchive(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	imgs, err := a.images()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var done []string
	for _, img := range imgs {
		if err := p.pushImage(ctx, a, img); err != nil {
			return done, fmt.Errorf("%s: push %s:%s: %w", file, img.Repo, img.Tag, err)
		}
		done = append(done, img.Repo+":"+img.Tag)
	}
	return done, nil
}

func (p *pusher) pushImage(ctx context.Context, a *archive, img pushedImage) error {
	raw, err := a.blob(img.Manifest)
	if err != nil {
		return err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("manifest %s: %w", img.Manifest.Digest, err)
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		b, err := a.blob(d)
		if err != nil {
			return err
		}
		if err := p.pushBlob(ctx, img.Repo, d, b); err != nil {
			return err
		}
	}
	mediaType := img.Manifest.MediaType
	if mediaType == "" {
		mediaType = ocispec.MediaTypeImageManifest
	}
	u := fmt.Sprintf("%s/v2/%s/manifests/%s", p.base, img.Repo, img.Tag)
	_, err = p.do(ctx, http.MethodPut, u, mediaType, raw, http.StatusCreated)
	return err
}

func (p *pusher) pushBlob(ctx context.Context, repo string, d ocispec.Descriptor, b []byte) error {
	u := fmt.Sprintf("%s/v2/%s/blobs/%s", p.base, repo, d.Digest)
	if _, err := p.do(ctx, http.MethodHead, u, "", nil, http.StatusOK); err == nil {
		return nil // already there
	}
	resp, err := p.do(ctx, http.MethodPost, fmt.Sprintf("%s/v2/%s/blobs/uploads/", p.base, repo), "", nil, http.StatusAccepted)
	if err != nil {
		return err
	}
	loc, err := resp.Location()
	if err != nil {
		return fmt.Errorf("upload of %s: no Location: %w", d.Digest, err)
	}
	q := loc.Query()
	q.Set("digest", d.Digest.String())
	loc.RawQuery = q.Encode()
	_, err = p.do(ctx, http.MethodPut, loc.String(), "application/octet-stream", b, http.StatusCreated)
	return err
}

// do sends one request and wants the status; the body is drained.
func (p *pusher) do(ctx context.Context, method, u, contentType string, body []byte, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	c := p.client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != want {
		pu, _ := url.Parse(u)
		return nil, fmt.Errorf("%s %s: %s: %s", method, pu.Path, resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}
