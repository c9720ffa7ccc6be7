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
)

// containerdConfig renders containerd's config (version 4, containerd
// 2.1+) for a node container: the root on a volume, its own state folder
// and socket, and the CRI plugins off (the kubelet drives containerd
// through its Go client, not CRI, and CRI would only look for a CNI config
// of its own).
func containerdConfig(root, state string) string {
	return fmt.Sprintf(`# Written by tugboat-init at every start; edits are lost.
version = 4
root = %q
state = %q
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.cri.v1.images",
  "io.containerd.cri.v1.runtime",
  "io.containerd.podsandbox.controller.v1.podsandbox",
]

[plugins."io.containerd.server.v1.grpc"]
  address = %q
`, root, state, filepath.Join(state, "containerd.sock"))
}

func writeContainerdConfig(c nodeConfig) error {
	for _, d := range []string{c.ContainerdRoot, c.ContainerdState} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
	}
	return writeFileAtomic(c.ContainerdConfig, []byte(containerdConfig(c.ContainerdRoot, c.ContainerdState)), 0o644)
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
