package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/tugboat/tugboat/api/manifest"
)

// Kustomize builds the kustomization in dir (a kustomization.yaml, .yml
// or Kustomization file, its resources, bases, overlays, patches and
// generators) with sigs.k8s.io/kustomize/api, as kubectl kustomize does:
// files only from inside dir and its resources, no plugins. It returns
// the objects as a multi-document YAML stream.
func Kustomize(dir string) ([]byte, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("-k %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("-k %s: not a directory (a kustomization is a directory with a kustomization.yaml)", dir)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %v", dir, err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %v", dir, err)
	}
	return out, nil
}

// RegisterKustomize adds -k DIR to cmd, beside -f.
func (f *FileFlags) RegisterKustomize(cmd *cobra.Command, what string) {
	cmd.Flags().StringVarP(&f.Kustomize, "kustomize", "k", "", "a kustomization directory, built as tugctl kustomize DIR builds it, "+what)
}

// ReadInput reads the objects of -f or -k (one of them). A kustomization's
// objects are decoded as manifests are: the same errors, naming the
// kustomization and the document. Any decoding error gives no objects
// (ReadManifests).
func (o *Options) ReadInput(f FileFlags) ([]manifest.Object, error) {
	objs, err := o.ReadInputEach(f)
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// ReadInputEach reads as ReadInput does, but returns the objects of the
// documents that decode beside the errors of those that do not
// (ReadManifestsEach): apply and create act on each valid document.
func (o *Options) ReadInputEach(f FileFlags) ([]manifest.Object, error) {
	if f.Kustomize == "" {
		return o.ReadManifestsEach(f.Files, f.Recursive)
	}
	if len(f.Files) > 0 {
		return nil, fmt.Errorf("-f and -k do not go together: give one of them")
	}
	y, err := Kustomize(f.Kustomize)
	if err != nil {
		return nil, err
	}
	objs, err := manifest.DecodeEach("kustomization "+f.Kustomize, y)
	if len(objs) == 0 && err == nil {
		return nil, fmt.Errorf("-k %s: the kustomization builds no objects", f.Kustomize)
	}
	return objs, err
}
