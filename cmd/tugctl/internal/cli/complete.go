package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
)

// CompleteObjects is the shell completion of KIND NAME... and KIND/NAME
// arguments (get, describe, delete, wait, ...): kind names first, then the
// names of that kind's objects, read from the cluster (in the namespace of
// the command line's -n, or the context's).
func (o *Options) CompleteObjects(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		if kind, prefix, ok := strings.Cut(toComplete, "/"); ok {
			k, err := kinds.Lookup(kind)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, n := range o.objectNames(cmd, k, prefix) {
				out = append(out, kind+"/"+n)
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, k := range kinds.All() {
			if strings.HasPrefix(k.Plural, toComplete) {
				out = append(out, k.Plural)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	if strings.Contains(args[0], "/") || strings.Contains(args[0], ",") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	k, err := kinds.Lookup(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.objectNames(cmd, k, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// CompletePods completes a POD argument (logs, exec, port-forward): the
// names of the pods, read from the cluster.
func (o *Options) CompletePods(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	k, _ := kinds.Lookup("Pod")
	return o.objectNames(cmd, k, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// objectNames lists the names of kind k's objects that start with prefix;
// nothing when the cluster cannot be asked (completion never fails loudly).
func (o *Options) objectNames(cmd *cobra.Command, k *kinds.Kind, prefix string) []string {
	c, err := o.Client()
	if err != nil {
		return nil
	}
	ns, err := o.ListNamespace(k)
	if err != nil {
		return nil
	}
	objs, _, err := client.ForKind(c, k).List(cmd.Context(), client.ListOptions{Namespace: ns})
	if err != nil {
		return nil
	}
	var out []string
	for _, obj := range objs {
		if n := obj.GetMetadata().GetName(); strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
