package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "crypto/sha256" // for go-digest
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// epoch is the timestamp of every file and of the image itself, for
// reproducible digests.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// containerdImageName is the index annotation containerd names an imported
// image by.
const containerdImageName = "io.containerd.image.name"

// WriteArchive writes img as an OCI image-layout tar (with a docker-archive
// manifest.json too) to w.
func (img *Image) WriteArchive(w io.Writer) error {
	layer, diffID, err := img.layer()
	if err != nil {
		return err
	}
	layerDesc := blobDesc(ocispec.MediaTypeImageLayerGzip, layer)

	ports := map[string]struct{}{}
	for _, p := range img.Config.ExposedPorts {
		ports[p] = struct{}{}
	}
	created := epoch
	cfg := ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config: ocispec.ImageConfig{
			Entrypoint:   img.Config.Entrypoint,
			Cmd:          img.Config.Cmd,
			Env:          img.Config.Env,
			WorkingDir:   img.Config.WorkingDir,
			ExposedPorts: ports,
			StopSignal:   img.Config.StopSignal,
			Labels:       img.Config.Labels,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{
			Created:   &created,
			CreatedBy: "tugboat deploy/images",
		}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgDesc := blobDesc(ocispec.MediaTypeImageConfig, cfgJSON)

	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return err
	}
	manifestDesc := blobDesc(ocispec.MediaTypeImageManifest, manifest)
	manifestDesc.Platform = &cfg.Platform
	manifestDesc.Annotations = map[string]string{
		containerdImageName:       img.Ref,
		ocispec.AnnotationRefName: tagOf(img.Ref),
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return err
	}
	dockerManifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{
		Config:   blobPath(cfgDesc.Digest),
		RepoTags: []string{img.Ref},
		Layers:   []string{blobPath(layerDesc.Digest)},
	}})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"blobs/", nil},
		{"blobs/sha256/", nil},
		{blobPath(layerDesc.Digest), layer},
		{blobPath(cfgDesc.Digest), cfgJSON},
		{blobPath(manifestDesc.Digest), manifest},
		{ocispec.ImageIndexFile, index},
		{"manifest.json", dockerManifest},
	} {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func blobDesc(mediaType string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

func blobPath(d digest.Digest) string { return "blobs/" + d.Algorithm().String() + "/" + d.Encoded() }

// tagOf returns the tag of a reference ("latest" for "a/b:latest").
func tagOf(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return "latest"
}

// layer returns the gzipped layer tar and the digest of the uncompressed
// tar (the diff ID).
func (img *Image) layer() ([]byte, digest.Digest, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	files := withParents(img.Files)
	for _, f := range files {
		if err := writeEntry(tw, f); err != nil {
			return nil, "", fmt.Errorf("image %s: %s: %w", img.Ref, f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	diffID := digest.FromBytes(raw.Bytes())
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return nil, "", err
	}
	zw.ModTime = epoch
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), diffID, nil
}

// withParents adds the missing parent directories and sorts entries so
// that parents come first.
func withParents(files []File) []File {
	seen := map[string]bool{}
	var out []File
	for _, f := range files {
		f.Path = strings.Trim(path.Clean("/"+f.Path), "/")
		seen[f.Path] = true
		out = append(out, f)
	}
	for _, f := range out {
		for dir := path.Dir(f.Path); dir != "." && dir != "/" && !seen[dir]; dir = path.Dir(dir) {
			seen[dir] = true
			out = append(out, File{Path: dir, Mode: fs.ModeDir | 0o755})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func writeEntry(tw *tar.Writer, f File) error {
	hdr := &tar.Header{Name: f.Path, Mode: int64(f.Mode.Perm()), ModTime: epoch, Format: tar.FormatPAX}
	if f.Mode&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	switch {
	case f.Mode&fs.ModeDir != 0:
		hdr.Typeflag, hdr.Name = tar.TypeDir, f.Path+"/"
		return tw.WriteHeader(hdr)
	case f.Mode&fs.ModeSymlink != 0:
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag = tar.TypeReg
	data := f.Data
	if f.Source != "" {
		var err error
		if data, err = os.ReadFile(f.Source); err != nil {
			return err
		}
	}
	hdr.Size = int64(len(data))
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
