package cluster

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// nodeArgs are how cordon, uncordon, drain and taint name nodes: NODE...
// (node/NAME too), or -l SELECTOR, or (taint) --all.
type nodeArgs struct {
	selector string
	all      bool
}

func (a *nodeArgs) register(cmd *cobra.Command, withAll bool) {
	cmd.Flags().StringVarP(&a.selector, "selector", "l", "", "the nodes with these labels, e.g. -l tier=gpu")
	if withAll {
		cmd.Flags().BoolVar(&a.all, "all", false, "every node")
	}
}

// nodes reads the nodes named by names or the flags; a missing named node
// is an error naming it.
func (a *nodeArgs) nodes(ctx context.Context, o *cli.Options, names []string) ([]*v1.Node, error) {
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	api := client.For[*v1.Node](c)
	switch {
	case len(names) > 0 && (a.selector != "" || a.all):
		return nil, fmt.Errorf("name nodes or use -l/--all, not both")
	case len(names) == 0 && a.selector == "" && !a.all:
		return nil, fmt.Errorf("name the node(s): NODE... or -l SELECTOR")
	case len(names) == 0:
		nodes, _, err := api.List(ctx, client.ListOptions{LabelSelector: a.selector})
		if err != nil {
			return nil, err
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("no nodes match -l %q", a.selector)
		}
		return nodes, nil
	}
	var out []*v1.Node
	for _, n := range names {
		n = trimKind(n)
		node, err := api.Get(ctx, "", n)
		if err != nil {
			return nil, err
		}
		out = append(out, node)
	}
	return out, nil
}

// trimKind drops a node/ (no/, nodes/) prefix.
func trimKind(name string) string {
	for _, p := range []string{"node/", "nodes/", "no/"} {
		if len(name) > len(p) && name[:len(p)] == p {
			return name[len(p):]
		}
	}
	return name
}

func newCordonCommand(o *cli.Options, cordon bool) *cobra.Command {
	a := &nodeArgs{}
	verb, done, short := "cordon", "cordoned", "Mark nodes unschedulable: new pods are not placed there"
	if !cordon {
		verb, done, short = "uncordon", "uncordoned", "Mark nodes schedulable again"
	}
	cmd := &cobra.Command{
		Use:     verb + " NODE... | -l SELECTOR",
		Short:   short,
		Example: "  tugctl " + verb + " node1\n  tugctl " + verb + " -l rack=r2",
		RunE: func(cmd *cobra.Command, args []string) error {
			nodes, err := a.nodes(cmd.Context(), o, args)
			if err != nil {
				return err
			}
			for _, n := range nodes {
				changed, err := setUnschedulable(cmd.Context(), o, n.GetMetadata().GetName(), cordon)
				if err != nil {
					return err
				}
				if changed {
					fmt.Fprintf(o.Out, "node/%s %s\n", n.GetMetadata().GetName(), done)
				} else {
					fmt.Fprintf(o.Out, "node/%s already %s\n", n.GetMetadata().GetName(), done)
				}
			}
			return nil
		},
	}
	a.register(cmd, false)
	return cmd
}

// setUnschedulable sets the node's spec.unschedulable (read-modify-write
// with conflict retry) and reports whether it changed.
func setUnschedulable(ctx context.Context, o *cli.Options, name string, on bool) (bool, error) {
	c, err := o.Client()
	if err != nil {
		return false, err
	}
	changed := false
	_, err = client.For[*v1.Node](c).Mutate(ctx, "", name, false, func(n *v1.Node) error {
		if n.Spec == nil {
			n.Spec = &v1.NodeSpec{}
		}
		changed = n.Spec.Unschedulable != on
		n.Spec.Unschedulable = on
		return nil
	})
	return changed, err
}
