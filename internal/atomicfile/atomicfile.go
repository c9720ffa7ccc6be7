// Package atomicfile replaces a file in one step: a reader of the path sees
// the whole old content or the whole new one, never a part. Tugboat's
// components write this way whatever another process reads while it
// changes: a pod's /etc/hosts and resolv.conf, configMap and secret volume
// files, rotated container logs, image archives dropped into an import
// folder, a joined node's certificate and key, the CLI's config file. It
// lives in internal/ because all of those — components, the API client
// library and the CLI — need it and it is no part of the API; it imports
// nothing of Tugboat's.
//
// Write makes a hidden temporary file beside the target (same directory,
// so the rename stays on one file system; its name ends in ".tmp" and a
// random suffix, so folder watchers that match on the extension — *.tar,
// *.conflist — never pick it up), copies the content in, sets the mode and
// renames it over the target. It touches nothing else: the directory must
// exist, and a failed write removes its temporary file and leaves the
// target as it was. It does not fsync: the rename is atomic for readers,
// not durable across a power loss (every caller rewrites its files when it
// next runs).
package atomicfile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with what r yields, with permissions mode (not
// subject to the umask). On error, path is unchanged.
func Write(path string, r io.Reader, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: not found, ignored
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Copy replaces dst with a copy of the file src, as Write does.
func Copy(dst, src string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return Write(dst, in, mode)
}
