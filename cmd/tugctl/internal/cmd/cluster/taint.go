package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type taintFlags struct {
	nodeArgs
	overwrite bool
}

func newTaintCommand(o *cli.Options) *cobra.Command {
	f := &taintFlags{}
	cmd := &cobra.Command{
		Use:   "taint nodes NODE... KEY[=VALUE]:EFFECT... | KEY[:EFFECT]-...",
		Short: "Add or remove taints on nodes",
		Long: `Add or remove taints on nodes. A taint keeps pods that do not tolerate it
off the node: NoSchedule (not scheduled there), PreferNoSchedule (avoided),
NoExecute (also evicted when already running there).

KEY=VALUE:EFFECT or KEY:EFFECT adds a taint; KEY:EFFECT- removes that one,
KEY- every taint with the key. A taint with the key and effect of one the
node has already changes its value only with --overwrite.`,
		Example: `  tugctl taint nodes node1 dedicated=gpu:NoSchedule
  tugctl taint nodes node1 dedicated:NoSchedule-
  tugctl taint nodes node1 dedicated-
  tugctl taint nodes -l rack=r2 maintenance=true:NoExecute`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTaint(cmd.Context(), o, args, f)
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&f.overwrite, "overwrite", false, "replace the value of a taint the node has with the same key and effect")
	return cmd
}

// taintSpec is one taint argument.
type taintSpec struct {
	key, value, effect string
	remove             bool
}

func (t taintSpec) String() string {
	s := t.key
	if t.value != "" {
		s += "=" + t.value
	}
	if t.effect != "" {
		s += ":" + t.effect
	}
	return s
}

// parseTaint reads KEY[=VALUE]:EFFECT, KEY[:EFFECT]-, naming what is wrong.
func parseTaint(arg string) (taintSpec, error) {
	var t taintSpec
	s := arg
	if strings.HasSuffix(s, "-") {
		t.remove, s = true, strings.TrimSuffix(s, "-")
	}
	kv, effect, hasEffect := strings.Cut(s, ":")
	t.key, t.value, _ = strings.Cut(kv, "=")
	t.effect = effect
	if !t.remove && !hasEffect {
		return t, fmt.Errorf("invalid taint spec: %s: want KEY[=VALUE]:EFFECT to add, KEY[:EFFECT]- to remove", arg)
	}
	if err := labels.ValidateKey(t.key); err != nil {
		return t, fmt.Errorf("invalid taint spec: %s: key: %v", arg, err)
	}
	if t.value != "" {
		if err := labels.ValidateValue(t.value); err != nil {
			return t, fmt.Errorf("invalid taint spec: %s: value: %v", arg, err)
		}
	}
	switch t.effect {
	case "NoSchedule", "PreferNoSchedule", "NoExecute":
	case "":
		if !t.remove {
			return t, fmt.Errorf("invalid taint spec: %s: an effect is required to add a taint", arg)
		}
	default:
		return t, fmt.Errorf("invalid taint effect: %s, unsupported taint effect (want NoSchedule, PreferNoSchedule or NoExecute)", t.effect)
	}
	return t, nil
}

// taintArgs splits "nodes NODE... TAINT..." into node names and taints: the
// taints are the arguments with ":" or "=", or a trailing "-".
func taintArgs(args []string) ([]string, []taintSpec, error) {
	if len(args) == 0 {
		return nil, nil, fmt.Errorf("want taint nodes NODE... TAINT...")
	}
	var names []string
	first := args[0]
	rest := args[1:]
	if k, name, ok := strings.Cut(first, "/"); ok {
		if !isNodeKind(k) {
			return nil, nil, fmt.Errorf("taint: only nodes have taints, not %q", k)
		}
		names = append(names, name)
	} else if !isNodeKind(first) {
		return nil, nil, fmt.Errorf("taint: only nodes have taints, not %q (tugctl taint nodes NODE TAINT)", first)
	}
	var taints []taintSpec
	for _, a := range rest {
		if strings.ContainsAny(a, ":=") || strings.HasSuffix(a, "-") {
			t, err := parseTaint(a)
			if err != nil {
				return nil, nil, err
			}
			taints = append(taints, t)
			continue
		}
		if len(taints) > 0 {
			return nil, nil, fmt.Errorf("taint: %q: node names come before the taints", a)
		}
		names = append(names, trimKind(a))
	}
	if len(taints) == 0 {
		return nil, nil, fmt.Errorf("taint: at least one taint to add or remove: KEY=VALUE:EFFECT or KEY-")
	}
	seen := map[string]bool{}
	for _, t := range taints {
		if !t.remove {
			id := t.key + ":" + t.effect
			if seen[id] {
				return nil, nil, fmt.Errorf("taint: %s given twice", id)
			}
			seen[id] = true
		}
	}
	return names, taints, nil
}

func isNodeKind(s string) bool {
	switch strings.ToLower(s) {
	case "node", "nodes", "no":
		return true
	}
	return false
}

func runTaint(ctx context.Context, o *cli.Options, args []string, f *taintFlags) error {
	names, taints, err := taintArgs(args)
	if err != nil {
		return err
	}
	nodes, err := f.nodes(ctx, o, names)
	if err != nil {
		return err
	}
	// Check every node first, so a mistake changes nothing.
	for _, n := range nodes {
		if _, _, err := applyTaints(n.GetSpec().GetTaints(), taints, f.overwrite, n.GetMetadata().GetName()); err != nil {
			return err
		}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		name := n.GetMetadata().GetName()
		var result string
		_, err := client.For[*v1.Node](c).Mutate(ctx, "", name, false, func(n *v1.Node) error {
			if n.Spec == nil {
				n.Spec = &v1.NodeSpec{}
			}
			next, r, err := applyTaints(n.Spec.Taints, taints, f.overwrite, name)
			if err != nil {
				return err
			}
			n.Spec.Taints, result = next, r
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "node/%s %s\n", name, result)
	}
	return nil
}

// applyTaints is the node's taints after the change, and what kubectl
// says of it: tainted, untainted or modified (both).
func applyTaints(cur []*v1.Taint, specs []taintSpec, overwrite bool, node string) ([]*v1.Taint, string, error) {
	out := append([]*v1.Taint(nil), cur...)
	added, removed := false, false
	for _, t := range specs {
		if !t.remove {
			continue
		}
		kept := out[:0:0]
		found := false
		for _, have := range out {
			if have.Key == t.key && (t.effect == "" || have.Effect == t.effect) {
				found = true
				continue
			}
			kept = append(kept, have)
		}
		if !found {
			return nil, "", fmt.Errorf("node %s: taint %q not found", node, t.String())
		}
		out, removed = kept, true
	}
	for _, t := range specs {
		if t.remove {
			continue
		}
		nt := &v1.Taint{Key: t.key, Value: t.value, Effect: t.effect}
		if t.effect == "NoExecute" {
			nt.TimeAdded = timestamppb.Now()
		}
		replaced := false
		for i, have := range out {
			if have.Key == t.key && have.Effect == t.effect {
				if !overwrite {
					return nil, "", fmt.Errorf("node %s already has %s taint(s) with same effect(s) and --overwrite is false", node, t.key)
				}
				out[i], replaced = nt, true
			}
		}
		if !replaced {
			out = append(out, nt)
		}
		added = true
	}
	switch {
	case added && removed:
		return out, "modified", nil
	case removed:
		return out, "untainted", nil
	}
	return out, "tainted", nil
}
