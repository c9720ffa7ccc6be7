package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tugboat/tugboat/internal/atomicfile"
	"github.com/tugboat/tugboat/internal/containerdconfig"
)

// containerdConfig renders containerd's config for a node container
// (package containerdconfig, the one renderer every Tugboat node's
// containerd is configured by): the root on a volume, its own state folder
// and socket, the CRI plugin on for the kubelet's CRI backend with
// Tugboat's pause image as the sandbox image (bundled in the node image,
// imported from the kubelet's import folder, never pulled), the CNI
// folders the kubelet writes its conflist into and the runtime runs the
// plugins of, and a hosts.toml for each plain-HTTP registry.
func containerdConfig(c nodeConfig) (string, error) {
	o := containerdconfig.Options{
		Root: c.ContainerdRoot, State: c.ContainerdState, SandboxImage: c.SandboxImage,
		CNIBinDir: c.CNIBinDir, CNIConfDir: c.CNIConfDir, LogLevel: c.ContainerdLogLevel,
	}
	if len(c.RegistryInsecure) > 0 {
		o.RegistryConfigDir = c.RegistryConfigDir
	}
	return containerdconfig.Render(o)
}

func writeContainerdConfig(c nodeConfig) error {
	for _, d := range []string{c.ContainerdRoot, c.ContainerdState, c.CNIConfDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
	}
	if len(c.RegistryInsecure) > 0 {
		if err := containerdconfig.WritePlainHTTPHosts(c.RegistryConfigDir, c.RegistryInsecure); err != nil {
			return err
		}
	}
	text, err := containerdConfig(c)
	if err != nil {
		return err
	}
	return writeFileAtomic(c.ContainerdConfig, []byte(text), 0o644)
}

// copyBundledImages copies the image archives (*.tar) shipped in the image
// into the kubelet's import folder, skipping those already there with the
// same size and modification time (what the kubelet's import folder
// remembers an import by), and giving each copy its source's time. Each copy appears atomically (renamed from a hidden temporary
// file), so the kubelet never reads half an archive. A missing source
// folder is no error: the image has no bundled images.
func copyBundledImages(src, dst string) (int, error) {
	entries, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".tar") {
			continue
		}
		in, out := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		si, err := os.Stat(in)
		if err != nil {
			return n, err
		}
		if di, err := os.Stat(out); err == nil && di.Size() == si.Size() && di.ModTime().Equal(si.ModTime()) {
			continue
		}
		if err := copyFile(in, out, si.ModTime()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// copyFile copies src to dst atomically, then gives it src's time (the
// kubelet's import folder reads a file only once its size and time have
// held still between two looks, so the order does no harm).
func copyFile(src, dst string, mtime time.Time) error {
	if err := atomicfile.Copy(dst, src, 0o644); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return os.Chtimes(dst, mtime, mtime)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, bytes.NewReader(data), mode)
}
