package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// FileFlags are -f and -R: the manifests a command reads; and -k for the
// commands that also read a kustomization (RegisterKustomize).
type FileFlags struct {
	Files     []string
	Recursive bool
	Kustomize string
}

// Register adds -f and -R to cmd; what says what the files are for.
func (f *FileFlags) Register(cmd *cobra.Command, what string) {
	cmd.Flags().StringArrayVarP(&f.Files, "filename", "f", nil, "file, directory or - (standard input) "+what+"; repeatable")
	cmd.Flags().BoolVarP(&f.Recursive, "recursive", "R", false, "read directories given with -f recursively")
}

// ReadManifests decodes every -f source: a file, a directory (its .yaml,
// .yml and .json files in name order, recursively with -R) or "-" for
// standard input. All decoding errors are returned together, and then no
// objects: a command that reads objects to name them (delete, diff, label
// -f) acts on none from input with a mistake in it.
func (o *Options) ReadManifests(paths []string, recursive bool) ([]manifest.Object, error) {
	out, err := o.ReadManifestsEach(paths, recursive)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadManifestsEach reads as ReadManifests does, but a document that does
// not decode costs only itself: the objects of the others are returned
// beside the joined errors of the refused ones (each naming file,
// document, kind/name and field), as kubectl apply and create go on past
// them. A path that cannot be read, or input with no objects at all, is an
// error with no objects.
func (o *Options) ReadManifestsEach(paths []string, recursive bool) ([]manifest.Object, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("-f: required (a file, a directory or - for standard input)")
	}
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("-f %s: %w", p, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		found, err := manifestFiles(p, recursive)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("-f %s: no .yaml, .yml or .json files in the directory", p)
		}
		files = append(files, found...)
	}
	var out []manifest.Object
	var errs []error
	for _, f := range files {
		var objs []manifest.Object
		var err error
		var data []byte
		name := f
		if f == "-" {
			name = "<stdin>"
			data, err = io.ReadAll(o.In)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		objs, err = manifest.DecodeEach(name, data)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, objs...)
	}
	if len(out) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("-f %s: no objects found", strings.Join(paths, ", "))
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, errors.Join(errs...)
}

func manifestFiles(dir string, recursive bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// PlaceObject sets the namespace of a manifest object: its own, else -n
// (or the config file's), and refuses a manifest namespace that
// contradicts an explicit -n, naming the document.
func (o *Options) PlaceObject(mo manifest.Object) error {
	if !mo.Kind.Namespaced {
		return nil
	}
	m := v1.Meta(mo.Object)
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	if m.Namespace == "" {
		m.Namespace = ns
		return nil
	}
	if o.Flags.Namespace != "" && m.Namespace != o.Flags.Namespace {
		return fmt.Errorf("%s (%s %s): metadata.namespace %q does not match the namespace %q given by --namespace",
			mo.Source, mo.Kind.Name, m.Name, m.Namespace, o.Flags.Namespace)
	}
	return nil
}
