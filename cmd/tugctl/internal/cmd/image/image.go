package image

import (
	"context"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

func newImageCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Import images into nodes and list the images they hold",
		Long: `Import OCI or docker-archive tarballs into the nodes' container runtime
(for clusters without a registry) and list the images nodes hold. Both go
through the apiserver to each node's kubelet. Without --node, every Ready
node.`,
	}
	var importNodes, lsNodes []string
	imp := &cobra.Command{
		Use:   "import FILE.tar [--node NODE]...",
		Short: "Load an OCI or docker-archive tarball into nodes' container runtime",
		Example: `  docker save busybox:1.36 -o busybox.tar && tugctl image import busybox.tar
  tugctl image import app.oci.tar --node node1 --node node2`,
		Args: cli.ExactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImageImport(cmd.Context(), o, args[0], importNodes)
		},
	}
	imp.Flags().StringSliceVar(&importNodes, "node", nil, "node to import on (repeatable or comma separated; default: every Ready node)")
	ls := &cobra.Command{
		Use:   "ls [--node NODE]...",
		Short: "List the images on nodes: NODE IMAGE SIZE",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runImageList(cmd.Context(), o, lsNodes)
		},
	}
	ls.Flags().StringSliceVar(&lsNodes, "node", nil, "node to list (repeatable or comma separated; default: every Ready node)")
	cmd.AddCommand(imp, ls)
	return cmd
}

// imageNodes is the nodes named with --node (deduplicated, in order), or
// every node whose Ready condition is True, by name.
func imageNodes(ctx context.Context, o *cli.Options, named []string) ([]string, error) {
	if len(named) > 0 {
		var out []string
		seen := map[string]bool{}
		for _, n := range named {
			if n == "" {
				return nil, fmt.Errorf("--node: empty node name")
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		return out, nil
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	nodes, _, err := client.For[*v1.Node](c).List(ctx, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		if table.ConditionStatus(n.GetStatus().GetConditions(), "Ready") == "True" {
			out = append(out, n.GetMetadata().GetName())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Ready nodes (of %d): name one with --node", len(nodes))
	}
	sort.Strings(out)
	return out, nil
}

func runImageList(ctx context.Context, o *cli.Options, named []string) error {
	nodes, err := imageNodes(ctx, o, named)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	api := v1.NewNodeAPIClient(c.Conn())
	rows := [][]string{{"NODE", "IMAGE", "SIZE"}}
	failed := false
	for _, n := range nodes {
		resp, err := api.ListImages(ctx, &v1.ListImagesRequest{NodeName: n})
		if err != nil {
			fmt.Fprintf(o.ErrOut, "error: node %s: %v\n", n, apierrors.FromGRPC(err))
			failed = true
			continue
		}
		var nodeRows [][]string
		for _, img := range resp.GetImages() {
			names := img.GetNames()
			if len(names) == 0 {
				names = []string{img.GetId()}
			}
			for _, name := range names {
				nodeRows = append(nodeRows, []string{n, name, humanBytes(img.GetSizeBytes())})
			}
		}
		sort.SliceStable(nodeRows, func(i, j int) bool { return nodeRows[i][1] < nodeRows[j][1] })
		rows = append(rows, nodeRows...)
	}
	if len(rows) > 1 {
		printers.WriteRows(o.Out, rows)
	} else if !failed {
		fmt.Fprintln(o.ErrOut, "No images found")
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

// humanBytes is a size in binary units: 512B, 1.5KiB, 27.3MiB, 1.2GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTP"[exp])
}
