package troubleshoot

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/describe"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type describeFlags struct {
	selector   string
	showEvents bool
}

func newDescribeCommand(o *cli.Options) *cobra.Command {
	f := &describeFlags{}
	cmd := &cobra.Command{
		Use:   "describe KIND [NAME...] | KIND/NAME...",
		Short: "Show details of objects, with their events",
		Example: `  tugctl describe pod nginx
  tugctl describe deploy/nginx
  tugctl describe nodes`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDescribe(cmd.Context(), o, args, f)
		},
	}
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "describe the objects matching this label selector")
	cmd.Flags().BoolVar(&f.showEvents, "show-events", true, "list the events about each object")
	return cmd
}

func runDescribe(ctx context.Context, o *cli.Options, args []string, f *describeFlags) error {
	ra, err := cli.ParseResourceArgs(args)
	if err != nil {
		return err
	}
	var objs []v1.Object
	failed := false
	if ra.Named() {
		groups, missing, err := o.GetNamed(ctx, ra.Refs)
		if err != nil {
			return err
		}
		failed = missing
		for _, g := range groups {
			objs = append(objs, g.Objs...)
		}
	} else {
		groups, err := o.List(ctx, ra, cli.Selectors{Label: f.selector})
		if err != nil {
			return err
		}
		for _, g := range groups {
			objs = append(objs, g.Objs...)
		}
		if len(objs) == 0 {
			o.NoResources(ra)
		}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	for i, obj := range objs {
		if i > 0 {
			fmt.Fprintln(o.Out)
		}
		k, err := kinds.ForMessage(obj)
		if err != nil {
			return err
		}
		if err := describe.Object(ctx, o.Out, c, obj, f.showEvents); err != nil {
			return fmt.Errorf("describing %s: %w", printers.ObjectName(k, obj), err)
		}
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}
