package deploy

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

func newKustomizeCommand(o *cli.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "kustomize DIR",
		Short: "Print the objects a kustomization builds",
		Long: `Build the kustomization in DIR (its kustomization.yaml: resources, bases
and overlays, namePrefix, commonLabels, patches, configMapGenerator,
secretGenerator, images, ...) with sigs.k8s.io/kustomize/api, as kubectl
kustomize does, and print the objects as YAML. Files are read only from
inside the kustomization's directories; plugins are off. apply -k, create
-k, diff -k and delete -k take the same objects.`,
		Example: "  tugctl kustomize overlays/prod\n  tugctl kustomize . | tugctl apply -f -",
		Args:    cli.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			y, err := cli.Kustomize(args[0])
			if err != nil {
				return err
			}
			_, err = o.Out.Write(y)
			return err
		},
	}
}
