package troubleshoot

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// untar unpacks the tar stream r, whose entries are named prefix or
// prefix/..., into dest: prefix itself becomes dest (a file into an
// existing directory dest goes into it under its base name), what is
// under it goes under dest. Entries that would land outside dest and
// symlinks are skipped with a warning on warn, as kubectl skips them.
func untar(r io.Reader, dest, prefix string, warn io.Writer) error {
	tr := tar.NewReader(r)
	seen := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if !seen {
				return fmt.Errorf("%s: the container's tar sent nothing", prefix)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the container's tar: %w", err)
		}
		seen = true
		name := path.Clean(h.Name)
		rel := name
		switch {
		case prefix == "." || prefix == "":
		case name == prefix:
			rel = ""
		case strings.HasPrefix(name, prefix+"/"):
			rel = name[len(prefix)+1:]
		}
		if rel != "" && !filepath.IsLocal(filepath.FromSlash(rel)) {
			fmt.Fprintf(warn, "warning: file %q is outside target destination, skipping\n", h.Name)
			continue
		}
		target := filepath.Join(dest, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if rel == "" {
				if st, err := os.Stat(target); err == nil && st.IsDir() {
					target = filepath.Join(target, path.Base(name))
				}
			}
			if err := writeFile(target, tr, h.FileInfo().Mode().Perm()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			fmt.Fprintf(warn, "warning: skipping symlink: %q -> %q\n", target, h.Linkname)
		default:
			fmt.Fprintf(warn, "warning: skipping %q: not a regular file or a directory\n", h.Name)
		}
	}
}

func writeFile(target string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// statLocal is the local source's file info, with kubectl's words for a
// missing one.
func statLocal(src string) (fs.FileInfo, error) {
	st, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s doesn't exist in local filesystem", src)
	}
	return st, err
}

// baseName is a local path's last element.
func baseName(p string) string { return filepath.Base(filepath.Clean(p)) }

// tarLocal writes src (a file, a symlink or a directory tree) as a tar
// stream whose entries are named base and base/....
func tarLocal(w io.Writer, src string, info fs.FileInfo, base string) error {
	tw := tar.NewWriter(w)
	add := func(p, name string, fi fs.FileInfo) error {
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			var err error
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = name
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	}
	if !info.IsDir() {
		if err := add(src, base, info); err != nil {
			return err
		}
		return tw.Close()
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		return add(p, path.Join(base, filepath.ToSlash(rel)), fi)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
