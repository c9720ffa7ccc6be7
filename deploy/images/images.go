// Package images builds the OCI image archives Tugboat's tests and examples
// run, with no registry and no docker: a busybox image from the host's
// static busybox (Debian's busybox-static), the echo server of
// deploy/examples/echo and the pod sandbox's pause of deploy/pause, both
// compiled static. The archives are OCI image layouts
// that also carry a docker-archive manifest.json, so `docker load`,
// containerd's import and `tugctl image import` all take them.
//
// The builds are reproducible: fixed timestamps and owners, so the same
// inputs give the same digests.
package images

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"github.com/tugboat/tugboat/internal/containerdconfig"
)

// The names of the images this package builds, in one place.
const (
	BusyboxRef = "tugboat.local/busybox:latest"
	EchoRef    = "tugboat.local/echo:latest"
	// PauseRef is the sandbox (pause) image the runtime's CRI config names
	// as sandbox_image: imported on every node, never pulled.
	PauseRef = containerdconfig.DefaultSandboxImage
)

// Names lists the images Build knows, by short name.
var Names = map[string]string{
	"busybox": BusyboxRef,
	"echo":    EchoRef,
	"pause":   PauseRef,
}

// Image is a single-layer image to write as an archive.
type Image struct {
	// Ref is the full reference the archive names the image by.
	Ref string
	// Files are the layer's content. Parent directories are added as needed.
	Files []File
	// Config is the runtime config (entrypoint, cmd, env, ...).
	Config Config
}

// Config is the part of an OCI image config Tugboat images set.
type Config struct {
	Entrypoint   []string
	Cmd          []string
	Env          []string
	WorkingDir   string
	ExposedPorts []string // "80/tcp"
	StopSignal   string
	Labels       map[string]string
}

// File is one entry of the layer.
type File struct {
	// Path inside the image, without a leading slash ("bin/busybox").
	Path string
	Mode fs.FileMode // permission bits, plus fs.ModeDir or fs.ModeSymlink
	// Data is a regular file's content, unless Source is set: then the
	// file is copied from that host path.
	Data   []byte
	Source string
	// Link is a symlink's target.
	Link string
}

// BuildOptions say where Build finds its inputs.
type BuildOptions struct {
	// BusyboxPath is the static busybox binary (default /bin/busybox).
	BusyboxPath string
	// EchoBinary and PauseBinary are prebuilt static binaries of the echo
	// server and of pause; empty builds them from source with the go tool
	// (BuildGo) in ModuleDir.
	EchoBinary  string
	PauseBinary string
	// ModuleDir is a directory inside the Tugboat module (default: the
	// current directory).
	ModuleDir string
	// WorkDir holds intermediate files such as the compiled echo server
	// (default: a temp dir, removed afterwards).
	WorkDir string
}

// Build writes the archive of the image called name ("busybox" or "echo",
// see Names) to w.
func Build(ctx context.Context, name string, w io.Writer, opts BuildOptions) error {
	var img *Image
	var err error
	switch name {
	case "busybox":
		img, err = Busybox(ctx, opts.BusyboxPath)
	case "echo":
		img, err = goImage(ctx, EchoPackage, opts.EchoBinary, opts, Echo)
	case "pause":
		img, err = goImage(ctx, PausePackage, opts.PauseBinary, opts, Pause)
	default:
		known := make([]string, 0, len(Names))
		for n := range Names {
			known = append(known, n)
		}
		sort.Strings(known)
		return fmt.Errorf("images: unknown image %q (known: %v)", name, known)
	}
	if err != nil {
		return err
	}
	return img.WriteArchive(w)
}
